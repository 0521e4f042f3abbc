#include "collectors/agent/client/sites_collector.h"

#include <time.h>

#include <algorithm>
#include <mutex>
#include <string>

#include "collectors/agent/agent_protocol.h"
#include "collectors/agent/client/agent_sites.h"
#include "collectors/common/file_reader.h"
#include "collectors/procfs/maps.h"
#include "collectors/procfs/proc_stat.h"
#include "collectors/sample.h"

namespace memtrimd::agent {

namespace {

constexpr const char* kBuilderBusy =
    "sites: other targets' sites reads held the node's reader too long";

// A JVM with thousands of mappings has maps of about a megabyte.
constexpr std::size_t kMaxMapsBytes = 16u << 20;

uint64_t MonotonicNowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

Status SitesCollector::TurnOn(const Target& target, std::string& why) {
  AgentFailure failure = AgentFailure::kNone;
  const std::string plain = AGENT_VERB_SAMPLING_ON + std::to_string(options_.period);
  std::string on = plain + " " AGENT_SAMPLING_MAX_RATE + std::to_string(options_.max_rate);
  if (options_.lease_s > 0) on += " " AGENT_SAMPLING_LEASE + std::to_string(options_.lease_s);
  // Java frames are the agent's default: only "off" is said, so an agent
  // before version 7 is asked as before.
  const std::string without_java = on;
  if (!options_.java_frames) on += " " AGENT_SAMPLING_JAVA "0";
  Result<std::string> body = command_(target, on, options_.agent, &failure);
  auto refused_option = [&] {
    return !body.ok() && failure == AgentFailure::kAnswer &&
           body.status().message().find("bad sampling period") != std::string::npos;
  };
  if (refused_option() && on != without_java) {
    // An agent before version 7 knows no java= (and walks no Java frames).
    body = command_(target, without_java, options_.agent, &failure);
  }
  if (refused_option()) {
    // An agent before protocol version 5 knows no options: no lease, no
    // budget (it samples until told "sampling off").
    body = command_(target, plain, options_.agent, &failure);
  }
  if (!body.ok()) {
    if (failure == AgentFailure::kUnreachable) return body.status();
    // The agent's reason: MEMTRIMD_AGENT_SAMPLING=0, no unwinder, an
    // agent from before sampling ("unknown command").
    why = "the agent refused to sample: " + body.status().message();
    return Status::Ok();
  }
  Result<SamplingStarted> started = ParseSamplingStarted(*body);
  if (!started.ok()) return started.status();
  if (options_.turned_on) options_.turned_on->TurnedOn(target);
  return Status::Ok();
}

Status SitesCollector::Collect(const Target& target, TargetSample& out) {
  const bool jvm = target.runtime == Runtime::kJvm;
  // The load's outcome before the maps: a load that ends between the two
  // is then seen in the maps.
  std::optional<jvm::AgentLoadOutcome> load;
  if (jvm && options_.agent_loads) load = options_.agent_loads->Recorded(target.Key());
  if (!HasAgent(target)) {
    if (jvm && options_.agent_loads && !load) {
      // The jvm collector loads it on its own thread: not done yet.
      out.sites_loading = true;
      out.sites_missing =
          "libmemtrimd_agent.so is being loaded into this JVM (--jvm.load-agent); its allocation "
          "sites follow";
    } else if (load && !load->Loaded()) {
      out.sites_missing =
          "libmemtrimd_agent.so is not loaded: memtrimd's load of it: " + load->text;
    } else if (target.runtime == Runtime::kUnknown && !target.still_loading) {
      // No C library mapped: a static executable (glibc's, musl's, Go's),
      // which has no dynamic loader to preload the agent and no GOT.
      out.sites_missing =
          "not sampled: a static executable (no C library mapped): LD_PRELOAD cannot load "
          "libmemtrimd_agent.so into it, and it calls its allocator without a GOT";
    } else {
      out.sites_missing = jvm ? "libmemtrimd_agent.so is not loaded (--jvm.load-agent loads it)"
                              : "libmemtrimd_agent.so is not loaded (LD_PRELOAD)";
    }
    return Status::Ok();
  }
  if (!options_.budget) return ReadAndBuild(target, out, nullptr);
  // Each of the (at most three) commands has its own deadline: a target
  // that answers slowly holds the others' reads this long at most.
  std::unique_lock<std::timed_mutex> one_at_a_time(options_.budget->builder(), std::defer_lock);
  if (!one_at_a_time.try_lock_for(options_.agent.timeout * 4)) {
    return Status(ErrorCode::kUnavailable, kBuilderBusy);
  }
  return ReadAndBuild(target, out, &one_at_a_time);
}

std::shared_ptr<const SiteProfile> SitesCollector::Fit(const Target& target,
                                                       const AgentSites& sites,
                                                       std::span<const procfs::MapsEntry> maps,
                                                       symbols::ElfSource& source, uint64_t mono,
                                                       std::chrono::system_clock::time_point now,
                                                       uint64_t main_code, std::string& why) {
  auto build = [&](std::size_t max_stacks) {
    auto p = std::make_shared<SiteProfile>(
        BuildSiteProfile(sites, maps, source, max_stacks, mono, now, main_code));
    if (target.allocator_source.ends_with(" linked into the executable")) {
      p->linked_allocator = target.allocator_source;
    }
    return p;
  };
  std::shared_ptr<SiteProfile> p = build(options_.max_stacks);
  if (!options_.budget) return p;
  SitesBudget& budget = *options_.budget;
  const std::size_t wanted = p->stacks.size();
  // A profile's bytes grow about as its stacks do: each try scales the
  // count down by how far the last one was over, and gives up at none.
  for (int attempt = 0; attempt < 4; ++attempt) {
    const std::size_t bytes = p->MemoryBytes() + kSiteHistoryBytes;
    const std::size_t room = budget.AvailableFor(target.Key());
    if (bytes <= room) {
      if (auto charge = budget.Charge(target.Key(), bytes)) {
        p->charge = std::move(charge);
        p->budget_cut_stacks = wanted - p->stacks.size();
        if (p->budget_cut_stacks > 0) budget.CountDroppedStacks(p->budget_cut_stacks);
        return p;
      }
    }
    if (p->stacks.empty() || room <= kSiteHistoryBytes) break;
    const double scale = static_cast<double>(room - kSiteHistoryBytes) /
                         static_cast<double>(bytes - kSiteHistoryBytes);
    const auto fewer =
        static_cast<std::size_t>(static_cast<double>(p->stacks.size()) * scale * 0.9);
    if (fewer == 0) break;
    p = build(std::min(fewer, p->stacks.size() - 1));
  }
  budget.CountDroppedTarget();
  if (wanted > 0) budget.CountDroppedStacks(wanted);
  why = "not kept: over the node's sites memory budget (--sites.memory-budget=" +
        std::to_string(budget.limit_bytes() >> 20) + "MiB, at most " +
        std::to_string(budget.TargetShare() >> 10) + " KiB a target; " +
        std::to_string(budget.AvailableFor(target.Key()) >> 10) + " KiB left for this one)";
  return nullptr;
}

Result<std::string> SitesCollector::ReadSites(const Target& target, AgentFailure& failure) {
  Result<std::string> body = command_(target, AGENT_VERB_SITES_LIVE, options_.agent, &failure);
  if (!body.ok() && failure == AgentFailure::kAnswer &&
      body.status().message().find("unknown command") != std::string::npos) {
    body = command_(target, AGENT_VERB_SITES, options_.agent, &failure);
  }
  return body;
}

void SitesCollector::AddResident(const Target& target, AgentSites& sites) {
  if (!sites.has_live) {
    sites.resident = SiteResident{};
    sites.resident.why = kResidentOldAgent;
    return;
  }
  Result<std::unique_ptr<procfs::PageResidency>> pages = options_.open_pages(target.proc_dir);
  if (!pages.ok()) {
    sites.resident = SiteResident{};
    sites.resident.why = "the target's pagemap could not be opened: " + pages.status().message();
    return;
  }
  EstimateResident(sites, **pages, options_.resident);
}

Status SitesCollector::ReadAndBuild(const Target& target, TargetSample& out,
                                    std::unique_lock<std::timed_mutex>* builder) {
  AgentFailure failure = AgentFailure::kNone;
  Result<std::string> body = ReadSites(target, failure);
  Result<AgentSites> sites = Status(ErrorCode::kUnavailable, "");
  if (body.ok()) {
    sites = ParseAgentSites(*body);
    if (!sites.ok()) return sites.status();
  } else if (failure == AgentFailure::kUnreachable) {
    out.sites_missing = "agent unreachable: " + body.status().message();
    return body.status();
  }
  // Not on (a fresh agent, or turned off by someone else), on at another
  // period, or an agent that does not know "sites": turn it on.
  const bool running = sites.ok() && sites->on;
  if (!options_.turn_on && !running) {
    out.sites_missing = sites.ok()
                            ? "allocation sampling is off in this program (a memtrimd with "
                              "--collector.sites turns it on; allocations from before "
                              "that are not seen)"
                            : "the agent did not answer \"sites\": " + body.status().message() +
                                  " (an agent from before allocation sampling?)";
    return Status::Ok();
  }
  // The period asked for, not the one in force: the budget may have raised
  // that. The budget and the lease are said again with each "on" (the same
  // period: nothing reset).
  // (An agent before version 5 sends no lease_s: only its period counts.)
  const bool old_agent = sites.ok() && sites->lease_s == 0;
  const bool same = running && sites->base_period == options_.period &&
                    (old_agent || (sites->max_rate == options_.max_rate &&
                                   (options_.lease_s == 0 || sites->lease_s == options_.lease_s)));
  if (options_.turn_on && running && same && options_.turned_on) {
    options_.turned_on->TurnedOn(target);  // on since a previous memtrimd: ours to stop now
  }
  if (options_.turn_on && !same) {
    std::string why;
    Status st = TurnOn(target, why);
    if (!st.ok()) {
      out.sites_missing = "agent unreachable: " + st.message();
      return st;
    }
    if (!why.empty()) {
      out.sites_missing = std::move(why);
      return Status::Ok();
    }
    body = ReadSites(target, failure);
    if (!body.ok()) {
      out.sites_missing = "the agent did not answer \"sites\": " + body.status().message();
      return body.status();
    }
    sites = ParseAgentSites(*body);
    if (!sites.ok()) return sites.status();
  }
  body = Status(ErrorCode::kUnavailable, "");  // the text is parsed: let it go
  // The reads of the target's memory map (pagemap, maps, stat) wait while
  // its mmap lock is held, for good when the target holds it on a read no
  // one answers (a FUSE file behind its own mapping). Not with the node's
  // builder held: such a target then holds only its own read (this thread
  // and its parsed answer), never every other target's sites.
  if (builder != nullptr) builder->unlock();
  // The pages right after the answer, while the ranges are still those
  // allocations (the agent's answer is its own: a range it lies about only
  // reads the target's own pagemap).
  AddResident(target, *sites);
  const uint64_t mono = MonotonicNowNs();
  const auto now = std::chrono::system_clock::now();
  // The maps right after the answer: every address of a live allocation's
  // stack is in code still mapped (a library unloaded since is [unknown]).
  Result<std::string> maps_text = ReadSmallFile(target.proc_dir + "/maps", kMaxMapsBytes);
  if (!maps_text.ok()) return maps_text.status();
  Result<std::vector<procfs::MapsEntry>> maps = procfs::ParseMaps(*maps_text);
  if (!maps.ok()) return maps.status();
  if (!options_.symbol_cache) return Status(ErrorCode::kInternal, "sites: no symbol cache");
  // Where the program's own code starts: its mapping leads the profile.
  // Without it (not readable) the profile is only ordered otherwise.
  uint64_t main_code = 0;
  Result<std::string> stat_text = ReadSmallFile(target.proc_dir + "/stat");
  if (stat_text.ok()) {
    Result<procfs::ProcStat> stat = procfs::ParseProcStat(*stat_text);
    if (stat.ok()) main_code = stat->start_code;
  }
  symbols::TargetElfSource source(target, *options_.symbol_cache);
  // Every file the profile will name opened now: map_files waits on the
  // mmap lock too. (A frame is looked up a byte before its return address.)
  std::vector<uint64_t> addresses;
  if (main_code != 0) addresses.push_back(main_code);
  for (const AgentStack& stack : sites->stacks) {
    for (uint64_t pc : stack.pcs) {
      addresses.push_back(pc);
      if (pc > 0) addresses.push_back(pc - 1);
    }
  }
  source.OpenAhead(addresses, *maps);
  addresses = {};
  if (builder != nullptr && !builder->try_lock_for(options_.agent.timeout * 4)) {
    return Status(ErrorCode::kUnavailable, kBuilderBusy);
  }
  std::string why;
  out.sites = Fit(target, *sites, *maps, source, mono, now, main_code, why);
  out.sites_missing = std::move(why);
  return Status::Ok();
}

}  // namespace memtrimd::agent

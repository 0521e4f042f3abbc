#include "collectors/agent/client/sites_collector.h"

#include <time.h>

#include <string>

#include "collectors/agent/agent_protocol.h"
#include "collectors/agent/client/agent_sites.h"
#include "collectors/common/file_reader.h"
#include "collectors/procfs/maps.h"
#include "collectors/sample.h"

namespace memtrimd::agent {

namespace {

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
  Result<std::string> body = command_(target, on, options_.agent, &failure);
  if (!body.ok() && failure == AgentFailure::kAnswer &&
      body.status().message().find("bad sampling period") != std::string::npos) {
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
  if (!HasAgent(target)) {
    out.sites_missing = target.runtime == Runtime::kJvm
                            ? "libmemtrimd_agent.so is not loaded (--jvm.load-agent loads it)"
                            : "libmemtrimd_agent.so is not loaded (LD_PRELOAD)";
    return Status::Ok();
  }
  AgentFailure failure = AgentFailure::kNone;
  Result<std::string> body = command_(target, AGENT_VERB_SITES, options_.agent, &failure);
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
    body = command_(target, AGENT_VERB_SITES, options_.agent, &failure);
    if (!body.ok()) {
      out.sites_missing = "the agent did not answer \"sites\": " + body.status().message();
      return body.status();
    }
    sites = ParseAgentSites(*body);
    if (!sites.ok()) return sites.status();
  }
  const uint64_t mono = MonotonicNowNs();
  const auto now = std::chrono::system_clock::now();
  // The maps right after the answer: every address of a live allocation's
  // stack is in code still mapped (a library unloaded since is [unknown]).
  Result<std::string> maps_text = ReadSmallFile(target.proc_dir + "/maps", kMaxMapsBytes);
  if (!maps_text.ok()) return maps_text.status();
  Result<std::vector<procfs::MapsEntry>> maps = procfs::ParseMaps(*maps_text);
  if (!maps.ok()) return maps.status();
  if (!options_.symbol_cache) return Status(ErrorCode::kInternal, "sites: no symbol cache");
  symbols::TargetElfSource source(target, *options_.symbol_cache);
  out.sites = std::make_shared<const SiteProfile>(
      BuildSiteProfile(std::move(sites).value(), *maps, source, options_.max_stacks, mono, now));
  out.sites_missing.clear();
  return Status::Ok();
}

}  // namespace memtrimd::agent

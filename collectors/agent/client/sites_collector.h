// Collector "sites" (off unless --collector.sites): turns the agent's
// allocation sampler on in a target with libmemtrimd_agent.so loaded, and
// every --sites.interval reads the live sampled allocations by stack,
// names them outside the target (/proc/<pid>/maps and the ELF files it
// maps, through a symbol cache every target shares) and keeps the largest
// stacks. A target started with MEMTRIMD_AGENT_SAMPLING=0 refuses, and says
// so in sites_missing; so does an agent too old to sample.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>

#include "collectors/agent/client/agent_client.h"
#include "collectors/agent/client/sampler_record.h"
#include "collectors/agent/client/site_profile.h"
#include "collectors/agent/client/site_resident.h"
#include "collectors/agent/client/sites_budget.h"
#include "collectors/common/collector.h"
#include "collectors/jvm/agent_load_record.h"
#include "collectors/procfs/maps.h"
#include "collectors/procfs/pagemap.h"
#include "collectors/symbols/target_elf.h"

namespace memtrimd::agent {

struct SitesOptions {
  uint64_t period = 512u << 10;  // mean bytes between samples
  // Samples a second the agent may take at most (it raises the period past
  // that); 0: no bound.
  uint64_t max_rate = 10000;
  // In a JVM, Java frames above the native ones (agent version 7); false
  // asks the agent for native frames only ("java=0").
  bool java_frames = true;
  // Seconds the agent keeps sampling without a read of its sites (each read
  // renews it); 0: the agent's default.
  uint64_t lease_s = 0;
  // Where the targets turned on are recorded, for the clean stop; optional.
  std::shared_ptr<SamplerRecord> turned_on;
  std::size_t max_stacks = 256;  // stacks kept per target; the rest are summed
  AgentOptions agent;
  // Shared by every target (made where the program starts); required.
  std::shared_ptr<symbols::SymbolCache> symbol_cache;
  // The node's budget for all sites data (every target's collector shares
  // it); null: none (inspect, one target).
  std::shared_ptr<SitesBudget> budget;
  // False: only read; a sampler that is off stays off (inspect --sites).
  bool turn_on = true;
  // Set when memtrimd loads its agent into JVMs (--jvm.load-agent): what
  // those loads gave, so that a JVM being loaded into is said to be so,
  // and one whose load failed says why.
  std::shared_ptr<const jvm::AgentLoadRecord> agent_loads;
  // The resident pass's bounds (site_resident.h), and how the target's
  // pagemap is opened (tests give a recording).
  ResidentOptions resident;
  procfs::PageResidencyOpener open_pages = procfs::OpenPagemap;
};

class SitesCollector : public Collector {
 public:
  explicit SitesCollector(SitesOptions options, AgentCommander command = AgentCommand)
      : options_(std::move(options)), command_(std::move(command)) {}
  std::string_view Name() const override { return "sites"; }
  Status Collect(const Target& target, TargetSample& out) override;

 private:
  // "sampling on <period> lease=<s> max_rate=<n>"; the reason in `why` when
  // the agent refuses.
  Status TurnOn(const Target& target, std::string& why);
  // `builder`: the node's one-build-at-a-time lock, held on entry (null
  // without a budget); let go while the target's own memory map is read.
  Status ReadAndBuild(const Target& target, TargetSample& out,
                      std::unique_lock<std::timed_mutex>* builder);
  // "sites live", or "sites" from an agent that does not know it (before
  // version 6: its answer then has no live lines).
  Result<std::string> ReadSites(const Target& target, AgentFailure& failure);
  // Each stack's resident bytes from the target's pagemap, or why not.
  void AddResident(const Target& target, AgentSites& sites);
  // The profile of `sites` within the budget's room for the target: fewer
  // stacks when the largest do not fit, null when none do.
  std::shared_ptr<const SiteProfile> Fit(const Target& target, const AgentSites& sites,
                                         std::span<const procfs::MapsEntry> maps,
                                         symbols::ElfSource& source, uint64_t mono,
                                         std::chrono::system_clock::time_point now,
                                         uint64_t main_code, std::string& why);

  SitesOptions options_;
  AgentCommander command_;
};

}  // namespace memtrimd::agent

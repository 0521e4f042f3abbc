// Every collector, declared once: its name (the `collector` label and the
// --collector.<name> flag), whether it is on by default, its flag help, how
// often it runs, whether it talks to the target over a socket (and so runs on
// a thread of its own), which collector's part it reads, which targets it
// applies to, how to make one, and how its part of a sample is carried over
// when it is not due. Flags, the collector set and the scheduler read this
// table; adding a collector is a row here plus the collector's own folder.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "collectors/agent/client/sampler_record.h"
#include "collectors/agent/client/sites_budget.h"
#include "collectors/common/collector.h"
#include "collectors/common/target.h"
#include "collectors/jvm/agent_load_record.h"
#include "collectors/jvm/signal_record.h"
#include "collectors/symbols/target_elf.h"

namespace memtrimd {

struct TargetSample;

// What the collectors are made with: one struct for every entry point (the
// daemon, inspect), not copied field by field.
struct CollectorOptions {
  std::chrono::milliseconds smaps_interval{60000};
  std::chrono::milliseconds jvm_interval{60000};
  std::chrono::milliseconds jvm_command_timeout{5000};
  // --jvm.load-agent: load memtrimd's agent into each JVM (jvm/agent_load.h);
  // --jvm.agent-path: from this path as the JVM sees it, instead of a copy.
  bool jvm_load_agent = false;
  std::string jvm_agent_path;
  // What every target's collectors remember per JVM instance: the JVMs
  // signalled in vain, and the agent loads. One each per process (main makes
  // them); an options struct made elsewhere starts with its own.
  std::shared_ptr<jvm::SignalRecord> signal_record = std::make_shared<jvm::SignalRecord>();
  std::shared_ptr<jvm::AgentLoadRecord> agent_loads = std::make_shared<jvm::AgentLoadRecord>();
  uint64_t glibc_heap_size = 64ull << 20;
  bool glibc_confirm_heaps = true;
  std::optional<uint64_t> memory_limit_fallback;
  // The sites collector (--collector.sites): --sites.interval, --sites.period,
  // --sites.max-stacks, and the symbol tables every target's sites share.
  std::chrono::milliseconds sites_interval{30000};
  uint64_t sites_period = 512u << 10;
  std::size_t sites_max_stacks = 256;
  std::size_t sites_top = 5;  // rows of memtrimd_native_site_* per target, plus "other"
  // Off for inspect: it reads what a daemon's sampler gathered, and leaves a
  // sampler that is off alone.
  bool sites_turn_on = true;
  // --sites.max-rate: samples a second each target's sampler may take.
  uint64_t sites_max_rate = 10000;
  bool sites_java_frames = true;  // Java frames in a JVM's sampled stacks
  // The daemon without --collector.sites: the agent collector turns off a
  // sampler it finds on (not inspect, which only looks).
  bool sites_stop_others = false;
  // The targets the sites collector turned sampling on in (main turns them
  // off at a clean stop); nullptr: not recorded.
  std::shared_ptr<agent::SamplerRecord> sampler_record;
  std::shared_ptr<symbols::SymbolCache> symbol_cache;
  // --sites.memory-budget: all targets' sites data and the symbol cache's
  // cap together; `sites_budget` keeps the account (made in main beside
  // the symbol cache, whose cap it is given; null: no budget).
  uint64_t sites_memory_budget = agent::kDefaultSitesBudgetBytes;
  std::shared_ptr<agent::SitesBudget> sites_budget;
};

// Which collectors the flags switched on, by name; a name not in the map
// takes its declared default.
using CollectorSwitches = std::map<std::string, bool, std::less<>>;

struct CollectorDecl {
  enum class Every { kSample, kSmaps, kJvm, kSites };

  const char* name;
  bool default_on;
  const char* help;  // the flag's help
  Every every;
  // Talks to the target over a socket, so a stopped or hung target makes it
  // wait out deadlines: the daemon runs it on a thread of its own.
  bool own_thread;
  // The collector whose part of the sample this one reads (it runs after it
  // in a sample), or "".
  const char* needs;
  // Whether it has anything to read in this target; nullptr: every target.
  bool (*applies)(const Target& target);
  std::shared_ptr<Collector> (*make)(const CollectorOptions& options);
  // Copies this collector's part from an earlier sample (not due now).
  void (*carry)(const TargetSample& from, TargetSample& to);

  std::chrono::milliseconds Interval(const CollectorOptions& o) const;
};

// In run order: a collector comes after the one it `needs`.
std::span<const CollectorDecl> CollectorRegistry();
const CollectorDecl* FindCollector(std::string_view name);
bool CollectorEnabled(const CollectorSwitches& switches, const CollectorDecl& decl);

}  // namespace memtrimd

#include "daemon/sampling/collector_registry.h"

#include <algorithm>

#include "collectors/agent/client/agent_client.h"
#include "collectors/agent/client/agent_collector.h"
#include "collectors/agent/client/sites_collector.h"
#include "collectors/cgroup/cgroup_collector.h"
#include "collectors/glibc/glibc_heap_collector.h"
#include "collectors/jvm/jvm_collector.h"
#include "collectors/procfs/process_collector.h"
#include "collectors/sample.h"

namespace memtrimd {
namespace {

bool IsJvm(const Target& t) { return t.runtime == Runtime::kJvm; }

// In a JVM without the agent the agent collector still has something to say
// (why the buffer pools are missing), and it costs one maps read.
bool MayHaveAgent(const Target& t) { return t.runtime == Runtime::kJvm || agent::HasAgent(t); }

const CollectorDecl kCollectors[] = {
    {"process", true, "Read /proc/<pid>/status every sample", CollectorDecl::Every::kSample, false,
     "", nullptr,
     [](const CollectorOptions&) -> std::shared_ptr<Collector> {
       return std::make_shared<procfs::ProcessCollector>();
     },
     [](const TargetSample& from, TargetSample& to) { to.process = from.process; }},
    {"cgroup", true, "Read the target's cgroup memory limit, usage and OOM kills",
     CollectorDecl::Every::kSample, false, "", nullptr,
     [](const CollectorOptions& o) -> std::shared_ptr<Collector> {
       return std::make_shared<cgroup::CgroupCollector>(o.memory_limit_fallback);
     },
     [](const TargetSample& from, TargetSample& to) { to.cgroup = from.cgroup; }},
    // hsperfdata is a file read, or without the file one process_vm_readv
    // of the JVM's perf memory: no socket, no waiting on the target.
    {"hsperfdata", true,
     "Read a JVM target's hsperfdata file (heap committed and used, GC counters) every "
     "sample, or the same counters from its memory when it has no file",
     CollectorDecl::Every::kSample, false, "", IsJvm,
     [](const CollectorOptions&) -> std::shared_ptr<Collector> {
       return std::make_shared<jvm::JvmPerfCollector>();
     },
     [](const TargetSample& from, TargetSample& to) { to.jvm_perf = from.jvm_perf; }},
    {"agent", true,
     "For a program with libmemtrimd_agent.so loaded: glibc malloc_info through the agent "
     "every --smaps.interval",
     CollectorDecl::Every::kSmaps, true, "", MayHaveAgent,
     [](const CollectorOptions& o) -> std::shared_ptr<Collector> {
       agent::AgentOptions a;
       a.timeout = o.jvm_command_timeout;
       auto c = std::make_shared<agent::AgentMallocCollector>(a);
       if (o.jvm_load_agent) c->ReadAgentLoads(o.agent_loads);
       c->StopOthersSampling(o.sites_stop_others);
       return c;
     },
     [](const TargetSample& from, TargetSample& to) {
       to.agent_loaded = from.agent_loaded;
       to.agent_unreachable = from.agent_unreachable;
       to.agent_unreachable_cause = from.agent_unreachable_cause;
       to.sampler = from.sampler;
       to.jvm_buffers = from.jvm_buffers;
       to.jvm_buffers_missing = from.jvm_buffers_missing;
       // The allocator's own figures come only from here: without them the
       // allocator metrics, free_kept_high and allocator_free never appear.
       to.allocator = from.allocator;
       to.allocator_missing = from.allocator_missing;
       if (from.malloc && from.malloc->source == MallocSource::kAgent) to.malloc = from.malloc;
     }},
    // After the agent: when the jvm collector runs it writes fresh malloc
    // statistics that the agent's carried-over part must not overwrite.
    {"jvm", true,
     "Ask a JVM target for NMT, heap, flags and malloc statistics through its attach socket "
     "every --jvm.interval",
     CollectorDecl::Every::kJvm, true, "agent", IsJvm,
     [](const CollectorOptions& o) -> std::shared_ptr<Collector> {
       jvm::AttachOptions a;
       a.command_timeout = o.jvm_command_timeout;
       if (o.signal_record) a.signal_record = o.signal_record;
       auto c = std::make_shared<jvm::JvmAttachCollector>(a);
       if (o.jvm_load_agent) {
         jvm::AgentLoadOptions load;
         load.jvm_path = o.jvm_agent_path;
         load.attach = a;
         c->LoadAgent(std::move(load), o.agent_loads);
       }
       return c;
     },
     [](const TargetSample& from, TargetSample& to) {
       to.jvm = from.jvm;
       if (from.malloc && from.malloc->source == MallocSource::kJvm) to.malloc = from.malloc;
     }},
    // Off unless asked: it turns the agent's allocation sampler on.
    {"sites", false,
     "For a program with libmemtrimd_agent.so loaded: turn its allocation sampler on and read "
     "the sampled live allocations by stack every --sites.interval. memtrimd turns it off "
     "again when it stops, and the agent turns itself off when no memtrimd read it for 4 "
     "intervals (at least a minute); a memtrimd without it turns off a sampler it finds on",
     CollectorDecl::Every::kSites, true, "", MayHaveAgent,
     [](const CollectorOptions& o) -> std::shared_ptr<Collector> {
       agent::SitesOptions s;
       s.period = o.sites_period;
       s.max_rate = o.sites_max_rate;
       s.java_frames = o.sites_java_frames;
       // A few reads' worth, so a slow read or two never ends it: 4 intervals,
       // at least a minute.
       s.lease_s = std::max<uint64_t>(
           60, 4 * static_cast<uint64_t>(
                       std::chrono::ceil<std::chrono::seconds>(o.sites_interval).count()));
       s.turned_on = o.sampler_record;
       s.max_stacks = o.sites_max_stacks;
       s.agent.timeout = o.jvm_command_timeout;
       s.symbol_cache = o.symbol_cache;
       s.budget = o.sites_budget;
       s.turn_on = o.sites_turn_on;
       if (o.jvm_load_agent) s.agent_loads = o.agent_loads;
       return std::make_shared<agent::SitesCollector>(std::move(s));
     },
     [](const TargetSample& from, TargetSample& to) {
       to.sites = from.sites;
       to.sites_missing = from.sites_missing;
       to.sites_loading = from.sites_loading;
     }},
    // Last: the smaps read uses the Java heap range the jvm collector found.
    {"glibc", true, "Find glibc arena heaps in /proc/<pid>/smaps every --smaps.interval",
     CollectorDecl::Every::kSmaps, false, "jvm", nullptr,
     [](const CollectorOptions& o) -> std::shared_ptr<Collector> {
       glibc::GlibcHeapOptions g;
       g.heap_size = o.glibc_heap_size;
       g.confirm_with_heap_info = o.glibc_confirm_heaps;
       return std::make_shared<glibc::GlibcHeapCollector>(g);
     },
     [](const TargetSample& from, TargetSample& to) { to.glibc = from.glibc; }},
};

}  // namespace

std::chrono::milliseconds CollectorDecl::Interval(const CollectorOptions& o) const {
  switch (every) {
    case Every::kSmaps:
      return o.smaps_interval;
    case Every::kJvm:
      return o.jvm_interval;
    case Every::kSites:
      return o.sites_interval;
    case Every::kSample:
      break;
  }
  return std::chrono::milliseconds(0);
}

std::span<const CollectorDecl> CollectorRegistry() { return kCollectors; }

const CollectorDecl* FindCollector(std::string_view name) {
  for (const CollectorDecl& d : kCollectors) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

bool CollectorEnabled(const CollectorSwitches& switches, const CollectorDecl& decl) {
  auto it = switches.find(decl.name);
  return it == switches.end() ? decl.default_on : it->second;
}

}  // namespace memtrimd

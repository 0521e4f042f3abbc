// Collector "agent": for a glibc program with libmemtrimd_agent.so loaded,
// malloc_info through the agent, on --smaps.interval (it takes every arena's
// lock, like the JVM's System.native_heap_info). The same MallocStats the
// JVM collector fills, so both feed the same metrics. In a JVM with the agent
// preloaded it also asks jvm_buffers (the buffer pools; see agent_jvm.c); for
// a JVM without it, it says so in jvm_buffers_missing. Does nothing (and
// succeeds) for other programs without the agent.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "collectors/agent/client/agent_client.h"
#include "collectors/common/collector.h"
#include "collectors/jvm/agent_load_record.h"

namespace memtrimd::agent {

class AgentMallocCollector : public Collector {
 public:
  // `command` asks the agent; its socket, unless a recording is replayed
  // (tests/readme).
  explicit AgentMallocCollector(AgentOptions options, AgentCommander command = AgentCommand)
      : options_(options), command_(std::move(command)) {}
  // With --jvm.load-agent: where memtrimd's loads of the agent are recorded,
  // to say why a JVM has none.
  void ReadAgentLoads(std::shared_ptr<const jvm::AgentLoadRecord> loads) {
    loads_ = std::move(loads);
  }
  // Without --collector.sites (in the daemon, not inspect): a sampler found
  // on (a previous memtrimd's, or another's that is gone) is told "sampling
  // off", once per target, so its cost ends now rather than at its lease.
  void StopOthersSampling(bool stop) { stop_sampling_ = stop; }
  std::string_view Name() const override { return "agent"; }
  Status Collect(const Target& target, TargetSample& out) override;

 private:
  AgentOptions options_;
  AgentCommander command_;
  std::shared_ptr<const jvm::AgentLoadRecord> loads_;
  // The temporary buffer cache at the previous read: its growth is one of
  // the threats nio_cache_unbounded looks for.
  std::optional<uint64_t> temp_cache_before_;
  bool stop_sampling_ = false;
  bool sampling_checked_ = false;  // "sampling off" sent, or found off
};

}  // namespace memtrimd::agent

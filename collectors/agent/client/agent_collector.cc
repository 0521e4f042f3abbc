#include "collectors/agent/client/agent_collector.h"

#include "collectors/agent/agent_protocol.h"
#include "collectors/agent/client/agent_ping.h"
#include "collectors/agent/client/jvm_buffers.h"
#include "collectors/jvm/agent_load.h"
#include "collectors/jvm/malloc_info.h"
#include "collectors/procfs/rss_now.h"
#include "collectors/sample.h"

namespace memtrimd::agent {

namespace {

// jvm_buffers through the agent: fills out.jvm_buffers, or says in
// out.jvm_buffers_missing why not. False when the agent is unreachable
// (nothing else will answer either).
bool ReadJvmBuffers(const AgentCommander& command, const Target& target,
                    const AgentOptions& options, TargetSample& out, Status& status) {
  AgentFailure failure = AgentFailure::kNone;
  Result<std::string> body = command(target, AGENT_VERB_JVM_BUFFERS, options, &failure);
  if (!body.ok()) {
    if (failure == AgentFailure::kUnreachable) {
      out.agent_unreachable = body.status().message();
      out.agent_unreachable_cause = body.status().cause();
      out.jvm_buffers_missing = "agent unreachable: " + body.status().message();
      status = body.status();
      return false;
    }
    // The agent answered why not (MEMTRIMD_AGENT_JVM=0, a JDK whose fields
    // differ, a JVM shutting down): a fact about the target, not a failure
    // of this collector.
    out.jvm_buffers_missing = body.status().message();
    return true;
  }
  Result<JvmBuffers> buffers = ParseJvmBuffers(*body);
  if (!buffers.ok()) {
    out.jvm_buffers_missing = buffers.status().message();
    status = buffers.status();
    return true;
  }
  out.jvm_buffers = std::move(buffers).value();
  out.jvm_buffers->read_at = std::chrono::system_clock::now();
  return true;
}

// "allocator" through the agent: fills out.allocator, or says in
// out.allocator_missing why not. False when the agent is unreachable.
bool ReadAllocator(const AgentCommander& command, const Target& target, const AgentOptions& options,
                   TargetSample& out, Status& status) {
  AgentFailure failure = AgentFailure::kNone;
  Result<std::string> body = command(target, AGENT_VERB_ALLOCATOR, options, &failure);
  if (!body.ok()) {
    if (failure == AgentFailure::kUnreachable) {
      out.agent_unreachable = body.status().message();
      out.agent_unreachable_cause = body.status().cause();
      status = body.status();
      return false;
    }
    // An agent from before allocators were known answers "unknown command".
    out.allocator_missing = "the agent did not answer \"allocator\" (" + body.status().message() +
                            "; an older libmemtrimd_agent.so?)";
    return true;
  }
  Result<AllocatorStats> stats = ParseAllocatorStats(*body);
  if (!stats.ok()) {
    out.allocator_missing = stats.status().message();
    status = stats.status();
    return true;
  }
  out.allocator = std::move(stats).value();
  out.allocator->read_at = std::chrono::system_clock::now();
  return true;
}

// "ping": whether the sampler is on (version 5), into out.sampler. Optional:
// an older agent, or a replayed recording without it, leaves it absent.
std::optional<AgentPing> ReadSampler(const AgentCommander& command, const Target& target,
                                     const AgentOptions& options, TargetSample& out) {
  Result<std::string> body = command(target, AGENT_VERB_PING, options, nullptr);
  if (!body.ok()) return std::nullopt;
  Result<AgentPing> ping = ParseAgentPing(*body);
  if (!ping.ok() || !ping->sampling) return std::nullopt;
  SamplerState s;
  s.on = *ping->sampling;
  s.period = ping->period;
  if (s.on && ping->lease_left_ms > 0) {
    s.lease_until =
        std::chrono::system_clock::now() + std::chrono::milliseconds(ping->lease_left_ms);
  }
  out.sampler = s;
  return std::move(ping).value();
}

}  // namespace

Status AgentMallocCollector::Collect(const Target& target, TargetSample& out) {
  const bool jvm = target.runtime == Runtime::kJvm;
  out.agent_loaded = HasAgent(target);
  if (!out.agent_loaded) {
    if (jvm) {
      // When memtrimd tried to load it (--jvm.load-agent), why it is not there.
      std::optional<jvm::AgentLoadOutcome> load =
          loads_ ? loads_->Recorded(target.Key()) : std::nullopt;
      if (load && !load->Loaded()) {
        out.jvm_buffers_missing =
            "libmemtrimd_agent.so is not preloaded into the JVM, and memtrimd's load of it: " +
            load->text;
      } else if (loads_ && !load) {
        // The jvm collector loads it on its own thread: not done yet.
        out.jvm_buffers_missing =
            "libmemtrimd_agent.so is being loaded into the JVM (--jvm.load-agent); the buffer "
            "pools follow";
      } else {
        out.jvm_buffers_missing =
            "libmemtrimd_agent.so is not preloaded into the JVM (LD_PRELOAD it to read the "
            "buffer pools, or let memtrimd load it: --jvm.load-agent)";
      }
    }
    return Status::Ok();
  }
  Status status = Status::Ok();
  if (jvm && !ReadJvmBuffers(command_, target, options_, out, status)) return status;
  if (out.jvm_buffers && out.jvm_buffers->temp_cache_bytes) {
    out.jvm_buffers->temp_cache_previous_bytes = temp_cache_before_;
    temp_cache_before_ = out.jvm_buffers->temp_cache_bytes;
  }
  if (!ReadAllocator(command_, target, options_, out, status)) return status;
  std::optional<AgentPing> ping = ReadSampler(command_, target, options_, out);
  if (stop_sampling_ && !sampling_checked_ && ping) {
    sampling_checked_ = true;
    if (out.sampler && out.sampler->on &&
        command_(target, AGENT_VERB_SAMPLING_OFF, options_, nullptr).ok()) {
      out.sampler = SamplerState{};
    }
  }
  // glibc's malloc_info only where glibc's malloc serves the program (the
  // agent's answer says for certain; without one, what maps showed).
  Allocator allocator = out.allocator ? out.allocator->allocator : target.allocator;
  if (IsOtherAllocator(allocator)) return status;
  // In a JVM too: JDK 17 has no System.native_heap_info, so the agent is the
  // only source of its malloc statistics (on 21+ the jvm collector's fresher
  // answer takes precedence when both ran).
  AgentFailure failure = AgentFailure::kNone;
  Result<std::string> xml = command_(target, AGENT_VERB_MALLOC_INFO, options_, &failure);
  if (!xml.ok()) {
    if (failure == AgentFailure::kUnreachable) {
      out.agent_unreachable = xml.status().message();
      out.agent_unreachable_cause = xml.status().cause();
    }
    return xml.status();
  }
  Result<jvm::MallocInfo> info = jvm::ParseMallocInfo(*xml);
  if (!info.ok()) return info.status();
  out.malloc =
      MallocStats{std::move(info).value(), MallocSource::kAgent, std::chrono::system_clock::now(),
                  std::chrono::steady_clock::now(), procfs::RssNow(target.proc_dir)};
  return status;
}

}  // namespace memtrimd::agent

#include "collectors/agent/agent_collector.h"

#include "collectors/jvm/malloc_info.h"
#include "collectors/sample.h"

namespace memtrimd::agent {

Status AgentMallocCollector::Collect(const Target& target, TargetSample& out) {
  if (target.runtime == Runtime::kJvm) return Status::Ok();
  out.agent_loaded = HasAgent(target);
  if (!out.agent_loaded) return Status::Ok();
  AgentFailure failure = AgentFailure::kNone;
  Result<std::string> xml = AgentCommand(target, "malloc_info", options_, &failure);
  if (!xml.ok()) {
    if (failure == AgentFailure::kUnreachable) out.agent_unreachable = xml.status().message();
    return xml.status();
  }
  Result<jvm::MallocInfo> info = jvm::ParseMallocInfo(*xml);
  if (!info.ok()) return info.status();
  out.malloc = MallocStats{std::move(info).value(), "agent", std::chrono::system_clock::now()};
  return Status::Ok();
}

}  // namespace memtrimd::agent

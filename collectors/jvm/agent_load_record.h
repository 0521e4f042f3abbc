// What memtrimd's loads of its agent into JVMs gave, one outcome per JVM
// instance: a JVM is loaded into once, later samples read the outcome (the
// agent collector says from it why a JVM has no agent). One record per
// process (the daemon makes one, hands it to the jvm and agent collectors
// through CollectorOptions), for that process's lifetime; thread-safe.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "collectors/common/process_key.h"
#include "collectors/common/target.h"
#include "collectors/jvm/agent_load.h"

namespace memtrimd::jvm {

// Called once per JVM when its outcome is recorded (the daemon logs it).
using AgentLoadListener = std::function<void(const Target&, const AgentLoadOutcome&)>;

class AgentLoadRecord {
 public:
  // `proc_root` is "/proc" in production: where gone instances are looked
  // for when the record is pruned.
  explicit AgentLoadRecord(std::string proc_root = "/proc") : proc_root_(std::move(proc_root)) {}
  AgentLoadRecord(const AgentLoadRecord&) = delete;
  AgentLoadRecord& operator=(const AgentLoadRecord&) = delete;

  // Loads the agent into `target` (LoadAgentInto) unless this JVM was
  // handled before: then the recorded outcome. Blocking (attach deadlines):
  // call from the jvm collector's own thread.
  AgentLoadOutcome LoadOnce(const Target& target, const AgentLoadOptions& options);

  // The outcome recorded for a JVM, if memtrimd tried to load into it.
  std::optional<AgentLoadOutcome> Recorded(const ProcessKey& key) const;

  // Set before sampling starts.
  void SetListener(AgentLoadListener listener);

 private:
  const std::string proc_root_;
  mutable std::mutex mu_;
  std::map<ProcessKey, AgentLoadOutcome> outcomes_;
  // Instances being loaded right now (by another collector thread).
  std::set<ProcessKey> busy_;
  AgentLoadListener listener_;
};

}  // namespace memtrimd::jvm

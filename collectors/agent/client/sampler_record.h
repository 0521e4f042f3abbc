// Which targets this memtrimd turned the agent's allocation sampler on in,
// so that a clean stop (SIGTERM, SIGINT) turns it off in each: the sampler
// costs the program something on every allocation, and nobody reads it once
// memtrimd is gone. (A memtrimd killed without a clean stop leaves that to
// the agent's lease: agent_protocol.h.)
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>

#include "collectors/agent/client/agent_client.h"
#include "collectors/common/process_key.h"
#include "collectors/common/target.h"

namespace memtrimd::agent {

class SamplerRecord {
 public:
  // Past this many entries, those of processes that have ended are dropped
  // at the next insert (a node's targets come and go).
  static constexpr std::size_t kPruneAbove = 256;

  // "sampling on" succeeded in `target` / "sampling off" was sent.
  void TurnedOn(const Target& target);
  void TurnedOff(const Target& target);
  std::size_t Size() const;

  struct Stopped {
    std::size_t asked = 0;   // targets recorded
    std::size_t off = 0;     // answered "sampling off"
    std::size_t missed = 0;  // unreachable, or not reached before the deadline
  };
  // Sends "sampling off" to every recorded target, `workers` at a time, each
  // call and all of them within `total`: a stopped or hung target costs its
  // worker the rest of the deadline, never the stop more than `total`. Those
  // missed keep sampling until their lease runs out.
  Stopped TurnAllOff(std::chrono::milliseconds total, std::size_t workers = 8,
                     const AgentCommander& command = AgentCommand);

 private:
  mutable std::mutex mu_;
  std::map<ProcessKey, Target> targets_;
};

}  // namespace memtrimd::agent

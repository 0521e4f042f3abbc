// memtrimd's own libmemtrimd_agent.so loaded into a JVM it watches, through
// the JVM's attach socket ("load <path> true version=<n>": JVMTI's
// Agent_OnAttach, collectors/agent/in_target/agent_attach.c), so that a JVM started
// without LD_PRELOAD gets its buffer pools, temporary buffer cache and malloc
// statistics read by the agent. Opt-in (--jvm.load-agent), once per JVM.
//
// Where the JVM opens the library: memtrimd copies its own file into the
// JVM's /tmp (resolved inside the JVM's root, as the JVM resolves it), in a
// directory of its own made for the one load, has the JVM load it from
// there, and removes both at once: the JVM's mapping keeps the file's pages,
// its /tmp keeps nothing. Or, with --jvm.agent-path, a path the JVM itself
// can open (a shared volume): nothing is copied.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "collectors/agent/agent_protocol.h"
#include "collectors/common/status.h"
#include "collectors/common/target.h"
#include "collectors/jvm/attach_client.h"
#include "collectors/jvm/attach_protocol.h"

namespace memtrimd::jvm {

// The agent version memtrimd loads is AGENT_PROTOCOL_VERSION
// (agent_protocol.h); the agent refuses a load that asks for another.

// The library's file name: what memtrimd looks for in a target's maps
// (agent::HasAgent) and the agent in its own process.
inline constexpr std::string_view kAgentFileName = AGENT_LIBRARY_NAME;

struct AgentLoadOptions {
  // memtrimd's own agent, copied into the JVM's /tmp; empty: found beside
  // memtrimd's executable (FindOwnAgent).
  std::string source;
  // A path as the JVM sees it (e.g. a volume both containers mount): loaded
  // from there as it is, nothing copied. Absolute.
  std::string jvm_path;
  AttachOptions attach;
};

enum class AgentLoadResult {
  kLoaded,    // the agent now runs in the JVM
  kPresent,   // it had one already (preloaded, or loaded by an earlier memtrimd)
  kOptedOut,  // MEMTRIMD_AGENT_LOAD=0 or MEMTRIMD_AGENT_DISABLE=1 in its environment
  kRefused,   // the JVM or the agent said no (dynamic loading off, version)
  kFailed,    // it could not be done (no file, the JVM cannot open it, attach)
};

struct AgentLoadOutcome {
  AgentLoadResult result = AgentLoadResult::kFailed;
  std::string text;  // one line: what happened, or why not
  bool Loaded() const { return result == AgentLoadResult::kLoaded; }
};

const char* AgentLoadResultName(AgentLoadResult r);

// Pure: what the JVM's answer to "load <jvm_path> ..." means. JDK 17
// answers status -1 for an error, 21+ status 0 with the same text; a
// library the JVM loaded answers "return code: <n>", Agent_OnAttach's
// (agent_attach.h).
AgentLoadOutcome ParseLoadAnswer(const AttachResponse& answer, std::string_view jvm_path);

// memtrimd's own agent: beside its executable, in ../lib/memtrimd (as
// installed: a private plugin, not a library in the loader's path), in
// ../lib (older installs) or in the build tree's collectors/agent. kNotFound
// says where it looked.
Result<std::string> FindOwnAgent();
// The same, from the directory `exe_dir` instead of memtrimd's own.
Result<std::string> FindOwnAgentFrom(const std::string& exe_dir);

// Loads the agent into `target`, every time it is called. Blocking (attach
// deadlines): call from the jvm collector's own thread. Once per JVM is
// AgentLoadRecord's (agent_load_record.h).
AgentLoadOutcome LoadAgentInto(const Target& target, const AgentLoadOptions& options);

}  // namespace memtrimd::jvm

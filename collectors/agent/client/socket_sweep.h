// Sweep of the agent sockets that ended processes left in their /tmp.
//
// The agent removes its socket file when its process ends through exit(),
// _exit or _Exit (in_target/agent_exit.c). A process killed by a signal, or
// one that exec'd into a program without the agent, cannot: its file stays.
// memtrimd removes such files from the /tmp of the targets it watches:
// only names of the agent's default form (AGENT_SOCKET_PREFIX<pid>.<start>,
// or that plus "." and 16 hex digits) that are UNIX sockets themselves
// (never a symlink, a regular file or anything else named so), on which
// nobody listens (connect is refused), at least 2 s old (between the
// agent's bind and its listen, connect is refused too), and whose
// (pid, start) is no watched target's. Each /tmp is opened inside its
// target's root without following any symlink, and the names are removed
// through that directory (unlinkat never follows a final symlink), so no
// neighbour can point the sweep at another file. A sticky /tmp lets a
// file's owner or the directory's remove it: root's /tmp (the node's, and
// nearly every image's) is swept without any capability; one of another
// uid needs CAP_FOWNER (counted as refused without it).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collectors/common/target.h"

namespace memtrimd::agent {

// The (pid, start) an agent socket's name holds.
struct AgentSocketName {
  uint64_t pid = 0;
  uint64_t start = 0;
};

// `name` (a directory entry of /tmp) as the agent names its socket by
// default: ".memtrimd_agent.<pid>.<start>", optionally followed by "." and
// 16 lowercase hex digits; nullopt for anything else. Pure.
std::optional<AgentSocketName> ParseAgentSocketName(std::string_view name);

struct SweepLimits {
  std::size_t max_dirs = 64;       // distinct /tmp directories per sweep
  std::size_t max_entries = 4096;  // directory entries read per directory
  std::size_t max_removals = 256;  // names removed per sweep
};

struct SweepResult {
  std::size_t dirs = 0;     // distinct directories swept
  std::size_t removed = 0;  // stale sockets removed
  std::size_t refused = 0;  // stale sockets the kernel would not let memtrimd remove
  std::string refused_why;  // the first refusal's reason
};

// Sweeps the /tmp of each target in `targets` (each directory once, by its
// device and inode). A name whose (pid, start) is a pair in `live` (each
// target's nspid and start ticks) is never removed, even when nobody
// listens on it: that process may be starting its agent again after an exec.
SweepResult SweepAgentSockets(const std::vector<Target>& targets,
                              const std::set<std::pair<uint64_t, uint64_t>>& live,
                              const SweepLimits& limits = {});

}  // namespace memtrimd::agent

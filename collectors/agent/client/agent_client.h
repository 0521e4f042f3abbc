// Client of libmemtrimd_agent.so (collectors/agent/in_target/memtrimd_agent.c), the
// LD_PRELOAD agent that runs the allocator's release call (malloc_trim(0) for
// glibc), reads the allocator's figures, malloc_info and mallinfo2 inside a
// program. One command per connection: memtrimd sends "<command>\n",
// the agent answers "<status>\n<body>" and closes.
//
// The socket is reached through /proc/<pid>/root, so a target with its own
// mount namespace and private /tmp works. Before connecting the client checks
// that the file is a socket owned by the target's uid/gid, or by root (a
// program that made it as root and then dropped privileges without glibc's
// setuid family), and closed to everyone else; after connecting, that the
// listening peer is the target (SO_PEERCRED): the proof that no squatter
// answers. Every blocking step has a deadline.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "collectors/common/status.h"
#include "collectors/common/target.h"

namespace memtrimd::agent {

struct AgentOptions {
  // Budget for the whole command: connect, send, and read the answer. A trim
  // of a large fragmented heap can take seconds.
  std::chrono::milliseconds timeout{30000};
  // Answers larger than this are an error, not memory growth.
  std::size_t max_response_bytes = 4u << 20;
};

// The answer to "trim".
struct AgentTrim {
  std::chrono::nanoseconds duration{};  // time spent inside the release call
  uint64_t rss_before = 0;              // bytes, /proc/self/statm
  uint64_t rss_after = 0;
  int result = 0;  // malloc_trim's return (1 = some free chunk spanned a page); 1 for other calls
  // Which allocator released, and with which call ("malloc_trim",
  // "arena.4096.purge", "ReleaseFreeMemory", "mi_collect"); an agent from
  // before other allocators sends neither ("glibc" and "malloc_trim" then).
  Allocator allocator = Allocator::kGlibc;
  std::string call = "malloc_trim";
  // The allocator's free-but-kept bytes just before and after the call,
  // when it reports such a figure (jemalloc dirty + muzzy, tcmalloc page
  // heap free).
  std::optional<uint64_t> free_kept_before;
  std::optional<uint64_t> free_kept_after;
  // mimalloc's committed bytes (mi_process_info) just before and after the
  // call: it reports no free figure, and what a collect gives back it
  // decommits.
  std::optional<uint64_t> committed_before;
  std::optional<uint64_t> committed_after;
};

// glibc's struct mallinfo2, as the agent reported it.
struct Mallinfo2 {
  uint64_t arena = 0, ordblks = 0, smblks = 0, hblks = 0, hblkhd = 0, usmblks = 0, fsmblks = 0,
           uordblks = 0, fordblks = 0, keepcost = 0;
};

// Socket path as memtrimd reaches it: <proc_dir>/root followed by
// MEMTRIMD_AGENT_SOCKET from the target's environ (every "%p" replaced by
// nspid, every "%t" by start_ticks), or
// /tmp/.memtrimd_agent.<nspid>.<start_ticks>. kUnavailable when the target
// set MEMTRIMD_AGENT_DISABLE=1, kInvalidArgument for a relative override.
Result<std::string> AgentSocketPath(const Target& t);

// The same, and whether it is the default name: when someone else holds
// that name, the agent listens at it plus "." and 16 random hex digits,
// which AgentCommand then looks for beside it.
struct AgentSocket {
  std::string path;
  bool default_name = true;
};
Result<AgentSocket> FindAgentSocket(const Target& t);

// The agent's settings in an environment block (NUL-separated, as
// /proc/<pid>/environ), and read from a process's: for Target::agent_environ.
Target::AgentEnviron AgentEnvironOf(std::string_view environ);
Result<Target::AgentEnviron> ReadAgentEnviron(const std::string& proc_dir);

// Where a failed AgentCommand stopped.
enum class AgentFailure {
  kNone,
  kUnreachable,  // no answer: no socket, stale, not the target's, refused, deadline
  kAnswer,       // the agent answered, with an error or something unparseable
};

// Whether the target has the agent loaded (libmemtrimd_agent.so in
// /proc/<pid>/maps). False when maps cannot be read.
bool HasAgent(const Target& t);

// Runs one command ("trim", "allocator", "malloc_info", "mallinfo2", "ping",
// "jvm_buffers") and returns the body of a status-0 answer. Errors:
// kUnavailable (no socket, a stale socket nobody listens on, deadline, or the
// agent answered status 1), kPermissionDenied (the socket is not a private
// socket of the target's uid/gid, its listener is another process, or the
// agent closed without answering, which is how it refuses a peer),
// kTooLarge (past max_response_bytes, or the agent answered status 2: its
// own buffer was too small), kParseError, kInvalidArgument (a command that is not one short
// line), kNotFound (the process is gone). `failure`, when given, says where
// it failed. Thread-safe.
Result<std::string> AgentCommand(const Target& t, std::string_view command,
                                 const AgentOptions& o = {}, AgentFailure* failure = nullptr);

// Something that runs one agent command: AgentCommand, or a recording of
// its answers.
using AgentCommander = std::function<Result<std::string>(
    const Target& t, std::string_view command, const AgentOptions& o, AgentFailure* failure)>;

// Parsers of the "key=value\n" bodies. Pure; unknown keys are ignored (newer
// agents may add some); missing or repeated known keys, and a body that does
// not end in '\n' (cut short), are kParseError.
Result<AgentTrim> ParseAgentTrim(std::string_view body);
Result<Mallinfo2> ParseMallinfo2(std::string_view body);

// AgentCommand("trim") + ParseAgentTrim.
Result<AgentTrim> AgentTrimNow(const Target& t, const AgentOptions& o = {});

}  // namespace memtrimd::agent

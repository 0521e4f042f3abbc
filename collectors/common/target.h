// A process memtrimd watches. A value, not a global: the daemon holds one
// (sidecar) or a set (node-agent mode) without changing collectors.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "collectors/common/allocator.h"
#include "collectors/common/process_key.h"

namespace memtrimd {

// What the target runs on, as far as memtrimd can tell from its mappings.
enum class Runtime { kUnknown, kGlibc, kJvm, kMusl };

const char* RuntimeName(Runtime r);

struct Target {
  pid_t pid = 0;
  // Clock ticks since boot (field 22 of /proc/<pid>/stat). (pid, start_ticks)
  // is the identity: a restarted process with a recycled pid is a new target.
  uint64_t start_ticks = 0;
  // The program image it runs (ProcStat::ExecMark): an exec keeps pid and
  // start time but makes a new target (a shell entrypoint that execs java
  // is a glibc program first and a JVM after).
  uint64_t exec_mark = 0;
  pid_t nspid = 0;  // pid inside the target's own pid namespace
  uid_t uid = 0;    // effective ids
  gid_t gid = 0;
  std::string comm;
  Runtime runtime = Runtime::kUnknown;
  // Read right after exec, while glibc's loader had not mapped the C library:
  // runtime and allocator are not known yet (MapsFacts::StillLoading). The
  // selectors do not take such a target; they read it again at their next
  // look.
  bool still_loading = false;
  // Which allocator serves malloc, as told from outside (the shared objects
  // in maps, or the executable's own symbols), and how it was told (e.g.
  // "libjemalloc.so.2 mapped", "jemalloc linked into the executable").
  // The preload agent, when loaded, says for certain (AllocatorStats).
  Allocator allocator = Allocator::kUnknown;
  std::string allocator_source;
  // Directory the target's /proc files are read from: "/proc/<pid>", or a
  // live thread's "/proc/<pid>/task/<tid>" once its main thread has ended
  // (procfs::ProcessReadDir); tests point it at a fixture tree.
  std::string proc_dir;
  // MEMTRIMD_TRIM in the environment it started with: true to opt in to
  // trims, false to opt out, nullopt when unset (or not readable).
  std::optional<bool> trim_opt_in;
  // The preload agent's settings in the environment it started with
  // (MEMTRIMD_AGENT_DISABLE, MEMTRIMD_AGENT_SOCKET), read once with the
  // first look at the process. /proc/<pid>/environ waits while the
  // process's mmap lock is held (for good when it holds it on a read no one
  // answers), so agent commands do not read it again each time; nullopt:
  // not read yet (each command reads it then).
  struct AgentEnviron {
    bool disabled = false;
    std::string socket;  // empty: the default name
  };
  std::optional<AgentEnviron> agent_environ;

  // Which process instance it is: what every per-process record is kept by.
  ProcessKey Key() const { return {pid, start_ticks}; }

  // The same process running the same program.
  bool SameProcess(const Target& o) const {
    return pid == o.pid && start_ticks == o.start_ticks && exec_mark == o.exec_mark;
  }
};

// Why glibc's malloc figures (arena heaps, malloc_info, malloc_trim) do not
// describe the target's memory, e.g. "malloc is jemalloc (libjemalloc.so.2
// mapped), not glibc's"; empty when they do (glibc, or not known).
std::string GlibcMallocNotApplicable(const Target& t);

}  // namespace memtrimd

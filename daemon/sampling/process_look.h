// Node discovery's first look at a process it finds: what it runs (its
// maps), its command line and its environment, read once in the process's
// life on a thread of its own (OffThread). The sidecar's --target.match
// rule reads command lines the same way (StartCommandLine).
//
// Discovery looks at every process on the node that has memory, whoever owns
// it, and maps, cmdline and environ wait while the process's memory map is
// locked: a process that reads its own FUSE-backed page through
// /proc/self/mem while its server never answers keeps that lock for good. On
// the sampling thread such a look held every target's sample, /healthz and
// shutdown; here it holds one thread, and the process is not a candidate
// until its look ends.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <string>

#include "collectors/common/status.h"
#include "collectors/common/target.h"
#include "daemon/sampling/off_thread.h"

namespace memtrimd {

struct ProcessFacts {
  Result<Target> target = Status(ErrorCode::kUnavailable, "not looked at");
  std::string cmdline;  // "" when unreadable (the comm alone then decides)
  bool cmdline_read = false;
  // Read only when `target` was.
  Result<std::string> environ = Status(ErrorCode::kUnavailable, "not looked at");
};

class ProcessLook : public OffThread<ProcessFacts> {
 public:
  static constexpr const char* kThreadName = "memtrimd-look";

  // Looks at `pid` under `proc_root`, its files read through `read_dir` (a
  // live thread's directory when the main thread has ended).
  static std::shared_ptr<ProcessLook> Start(std::string proc_root, pid_t pid, std::string read_dir);
  // Reads only the command line (`target` and `environ` stay unread).
  static std::shared_ptr<ProcessLook> StartCommandLine(std::string read_dir);

  // Looks started here that have not ended yet, over the whole process.
  static std::size_t Running() { return running_.load(); }

 private:
  static std::atomic<std::size_t> running_;
};

}  // namespace memtrimd

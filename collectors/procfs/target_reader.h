// Builds a Target from a pid's /proc entry: identity (pid + start time),
// ids, name and runtime.
#pragma once

#include <sys/types.h>

#include <string>

#include "collectors/common/status.h"
#include "collectors/common/target.h"

namespace memtrimd::procfs {

// `proc_root` is "/proc" in production. kNotFound when the pid does not
// exist; kPermissionDenied when its files cannot be read.
Result<Target> ReadTarget(const std::string& proc_root, pid_t pid);

// Start time in ticks from <proc_dir>/stat; used to check that a target is
// still the same, live process. kNotFound when it is gone, or exited and not
// yet reaped (a zombie keeps its pid and start time, but is not the target
// any more).
Result<uint64_t> ReadStartTicks(const std::string& proc_dir);

}  // namespace memtrimd::procfs

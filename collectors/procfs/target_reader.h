// Builds a Target from a pid's /proc entry: identity (pid + start time),
// ids, name and runtime.
#pragma once

#include <sys/types.h>

#include <string>

#include "collectors/common/process_key.h"
#include "collectors/common/status.h"
#include "collectors/common/target.h"

namespace memtrimd::procfs {

// `proc_root` is "/proc" in production. kNotFound when the pid does not
// exist; kPermissionDenied when its files cannot be read.
Result<Target> ReadTarget(const std::string& proc_root, pid_t pid);

// Start time in ticks of the process at `proc_dir` (its /proc/<pid>, or one
// of its threads' /proc/<pid>/task/<tid>: the process's, from the leader's
// stat either way); used to check that a target is still the same, live
// process. kNotFound when it is gone, or exited and not yet reaped (a
// zombie keeps its pid and start time, but is not the target any more).
// A process is alive while any of its threads is: a zombie leader with a
// live thread (its main thread called pthread_exit) is a live process.
Result<uint64_t> ReadStartTicks(const std::string& proc_dir);

// The same, with the program image it runs now (Target::exec_mark).
struct ProcessInstance {
  uint64_t start_ticks = 0;
  uint64_t exec_mark = 0;
};
Result<ProcessInstance> ReadInstance(const std::string& proc_dir);

// Whether `t` still runs the program it was read running: exited (or pid
// reused), or the same process now running another program after exec.
enum class Liveness { kRunning, kExited, kExecd };
Liveness CheckStillRunning(const Target& t);

// Whether the process instance `key` may still be running: false only when
// its pid is gone, exited, or now belongs to another process (another start
// time). When that cannot be told (its /proc files unreadable), true: the
// records that prune with this (jvm::SignalRecord, jvm::AgentLoadRecord)
// must never forget a live process.
bool StillRunning(const ProcessKey& key, const std::string& proc_root = "/proc");

// Where to read the files of the live process at `proc_dir` (either form):
// its /proc/<pid> while the leader runs; once the leader is a zombie of a
// live group, a live thread's /proc/<pid>/task/<tid>, since the leader's
// own status has no memory lines and its smaps, maps, environ, root and
// cwd are empty or gone, while every thread's show the whole process (one
// memory, one cgroup, one root). kNotFound when the process has exited.
Result<std::string> ProcessReadDir(const std::string& proc_dir);

// The process's /proc/<pid> for either form of `proc_dir`.
std::string GroupDir(const std::string& proc_dir);

// The task to name to the kernel for calls on the process's memory
// (process_vm_readv): the thread `proc_dir` reads through, else the pid.
pid_t ReadingTask(const Target& t);

}  // namespace memtrimd::procfs

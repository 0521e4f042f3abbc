// Whether any thread of a process waits uninterruptibly ('D' in its
// /proc/<pid>/task/<tid>/stat), read without touching the process's memory
// map.
//
// The reads that wait on a process (its maps, smaps, cmdline, environ) wait
// for its mmap lock, and they wait only while a writer holds or is queued
// for it: a thread that waits for that lock waits as 'D', and stat answers
// without the lock. Node discovery and the sidecar's search use it to tell a
// process whose first read would likely never end from one worth a thread
// once the threads they keep for such reads are all taken.
#pragma once

#include <cstddef>
#include <string>

namespace memtrimd::procfs {

// True when a task of the process at `proc_dir` (/proc/<pid>, or a task's
// directory under it) is in state 'D', or when that cannot be told: its task
// directory cannot be listed, or it has more than `max_tasks` tasks. Callers
// ask it again at every scan for a process they put off, on the sampling
// thread: the cap keeps one process from costing thousands of reads a scan
// (a process of more threads is put off until a look ends).
bool AnyTaskUninterruptible(const std::string& proc_dir, std::size_t max_tasks = 256);

}  // namespace memtrimd::procfs

// JVM instances memtrimd sent SIGQUIT to whose attach listener did not come
// up. Such a JVM printed a thread dump instead (attach disabled in a way
// memtrimd could not see, or a listener that cannot start); signalling it
// again would print another one. Process-wide, for memtrimd's lifetime,
// thread-safe: every attach in the process consults the same record.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace memtrimd::jvm {

// Whether (pid, start_ticks) was signalled without its listener coming up.
bool SignalledWithoutListener(pid_t pid, uint64_t start_ticks);

// Records (pid, start_ticks) for good. Entries of processes that are gone
// are dropped when the record grows, so it stays small.
void RecordSignalWithoutListener(pid_t pid, uint64_t start_ticks);

}  // namespace memtrimd::jvm

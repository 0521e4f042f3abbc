// Reads, from /proc and the target's own files, what the pure DecideSignal
// (attach_protocol.h) needs before memtrimd may send a JVM SIGQUIT.
#pragma once

#include <string>
#include <vector>

#include "collectors/common/private_socket.h"
#include "collectors/common/status.h"
#include "collectors/common/target.h"
#include "collectors/jvm/attach_protocol.h"
#include "collectors/jvm/hsperfdata.h"
#include "collectors/jvm/perf_data_cause.h"
#include "collectors/jvm/signal_record.h"

namespace memtrimd::jvm {

// The JVM's own hsperfdata file, found through its mapping in
// /proc/<pid>/maps and read through /proc/<pid>/root; the file read must be
// the very one mapped (device, inode) and owned by the JVM's uid. kNotFound
// when the JVM maps none (-XX:-UsePerfData, -XX:+PerfDisableSharedMem) or
// the file was removed.
Result<PerfData> ReadOwnPerfData(const Target& target);

// Signal bits, the JVM's attach verdict from hsperfdata (its file, else its
// perf memory: perf_memory.h), and only when that is missing its options
// from every source (jvm_options.h), with @argfiles,
// -XX:VMOptionsFile= and -XX:Flags= files read through /proc/<pid>/root
// (absolute names, resolved inside the target's root) or /proc/<pid>/cwd
// (relative names). signalled_before comes from `record` (none: never).
SignalFacts ReadSignalFacts(const Target& target, const SignalRecord* record);

// OpenAsTarget (collectors/common/target_open.h) opens those files.

// The JVM's options from every source, as ReadSignalFacts reads them.
Result<std::vector<JvmOption>> ReadJvmOptions(const Target& target);

// What DecidePerfDataCause needs: the JVM's options, and whether its uid
// has a name in the /etc/passwd inside its root (read with a cap).
PerfDataCauseFacts ReadPerfDataCauseFacts(const Target& target);

}  // namespace memtrimd::jvm

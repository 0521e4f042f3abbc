// Why a HotSpot JVM has no hsperfdata file, told from facts memtrimd can
// read without the JVM's help: its options (jvm_options.h) and whether its
// uid has a name in its own /etc/passwd. HotSpot names the file's directory
// hsperfdata_<user name>; for a uid without a name (runAsUser with an
// arbitrary uid in a pod, what OpenShift always does) it makes no file and
// keeps the counters in anonymous memory, as -XX:+PerfDisableSharedMem does.
// The flags are named only when the options set them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/jvm/jvm_options.h"

namespace memtrimd::jvm {

// Pure: the user name /etc/passwd text gives `uid` (the first line with
// that uid and a non-empty name), nullopt when no line does. Lines are
// name:password:uid:gid:gecos:home:shell; a line without a third field or
// with a uid that is not a decimal number is skipped. `complete` is set to
// false when the text holds NIS compat lines ("+..." or "-..."): then
// getpwuid may find a name the file does not hold.
std::optional<std::string> PasswdNameOf(std::string_view passwd, uint32_t uid,
                                        bool* complete = nullptr);

enum class PerfDataCause {
  kUnknown,         // none of the below is known to hold
  kPerfDataOff,     // -XX:-UsePerfData: no counters at all
  kSharedMemOff,    // -XX:+PerfDisableSharedMem: counters in memory, no file
  kUidWithoutName,  // the JVM's uid has no name: counters in memory, no file
};

struct PerfDataCauseFacts {
  uint32_t uid = 0;
  // Whether /etc/passwd (the JVM's own) names the uid; nullopt when it could
  // not be read or is not the whole story (NIS compat lines).
  std::optional<bool> uid_named;
  // The JVM's options in the order it applies them; unknown when they could
  // not all be read.
  bool options_known = false;
  std::vector<JvmOption> options;
};

struct PerfDataVerdict {
  PerfDataCause cause = PerfDataCause::kUnknown;
  std::string where;  // the option's origin ("command line", "JAVA_TOOL_OPTIONS", ...)
};

// Pure. The last -XX:+/-UsePerfData and -XX:+/-PerfDisableSharedMem of the
// options win, as in the JVM. -XX:-UsePerfData first (no counters at all),
// then -XX:+PerfDisableSharedMem, then a uid without a name.
PerfDataVerdict DecidePerfDataCause(const PerfDataCauseFacts& facts);

// Pure: the cause in words, with what the JVM needs for a file.
std::string PerfDataCauseText(const PerfDataVerdict& verdict, const PerfDataCauseFacts& facts);

}  // namespace memtrimd::jvm

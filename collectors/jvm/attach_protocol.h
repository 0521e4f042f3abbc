// The HotSpot attach protocol, the parts that are pure: request encoding,
// response parsing, and the decision whether a process may be signalled.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/status.h"
#include "collectors/jvm/jvm_options.h"

namespace memtrimd::jvm {

// Version 1 request (every JDK): "1" NUL op NUL arg0 NUL arg1 NUL arg2 NUL.
// For diagnostic commands op is "jcmd" and arg0 the whole command line.
// kInvalidArgument for a newline or NUL in the command (a newline would run a
// second command), an op over 16 bytes, or an argument over 1024 bytes.
Result<std::string> EncodeRequestV1(std::string_view op, std::string_view arg0,
                                    std::string_view arg1 = {}, std::string_view arg2 = {});

struct AttachResponse {
  int status = 0;      // 0 ok; -1 error; 101 bad protocol version; ...
  std::string output;  // everything after the status line
};

// "<decimal status>\n<output>". kParseError when the first line is not a
// number.
Result<AttachResponse> ParseAttachResponse(std::string_view bytes);

// What memtrimd knows about a process before it may send SIGQUIT to start
// the JVM's attach listener. A SIGQUIT that does not start the listener
// prints a full thread dump into the application's output, so every field
// that could say "no" is read, and "unknown" means no.
struct SignalFacts {
  bool is_hotspot = false;   // libjvm.so mapped
  uint64_t sig_caught = 0;   // SigCgt
  uint64_t sig_ignored = 0;  // SigIgn
  // The JVM's own verdict, from its hsperfdata file when it has one:
  // sun.rt.jvmCapabilities[0] is '1' exactly when DisableAttachMechanism
  // ended up false, whatever set it. nullopt without the file (-XX:-UsePerfData,
  // -XX:+PerfDisableSharedMem) or without the counter.
  std::optional<bool> perf_attach_supported;
  std::string perf_vm_args;  // java.rt.vmArgs, for -Xrs
  // Without the JVM's verdict: its options from every source (jvm_options.h).
  bool options_known = false;
  std::string options_error;  // why they are unknown (an argfile gone, a read cap, ...)
  std::vector<JvmOption> options;
  // This JVM (pid and start time) was signalled before and its listener did
  // not come up: whatever the reason, a second signal would be a second
  // thread dump.
  bool signalled_before = false;
};

enum class SignalVerdict {
  kMaySignal,
  kAttachDisabled,    // -XX:+DisableAttachMechanism: SIGQUIT would only print a thread dump
  kReducedSignals,    // -Xrs: SIGQUIT's default action would kill the JVM
  kNotHotspot,        // not a HotSpot JVM
  kSigquitNotCaught,  // handler not installed (yet), or ignored
  kOptionsUnknown,    // no hsperfdata and its options could not all be read: do not guess
  kSignalledBefore,   // an earlier SIGQUIT did not start its listener
};

// Pure. The JVM's hsperfdata verdict when there is one; else its options in
// the order the JVM applies them, where the last +/-DisableAttachMechanism
// wins. `where`, when given, is set to where the deciding option was found
// ("hsperfdata", "@/app/jvm.args", "JAVA_TOOL_OPTIONS", ...), or "".
SignalVerdict DecideSignal(const SignalFacts& facts, std::string* where = nullptr);
const char* SignalVerdictText(SignalVerdict v);

}  // namespace memtrimd::jvm

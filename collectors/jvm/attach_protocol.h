// The HotSpot attach protocol, the parts that are pure: request encoding,
// response parsing, and the decision whether a process may be signalled.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "collectors/common/status.h"

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
// the JVM's attach listener.
struct SignalFacts {
  bool is_hotspot = false;              // libjvm.so mapped
  uint64_t sig_caught = 0;              // SigCgt
  uint64_t sig_ignored = 0;             // SigIgn
  bool options_known = false;           // cmdline and environment could be read
  std::string options_error;            // why not, when they could not (e.g. over the cap)
  std::string cmdline;                  // arguments joined by spaces
  std::string java_tool_options;        // JAVA_TOOL_OPTIONS
  std::string jdk_java_options;         // JDK_JAVA_OPTIONS
  std::string underscore_java_options;  // _JAVA_OPTIONS
};

enum class SignalVerdict {
  kMaySignal,
  kAttachDisabled,    // -XX:+DisableAttachMechanism: SIGQUIT would only print a thread dump
  kReducedSignals,    // -Xrs: SIGQUIT's default action would kill the JVM
  kNotHotspot,        // not a HotSpot JVM
  kSigquitNotCaught,  // handler not installed (yet), or ignored
  kOptionsUnknown,    // could not read cmdline/environ: do not guess
};

// Pure. JVM options are read in the JVM's order (JAVA_TOOL_OPTIONS,
// JDK_JAVA_OPTIONS, the command line, _JAVA_OPTIONS); the last
// +/-DisableAttachMechanism wins.
SignalVerdict DecideSignal(const SignalFacts& facts);
const char* SignalVerdictText(SignalVerdict v);

}  // namespace memtrimd::jvm

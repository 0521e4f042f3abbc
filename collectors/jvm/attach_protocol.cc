#include "collectors/jvm/attach_protocol.h"

#include <csignal>

#include "collectors/common/text.h"

namespace memtrimd::jvm {
namespace {

constexpr std::size_t kMaxOp = 16;
constexpr std::size_t kMaxArg = 1024;

bool HasForbidden(std::string_view s) {
  return s.find('\n') != std::string_view::npos || s.find('\r') != std::string_view::npos ||
         s.find('\0') != std::string_view::npos;
}

// Applies options left to right; returns the last state seen.
void Scan(std::string_view options, bool& attach_disabled, bool& reduced_signals) {
  for (std::string_view tok = text::NextToken(options); !tok.empty();
       tok = text::NextToken(options)) {
    if (tok == "-XX:+DisableAttachMechanism") attach_disabled = true;
    if (tok == "-XX:-DisableAttachMechanism") attach_disabled = false;
    if (tok == "-Xrs") reduced_signals = true;
  }
}

}  // namespace

Result<std::string> EncodeRequestV1(std::string_view op, std::string_view arg0,
                                    std::string_view arg1, std::string_view arg2) {
  if (op.empty() || op.size() > kMaxOp || HasForbidden(op)) {
    return Status(ErrorCode::kInvalidArgument, "attach: bad operation name");
  }
  for (std::string_view a : {arg0, arg1, arg2}) {
    if (a.size() > kMaxArg) {
      return Status(ErrorCode::kInvalidArgument,
                    "attach: argument longer than " + std::to_string(kMaxArg) + " bytes");
    }
    if (HasForbidden(a)) {
      return Status(ErrorCode::kInvalidArgument,
                    "attach: a command may not contain a newline or NUL (one command per "
                    "connection)");
    }
  }
  std::string out;
  out.reserve(8 + op.size() + arg0.size() + arg1.size() + arg2.size());
  out += '1';
  out += '\0';
  for (std::string_view part : {op, arg0, arg1, arg2}) {
    out.append(part);
    out += '\0';
  }
  return out;
}

Result<AttachResponse> ParseAttachResponse(std::string_view bytes) {
  std::size_t nl = bytes.find('\n');
  std::string_view first = text::Trim(bytes.substr(0, nl));
  bool negative = !first.empty() && first.front() == '-';
  if (negative) first.remove_prefix(1);
  auto n = text::ParseUint(first);
  if (!n || *n > 1000000) {
    return Status(ErrorCode::kParseError, "attach: response does not start with a status line");
  }
  AttachResponse r;
  r.status = negative ? -static_cast<int>(*n) : static_cast<int>(*n);
  if (nl != std::string_view::npos) r.output = std::string(bytes.substr(nl + 1));
  return r;
}

SignalVerdict DecideSignal(const SignalFacts& f) {
  if (!f.is_hotspot) return SignalVerdict::kNotHotspot;
  if (!f.options_known) return SignalVerdict::kOptionsUnknown;
  bool disabled = false, reduced = false;
  Scan(f.java_tool_options, disabled, reduced);
  Scan(f.jdk_java_options, disabled, reduced);
  Scan(f.cmdline, disabled, reduced);
  Scan(f.underscore_java_options, disabled, reduced);
  if (disabled) return SignalVerdict::kAttachDisabled;
  if (reduced) return SignalVerdict::kReducedSignals;
  const uint64_t quit = 1ull << (SIGQUIT - 1);
  if ((f.sig_caught & quit) == 0 || (f.sig_ignored & quit) != 0) {
    return SignalVerdict::kSigquitNotCaught;
  }
  return SignalVerdict::kMaySignal;
}

const char* SignalVerdictText(SignalVerdict v) {
  switch (v) {
    case SignalVerdict::kMaySignal:
      return "may signal";
    case SignalVerdict::kAttachDisabled:
      return "attach disabled (-XX:+DisableAttachMechanism)";
    case SignalVerdict::kReducedSignals:
      return "started with -Xrs: SIGQUIT would kill it, and its attach listener is not running";
    case SignalVerdict::kNotHotspot:
      return "not a HotSpot JVM (no libjvm.so mapped)";
    case SignalVerdict::kSigquitNotCaught:
      return "SIGQUIT is not caught (JVM still starting, or the signal is ignored)";
    case SignalVerdict::kOptionsUnknown:
      return "cannot read its command line and environment to rule out "
             "-XX:+DisableAttachMechanism and -Xrs";
  }
  return "unknown";
}

}  // namespace memtrimd::jvm

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

// The state of the two flags after `option`. "-J-X..." (a tool launcher's
// prefix for JVM options) counts only in the careful direction.
void Apply(std::string_view option, const std::string& origin, bool& disabled, bool& reduced,
           std::string& disabled_by, std::string& reduced_by) {
  const bool via_j = option.substr(0, 3) == "-J-";
  if (via_j) option.remove_prefix(2);
  if (via_j && (option == "-XX:-DisableAttachMechanism" || option == "-XX:-ReduceSignalUsage")) {
    return;
  }
  if (option == "-XX:+DisableAttachMechanism") {
    disabled = true;
    disabled_by = origin;
  } else if (option == "-XX:-DisableAttachMechanism") {
    disabled = false;
  } else if (option == "-Xrs" || option == "-XX:+ReduceSignalUsage") {
    reduced = true;
    reduced_by = origin;
  } else if (option == "-XX:-ReduceSignalUsage") {
    reduced = false;
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

SignalVerdict DecideSignal(const SignalFacts& f, std::string* where) {
  std::string unused;
  std::string& by = where != nullptr ? *where : unused;
  by.clear();
  if (!f.is_hotspot) return SignalVerdict::kNotHotspot;
  if (f.signalled_before) return SignalVerdict::kSignalledBefore;
  bool disabled = false, reduced = false;
  std::string disabled_by, reduced_by;
  if (f.perf_attach_supported.has_value()) {
    // The JVM's resolved value beats any reading of its options.
    if (!*f.perf_attach_supported) {
      by = "the JVM's hsperfdata";
      return SignalVerdict::kAttachDisabled;
    }
    std::string_view args = f.perf_vm_args;
    for (std::string_view tok = text::NextToken(args); !tok.empty(); tok = text::NextToken(args)) {
      Apply(tok, "the JVM's hsperfdata", disabled, reduced, disabled_by, reduced_by);
    }
  } else {
    if (!f.options_known) return SignalVerdict::kOptionsUnknown;
    for (const JvmOption& o : f.options) {
      Apply(o.text, o.origin, disabled, reduced, disabled_by, reduced_by);
    }
    if (disabled) {
      by = disabled_by;
      return SignalVerdict::kAttachDisabled;
    }
  }
  if (reduced) {
    by = reduced_by;
    return SignalVerdict::kReducedSignals;
  }
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
      return "attach disabled (-XX:+DisableAttachMechanism): SIGQUIT would only print a thread "
             "dump";
    case SignalVerdict::kReducedSignals:
      return "started with -Xrs: SIGQUIT would kill it, and its attach listener is not running";
    case SignalVerdict::kNotHotspot:
      return "not a HotSpot JVM (no libjvm.so mapped)";
    case SignalVerdict::kSigquitNotCaught:
      return "SIGQUIT is not caught (JVM still starting, or the signal is ignored)";
    case SignalVerdict::kOptionsUnknown:
      return "it has no hsperfdata and memtrimd cannot read all of its options to rule out "
             "-XX:+DisableAttachMechanism and -Xrs";
    case SignalVerdict::kSignalledBefore:
      return "an earlier SIGQUIT did not start its attach listener; memtrimd signals a JVM "
             "at most once";
  }
  return "unknown";
}

}  // namespace memtrimd::jvm

// Fuzz target: the attach protocol's request side (jvm::EncodeRequestV1)
// and the SIGQUIT decision (jvm::DecideSignal). Input: op, arg0, arg1, arg2
// separated by NUL or newline for the request; for the decision the same
// four pieces, split at blanks, are JVM options from four sources, and the
// piece count and size pick the other facts.
//
// Invariants: an accepted request is "1" NUL op NUL arg0 NUL arg1 NUL arg2
// NUL, so splitting it at NUL gives back exactly the parts; it is refused
// exactly when a part is too long or holds a newline, CR or NUL (the input
// split already removed NUL and newline, so only CR and the lengths are
// left). DecideSignal: not a HotSpot JVM, an earlier signal without effect
// and (without the JVM's own verdict) unknown options always win; the JVM's
// "attach disabled" always wins over options; otherwise the last of
// +/-DisableAttachMechanism counts.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/jvm/attach_protocol.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

namespace jvm = memtrimd::jvm;

bool Bad(const std::string& s, std::size_t max) {
  return s.size() > max || s.find('\r') != std::string::npos;
}

void CheckRequest(const std::vector<std::string>& p) {
  auto req = jvm::EncodeRequestV1(p[0], p[1], p[2], p[3]);
  bool refuse =
      p[0].empty() || Bad(p[0], 16) || Bad(p[1], 1024) || Bad(p[2], 1024) || Bad(p[3], 1024);
  FUZZ_CHECK(req.ok() == !refuse);
  if (!req.ok()) {
    FUZZ_CHECK(req.status().code() == memtrimd::ErrorCode::kInvalidArgument);
    return;
  }
  std::string expected = std::string("1") + '\0';
  for (const std::string& part : p) expected += part + '\0';
  FUZZ_CHECK(*req == expected);
}

void CheckSignal(const std::vector<std::string>& p, uint64_t bits) {
  jvm::SignalFacts f;
  f.is_hotspot = (bits & 1) != 0;
  f.options_known = (bits & 2) != 0;
  const uint64_t quit = 1ull << 2;  // SIGQUIT is 3
  f.sig_caught = (bits & 4) ? quit : 0;
  f.sig_ignored = (bits & 8) ? quit : 0;
  f.signalled_before = (bits & 16) != 0;
  if (bits & 32) f.perf_attach_supported = (bits & 64) != 0;
  f.perf_vm_args = p[0];
  const char* origins[] = {"JAVA_TOOL_OPTIONS", "command line", "@argfile", "_JAVA_OPTIONS"};
  for (std::size_t i = 0; i < 4; ++i) {
    std::string_view rest = p[i];
    while (!rest.empty()) {
      std::size_t sp = rest.find(' ');
      f.options.push_back({std::string(rest.substr(0, sp)), origins[i]});
      if (sp == std::string_view::npos) break;
      rest.remove_prefix(sp + 1);
    }
  }
  std::string where;
  jvm::SignalVerdict v = jvm::DecideSignal(f, &where);
  FUZZ_CHECK(jvm::SignalVerdictText(v) != nullptr);
  if (!f.is_hotspot) FUZZ_CHECK(v == jvm::SignalVerdict::kNotHotspot);
  if (f.is_hotspot && f.signalled_before) FUZZ_CHECK(v == jvm::SignalVerdict::kSignalledBefore);
  const bool live = f.is_hotspot && !f.signalled_before;
  if (live && !f.perf_attach_supported && !f.options_known) {
    FUZZ_CHECK(v == jvm::SignalVerdict::kOptionsUnknown);
  }
  if (live && f.perf_attach_supported == false) {
    FUZZ_CHECK(v == jvm::SignalVerdict::kAttachDisabled && where == "the JVM's hsperfdata");
  }
  if (v == jvm::SignalVerdict::kMaySignal) FUZZ_CHECK(f.sig_caught != 0 && f.sig_ignored == 0);
  if (v == jvm::SignalVerdict::kAttachDisabled) FUZZ_CHECK(!where.empty());
  // Appending a later option (read last) decides the question when the JVM
  // gave no verdict of its own.
  jvm::SignalFacts off = f;
  off.options.push_back({"-XX:+DisableAttachMechanism", "_JAVA_OPTIONS"});
  if (live && !f.perf_attach_supported && f.options_known) {
    FUZZ_CHECK(jvm::DecideSignal(off) == jvm::SignalVerdict::kAttachDisabled);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> parts = memtrimd::fuzz::SplitArgs(memtrimd::fuzz::AsText(data, size));
  uint64_t bits = parts.size();
  parts.resize(4);
  CheckRequest(parts);
  CheckSignal(parts, bits ^ size);
  return 0;
}

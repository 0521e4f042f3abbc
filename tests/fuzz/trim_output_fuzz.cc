// Fuzz target: `System.trim_native_heap` output in all its JDK formats
// (jvm::ParseTrimOutput), and the size parser it uses (jvm::ParseJvmSize).
//
// Invariants: a trimmed report has before, after and delta, the others
// none; |delta| fits in int64; a trimmed report written back in the
// current format ("Trim native heap: RSS+Swap: <b>B-><a>B (<delta>B)")
// parses to the same report. ParseJvmSize: plain digits are bytes, and a
// value written back with a "B" suffix reads the same.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "collectors/common/text.h"
#include "collectors/jvm/jvm_text.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using memtrimd::jvm::TrimReport;

std::string Signed(int64_t v) {
  // |v| <= INT64_MAX here (checked before).
  return (v < 0 ? "-" : "+") + std::to_string(v < 0 ? -v : v) + "B";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using memtrimd::jvm::ParseJvmSize;
  using memtrimd::jvm::ParseTrimOutput;
  std::string_view text = memtrimd::fuzz::AsText(data, size);

  if (auto v = ParseJvmSize(text)) {
    auto again = ParseJvmSize(std::to_string(*v) + "B");
    FUZZ_CHECK(again && *again == *v);
    if (auto plain = memtrimd::text::ParseUint(memtrimd::text::Trim(text))) {
      FUZZ_CHECK(*plain == *v);
    }
  }

  auto trim = ParseTrimOutput(text);
  if (!trim.ok()) return 0;
  const TrimReport& r = *trim;
  if (r.outcome != TrimReport::Outcome::kTrimmed) {
    FUZZ_CHECK(!r.rss_swap_before && !r.rss_swap_after && !r.delta);
    return 0;
  }
  FUZZ_CHECK(r.rss_swap_before && r.rss_swap_after && r.delta);
  FUZZ_CHECK(*r.delta != std::numeric_limits<int64_t>::min());
  std::string line = "Trim native heap: RSS+Swap: " + std::to_string(*r.rss_swap_before) + "B->" +
                     std::to_string(*r.rss_swap_after) + "B (" + Signed(*r.delta) + ")\n";
  auto again = ParseTrimOutput(line);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->outcome == r.outcome && again->rss_swap_before == r.rss_swap_before &&
             again->rss_swap_after == r.rss_swap_after && again->delta == r.delta);
  return 0;
}

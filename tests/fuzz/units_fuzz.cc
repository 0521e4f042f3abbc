// Fuzz target: durations, byte sizes and pids as users write them in flags
// and environment variables (ParseDuration, ParseByteSize, ParsePid in
// daemon/units).
//
// Invariants: a duration is non-negative and FormatDuration's text of it
// parses back to it; a size and a pid written in plain decimal parse back
// to themselves; a pid is 1 to 999999999; FormatBytes never fails.
#include <cstddef>
#include <cstdint>
#include <string>

#include "daemon/base/units.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memtrimd;
  std::string_view text = memtrimd::fuzz::AsText(data, size);

  if (auto d = ParseDuration(text)) {
    FUZZ_CHECK(d->count() >= 0);
    std::string formatted = FormatDuration(*d);
    auto again = ParseDuration(formatted);
    FUZZ_CHECK(again && *again == *d);
  }
  if (auto b = ParseByteSize(text)) {
    auto again = ParseByteSize(std::to_string(*b));
    FUZZ_CHECK(again && *again == *b);
    FUZZ_CHECK(!FormatBytes(static_cast<double>(*b)).empty());
  }
  if (auto p = ParsePid(text)) {
    FUZZ_CHECK(*p >= 1 && *p <= 999999999);
    auto again = ParsePid(std::to_string(*p));
    FUZZ_CHECK(again && *again == *p);
  }
  return 0;
}

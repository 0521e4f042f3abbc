// Fuzz target: cgroup v2 memory.max (cgroup::ParseMemoryMax).
//
// Invariants: "max" is the only way to no limit; a number agrees with
// ParseSingleValue on the same text and survives a round trip.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/cgroup/cgroup_files.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace cgroup = memtrimd::cgroup;
  std::string_view text = memtrimd::fuzz::AsText(data, size);
  auto max = cgroup::ParseMemoryMax(text);
  if (!max.ok()) return 0;
  auto single = cgroup::ParseSingleValue(text);
  if (!max->has_value()) {
    FUZZ_CHECK(!single.ok());
    FUZZ_CHECK(text.find("max") != std::string_view::npos);
    return 0;
  }
  FUZZ_CHECK(single.ok() && *single == **max);
  auto again = cgroup::ParseMemoryMax(std::to_string(**max) + "\n");
  FUZZ_CHECK(again.ok() && *again == *max);
  return 0;
}

// Fuzz target: cgroup v1 memory.limit_in_bytes (cgroup::ParseV1Limit).
//
// Invariants: a limit is below 2^62 (at or above means unlimited) and
// agrees with ParseSingleValue; an unlimited answer is a number >= 2^62.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/cgroup/cgroup_files.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace cgroup = memtrimd::cgroup;
  std::string_view text = memtrimd::fuzz::AsText(data, size);
  auto limit = cgroup::ParseV1Limit(text);
  auto single = cgroup::ParseSingleValue(text);
  FUZZ_CHECK(limit.ok() == single.ok());
  if (!limit.ok()) return 0;
  if (limit->has_value()) {
    FUZZ_CHECK(**limit < (1ull << 62));
    FUZZ_CHECK(**limit == *single);
  } else {
    FUZZ_CHECK(*single >= (1ull << 62));
  }
  return 0;
}

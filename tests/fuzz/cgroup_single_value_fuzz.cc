// Fuzz target: single-number cgroup files, memory.current,
// memory.usage_in_bytes, memory.swap.current (cgroup::ParseSingleValue).
//
// Invariants: only digits and surrounding blanks are accepted; a value is
// what its decimal text says (round trip, with blanks around it).
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/cgroup/cgroup_files.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace cgroup = memtrimd::cgroup;
  std::string_view text = memtrimd::fuzz::AsText(data, size);
  auto v = cgroup::ParseSingleValue(text);
  if (!v.ok()) return 0;
  // Only digits (1 to 20 of them) and the blanks around them.
  std::size_t digits = 0;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      ++digits;
    } else {
      FUZZ_CHECK(c == ' ' || c == '\t' || c == '\n' || c == '\r');
    }
  }
  FUZZ_CHECK(digits >= 1 && digits <= 20);
  auto again = cgroup::ParseSingleValue(" " + std::to_string(*v) + "\r\n");
  FUZZ_CHECK(again.ok() && *again == *v);
  return 0;
}

// Fuzz target: the cgroup file parsers.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "collectors/cgroup/cgroup_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memtrimd::cgroup;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)ParseProcCgroup(text);
  (void)ParseMemoryMax(text);
  (void)ParseV1Limit(text);
  (void)ParseSingleValue(text);
  (void)ParseFlatKeyed(text);
  return 0;
}

// Fuzz target: flat keyed cgroup files, memory.stat, memory.events,
// memory.oom_control (cgroup::ParseFlatKeyed).
//
// Invariants: keys are non-empty and hold no blank; the map written back
// as "key value" lines parses to the same map.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/cgroup/cgroup_files.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using memtrimd::cgroup::ParseFlatKeyed;
  auto kv = ParseFlatKeyed(memtrimd::fuzz::AsText(data, size));
  if (!kv.ok()) return 0;
  std::string text;
  for (const auto& [key, value] : *kv) {
    FUZZ_CHECK(!key.empty());
    FUZZ_CHECK(key.find_first_of(" \t\n") == std::string::npos);
    text += key + " " + std::to_string(value) + "\n";
  }
  auto again = ParseFlatKeyed(text);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(*again == *kv);
  return 0;
}

// Fuzz target: /proc/<pid>/cgroup (cgroup::ParseProcCgroup).
//
// Invariants: a success found a v2 or a v1 memory entry; the paths it
// found, written back as "0::<path>" and "<n>:memory:<path>" lines, parse to
// the same answer.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/cgroup/cgroup_files.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using memtrimd::cgroup::ParseProcCgroup;
  auto cg = ParseProcCgroup(memtrimd::fuzz::AsText(data, size));
  if (!cg.ok()) return 0;
  FUZZ_CHECK(cg->unified || cg->v1_memory);
  std::string text;
  if (cg->v1_memory) text += "4:cpu,memory:" + *cg->v1_memory + "\n";
  text += "3:pids:/ignored\n";
  if (cg->unified) text += "0::" + *cg->unified + "\n";
  auto again = ParseProcCgroup(text);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->unified == cg->unified && again->v1_memory == cg->v1_memory);
  return 0;
}

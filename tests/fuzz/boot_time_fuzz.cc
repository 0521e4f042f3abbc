// Fuzz target: the "btime" line of /proc/stat (procfs::ParseBootTime).
//
// Invariant: the value it found, written as a btime line after the input,
// is what a second parse finds (the last btime line counts).
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/procfs/proc_stat.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = memtrimd::fuzz::AsText(data, size);
  auto bt = memtrimd::procfs::ParseBootTime(text);
  if (!bt.ok()) return 0;
  auto again = memtrimd::procfs::ParseBootTime("btime " + std::to_string(*bt) + "\n");
  FUZZ_CHECK(again.ok() && *again == *bt);
  auto appended = memtrimd::procfs::ParseBootTime(std::string(text) + "\nbtime 42\n");
  FUZZ_CHECK(appended.ok() && *appended == 42);
  return 0;
}

// Fuzz target: /proc/<pid>/cmdline (procfs::CmdlineToString), what
// --target.match is applied to.
//
// Invariants: no NUL survives; trailing NULs are dropped and every other
// byte is kept in place (NUL becomes a space).
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/procfs/cmdline.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view raw = memtrimd::fuzz::AsText(data, size);
  std::string line = memtrimd::procfs::CmdlineToString(raw);
  std::size_t kept = raw.size();
  while (kept > 0 && raw[kept - 1] == '\0') --kept;
  FUZZ_CHECK(line.size() == kept);
  for (std::size_t i = 0; i < kept; ++i) {
    FUZZ_CHECK(line[i] == (raw[i] == '\0' ? ' ' : raw[i]));
  }
  return 0;
}

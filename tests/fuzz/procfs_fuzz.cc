// Fuzz target: the /proc parsers (status, stat, smaps + arena detection,
// cmdline, maps runtime). They must never crash on any input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "collectors/glibc/arena_heap.h"
#include "collectors/procfs/cmdline.h"
#include "collectors/procfs/proc_stat.h"
#include "collectors/procfs/proc_status.h"
#include "collectors/procfs/runtime.h"
#include "collectors/procfs/smaps.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memtrimd;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)procfs::ParseProcStatus(text);
  (void)procfs::ParseProcStat(text);
  (void)procfs::ParseBootTime(text);
  (void)procfs::CmdlineToString(text);
  (void)procfs::RuntimeFromMaps(text);
  auto maps = procfs::ParseSmaps(text);
  if (maps.ok()) {
    (void)glibc::FindArenaHeaps(*maps);
    (void)glibc::FindArenaHeaps(*maps, 8u << 20);
    (void)glibc::MainArenaResident(*maps);
  }
  return 0;
}

// /proc/<pid>/maps as symbolisation reads it: every mapping with the file,
// device, inode and file offset behind it (smaps.h keeps only what the
// memory figures need, and reads the costly smaps).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/status.h"

namespace memtrimd::procfs {

struct MapsEntry {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;  // of `start` in the mapped file
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  uint64_t inode = 0;
  bool executable = false;
  // The path as the target sees it (inside its root), without the kernel's
  // " (deleted)" suffix and with its "\012" turned back into the newline it
  // stands for; "" for anonymous memory, "[heap]", "[vdso]", ... Only a name:
  // what it names now need not be what was mapped (target_elf.h checks).
  std::string path;
  bool deleted = false;  // the file was removed or replaced since it was mapped

  // A regular file behind the mapping (not anonymous, not a [special] one).
  bool IsFile() const { return inode != 0 && !path.empty() && path[0] == '/'; }
};

// Pure: every line of a maps text, in the kernel's order (ascending, not
// overlapping: kParseError otherwise, with the line's number, as for a
// line that is not "start-end perms offset dev inode [path]").
Result<std::vector<MapsEntry>> ParseMaps(std::string_view text);

// The mapping that holds `address`, or nullptr (maps as ParseMaps returns
// them: sorted).
const MapsEntry* FindMapping(std::span<const MapsEntry> maps, uint64_t address);

}  // namespace memtrimd::procfs

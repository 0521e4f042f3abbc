// Collector "glibc": arena heaps and the main arena from /proc/<pid>/smaps.
// Expensive for the target (its mmap lock is held during the walk): the
// daemon runs it on --smaps.interval, not every sample.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectors/common/collector.h"
#include "collectors/glibc/arena_heap.h"
#include "collectors/glibc/heap_info.h"
#include "collectors/procfs/pagemap.h"
#include "collectors/procfs/smaps.h"

namespace memtrimd::glibc {

struct GlibcHeapOptions {
  uint64_t heap_size = kDefaultHeapSize;
  bool confirm_with_heap_info = true;
  // How headers are read: from the target's memory, unless a recording is
  // replayed (tests/readme).
  HeapInfoReader read_heap_info = ReadHeapInfo;
  // Where the pages' residency comes from: the target's pagemap, unless a
  // recording is replayed.
  procfs::PageResidencyOpener open_pages = procfs::OpenPagemap;
  // A smaps larger than this is refused rather than read (65,530 mappings,
  // the kernel's default map count limit, is about 80 MiB of smaps).
  std::size_t max_smaps_bytes = 256u << 20;
};

// Ok when `target` is still the same live process (same start time, not a
// zombie); kNotFound otherwise. Checked after a smaps walk, whose end
// cannot tell a complete read from one cut short by the target's exit.
Status StillTheTarget(const Target& target);

class GlibcHeapCollector : public Collector {
 public:
  explicit GlibcHeapCollector(GlibcHeapOptions options) : options_(options) {}
  std::string_view Name() const override { return "glibc"; }
  Status Collect(const Target& target, TargetSample& out) override;

 private:
  GlibcHeapOptions options_;
  // Kept between reads so a steady target does not re-allocate every time.
  std::vector<procfs::Mapping> storage_;
};

}  // namespace memtrimd::glibc

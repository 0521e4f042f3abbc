#include "collectors/glibc/glibc_heap_collector.h"

#include <algorithm>
#include <chrono>

#include "collectors/common/file_reader.h"
#include "collectors/glibc/heap_info.h"
#include "collectors/glibc/rss_breakdown.h"
#include "collectors/procfs/proc_status.h"
#include "collectors/procfs/target_reader.h"
#include "collectors/sample.h"

namespace memtrimd::glibc {

Status StillTheTarget(const Target& target) {
  Result<uint64_t> ticks = procfs::ReadStartTicks(target.proc_dir);
  if (ticks.ok() && *ticks == target.start_ticks) return Status::Ok();
  return Status(ErrorCode::kNotFound,
                "the target exited during the smaps read (" +
                    (ticks.ok() ? std::string("pid reused") : ticks.status().message()) +
                    "); the read is discarded");
}

Status GlibcHeapCollector::Collect(const Target& target, TargetSample& out) {
  auto t0 = std::chrono::steady_clock::now();
  procfs::SmapsParser parser;
  parser.Reset(std::move(storage_));
  Status read = ForEachLine(target.proc_dir + "/smaps", options_.max_smaps_bytes,
                            [&](std::string_view line) { parser.Feed(line); });
  Result<std::vector<procfs::Mapping>> mappings = parser.Finish();
  if (!read.ok()) {
    if (mappings.ok()) storage_ = std::move(mappings).value();
    return read;
  }
  if (!mappings.ok()) return mappings.status();
  // A target that exits during the walk ends the file early, at a record
  // boundary and without an error: what was read is part of a process, and
  // its breakdown would not add up. Only a read after which the target is
  // still the same live process counts.
  if (Status same = StillTheTarget(target); !same.ok()) {
    storage_ = std::move(mappings).value();
    return same;
  }

  GlibcHeaps g;
  g.read_at = std::chrono::system_clock::now();
  g.read_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  g.mappings = mappings->size();
  for (const procfs::Mapping& m : *mappings) g.smaps_rss_bytes += m.rss;
  g.arenas_not_applicable = GlibcMallocNotApplicable(target);
  g.allocator = target.allocator;
  // Under another allocator glibc's arenas hold (almost) nothing, and an
  // allocator's own 64 MiB-aligned regions must not be taken for them.
  if (g.arenas_not_applicable.empty()) {
    g.main_arena_resident_bytes = MainArenaResident(*mappings);
    g.heaps = FindArenaHeaps(*mappings, options_.heap_size);
  }
  if (options_.confirm_with_heap_info) ConfirmArenaHeaps(target.pid, g.heaps, options_.heap_size);
  auto rejected = std::remove_if(g.heaps.begin(), g.heaps.end(), [](const ArenaHeap& h) {
    return h.check == HeapCheck::kRejected;
  });
  g.rejected = static_cast<std::size_t>(g.heaps.end() - rejected);
  g.heaps.erase(rejected, g.heaps.end());
  for (const ArenaHeap& h : g.heaps) {
    g.usable_bytes += h.usable_bytes;
    g.resident_bytes += h.resident_bytes;
    if (h.check == HeapCheck::kConfirmed) ++g.confirmed;
  }
  // The Java heap's range comes from the JVM collector, which runs earlier in
  // the same sample.
  std::optional<AddressRange> java_heap;
  if (out.jvm && out.jvm->gc_heap && out.jvm->gc_heap->start && out.jvm->gc_heap->end) {
    java_heap = AddressRange{*out.jvm->gc_heap->start, *out.jvm->gc_heap->end};
  }
  g.breakdown = BreakDownRss(*mappings, g.heaps, java_heap);
  g.java_heap_known = java_heap.has_value();
  // status read right after the walk: the fair comparison for the breakdown's
  // total (a JVM's RSS moves while memtrimd talks to it earlier in a sample).
  if (Result<std::string> status = ReadSmallFile(target.proc_dir + "/status"); status.ok()) {
    if (Result<procfs::ProcStatus> st = procfs::ParseProcStatus(*status); st.ok()) {
      if (!st->has_memory) {
        storage_ = std::move(mappings).value();
        return Status(ErrorCode::kNotFound, "the target exited during the smaps read");
      }
      g.status_rss_bytes = st->rss_anon + st->rss_file + st->rss_shmem;
    }
  }
  storage_ = std::move(mappings).value();
  out.glibc = std::move(g);
  return Status::Ok();
}

}  // namespace memtrimd::glibc

#include "collectors/glibc/glibc_heap_collector.h"

#include <algorithm>
#include <chrono>

#include "collectors/common/file_reader.h"
#include "collectors/glibc/glibc_heaps.h"
#include "collectors/glibc/heap_info.h"
#include "collectors/glibc/rss_breakdown.h"
#include "collectors/procfs/pagemap.h"
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
                    "); the read is discarded",
                FirstCause(ticks.status().cause(), Cause::kGone));
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
  g.read_steady = std::chrono::steady_clock::now();
  g.read_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  g.mappings = mappings->size();
  for (const procfs::Mapping& m : *mappings) g.smaps_rss_bytes += m.rss;
  g.arenas_not_applicable = GlibcMallocNotApplicable(target);
  g.allocator = target.allocator;
  // The Java heap's range comes from the JVM collector, which runs earlier in
  // the same sample. Nothing inside it is taken for an arena heap or read.
  std::optional<AddressRange> java_heap;
  if (out.jvm && out.jvm->gc_heap && out.jvm->gc_heap->start && out.jvm->gc_heap->end) {
    java_heap = AddressRange{*out.jvm->gc_heap->start, *out.jvm->gc_heap->end};
  }
  // Under another allocator glibc's arenas hold (almost) nothing, and an
  // allocator's own 64 MiB-aligned regions must not be taken for them.
  if (g.arenas_not_applicable.empty()) {
    g.main_arena_resident_bytes = MainArenaResident(*mappings);
    HeapCandidates c = FindHeapCandidates(*mappings, options_.heap_size, java_heap);
    g.heaps = std::move(c.heaps);
    g.merged_skipped = c.merged_skipped;
  }
  const bool any_merged = std::any_of(g.heaps.begin(), g.heaps.end(), [](const ArenaHeap& h) {
    return h.shape == HeapShape::kMerged;
  });
  if (options_.confirm_with_heap_info && !g.heaps.empty()) {
    // pagemap: whether a merged candidate's header page exists, and its
    // heap's resident pages. Opened only when there is a merged candidate.
    std::unique_ptr<procfs::PageResidency> pagemap;
    if (any_merged) {
      Result<std::unique_ptr<procfs::PageResidency>> pm = options_.open_pages(target.proc_dir);
      if (pm.ok()) {
        pagemap = std::move(pm).value();
      } else {
        g.headers_unread = pm.status().message();
      }
    }
    Status st = ConfirmArenaHeaps(procfs::ReadingTask(target), g.heaps, options_.heap_size,
                                  pagemap.get(), options_.read_heap_info);
    if (!st.ok()) g.headers_unread = st.message();
    if (pagemap) {
      for (ArenaHeap& h : g.heaps) {
        if (h.shape != HeapShape::kMerged || h.check != HeapCheck::kConfirmed) continue;
        Result<uint64_t> resident = pagemap->ResidentBytes(h.start, h.usable_bytes);
        // Unreadable now (unmapped since smaps was read): not counted.
        if (resident.ok()) {
          h.resident_bytes = *resident;
        } else {
          h.check = HeapCheck::kShapeOnly;
        }
      }
    }
  } else if (any_merged) {
    g.headers_unread = "heap headers are not read (confirmation off)";
  }
  // A merged candidate whose header says "no heap" is just some other large
  // mapping crossing a boundary; only heaps of the exact shape count as
  // rejected.
  g.rejected = static_cast<std::size_t>(
      std::count_if(g.heaps.begin(), g.heaps.end(), [](const ArenaHeap& h) {
        return h.shape == HeapShape::kOwnMapping && h.check == HeapCheck::kRejected;
      }));
  g.merged_unconfirmed = KeepCountedHeaps(g.heaps);
  FitResidentToMappings(*mappings, g.heaps);
  for (const ArenaHeap& h : g.heaps) {
    g.usable_bytes += h.usable_bytes;
    g.resident_bytes += h.resident_bytes;
    if (h.check == HeapCheck::kConfirmed) ++g.confirmed;
    if (h.shape == HeapShape::kMerged) ++g.merged;
  }
  g.breakdown = BreakDownRss(*mappings, g.heaps, java_heap);
  g.java_heap_known = java_heap.has_value();
  // status read right after the walk: the fair comparison for the breakdown's
  // total (a JVM's RSS moves while memtrimd talks to it earlier in a sample).
  if (Result<std::string> status = ReadSmallFile(target.proc_dir + "/status"); status.ok()) {
    if (Result<procfs::ProcStatus> st = procfs::ParseProcStatus(*status); st.ok()) {
      if (!st->has_memory) {
        storage_ = std::move(mappings).value();
        return Status(ErrorCode::kNotFound, "the target exited during the smaps read",
                      Cause::kGone);
      }
      g.status_rss_bytes = st->Rss();
    }
  }
  storage_ = std::move(mappings).value();
  out.glibc = std::move(g);
  return Status::Ok();
}

}  // namespace memtrimd::glibc

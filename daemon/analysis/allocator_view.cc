#include "daemon/analysis/allocator_view.h"

#include "daemon/analysis/findings.h"
#include "daemon/analysis/rss_account.h"

namespace memtrimd {
namespace {

// glibc's common measures from malloc_info (see CommonMeasures for the
// agent's mallinfo2 mapping, which these match: in-use chunks, what the
// arenas and the mmapped chunks hold; free_kept is replaced below).
agent::AllocatorMeasures FromMallocInfo(const jvm::MallocInfo& m) {
  agent::AllocatorMeasures out;
  const uint64_t held = m.system_current + m.total_mmap_bytes;
  const uint64_t free = m.total_fast_bytes + m.total_rest_bytes;
  out.held = held;
  out.allocated = held > free ? held - free : 0;
  return out;
}

// glibc's free chunks as malloc counts them (fordblks) include those whose
// pages a trim already gave back: the free memory kept is the resident part,
// and what a release gives is the trimmable part of that.
void GlibcFreeFigures(const TargetSample& s, AllocatorView& v) {
  v.measures.free_kept = GlibcFreeResident(s);
  v.release_gives = TrimmableEstimate(s);
}

}  // namespace

AllocatorView ViewAllocator(const Target& target, const TargetSample& sample) {
  AllocatorView v;
  v.allocator = target.allocator;
  v.source = target.allocator_source;
  if (sample.allocator) {
    const agent::AllocatorStats& a = *sample.allocator;
    v.allocator = a.allocator;
    v.source = "the agent: malloc is served by " + a.object;
    v.measures = agent::CommonMeasures(a);
    v.measures_from = "agent";
    if (a.allocator == Allocator::kGlibc) {
      GlibcFreeFigures(sample, v);
    } else {
      v.release_gives = v.measures.free_kept;
    }
    return v;
  }
  if (sample.malloc && v.allocator == Allocator::kGlibc) {
    v.measures = FromMallocInfo(sample.malloc->info);
    v.measures_from = "malloc_info";
    GlibcFreeFigures(sample, v);
    return v;
  }
  switch (v.allocator) {
    case Allocator::kMusl:
      v.missing = "musl's malloc has no statistics interface";
      break;
    case Allocator::kUnknown:
      v.missing = "no C library or allocator memtrimd knows is mapped";
      break;
    default:
      if (!sample.allocator_missing.empty()) {
        v.missing = sample.allocator_missing;
      } else if (!sample.agent_unreachable.empty()) {
        v.missing = "agent unreachable: " + sample.agent_unreachable;
      } else if (!sample.agent_loaded) {
        v.missing = "libmemtrimd_agent.so is not preloaded (it reads the allocator's own figures)";
      } else {
        v.missing = "not read yet";
      }
  }
  return v;
}

}  // namespace memtrimd

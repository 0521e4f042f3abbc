#include "daemon/findings.h"

#include "collectors/common/text.h"
#include "daemon/units.h"

namespace memtrimd {

std::optional<uint64_t> SettingBytes(const TargetSample& s, const char* name) {
  if (!s.jvm) return std::nullopt;
  auto it = s.jvm->settings.find(name);
  if (it == s.jvm->settings.end()) return std::nullopt;
  return text::ParseUint(it->second);
}

DirectMemory DirectMemoryOf(const TargetSample& s) {
  DirectMemory d;
  if (!s.jvm || !s.jvm->attachable) return d;
  if (s.jvm->nmt && s.jvm->nmt->enabled) {
    if (const jvm::NmtCategory* other = s.jvm->nmt->Find("Other")) d.used_bytes = other->committed;
  }
  std::optional<uint64_t> max_direct = SettingBytes(s, "MaxDirectMemorySize");
  if (max_direct && *max_direct > 0) {
    d.limit_bytes = max_direct;
  } else if (auto heap = JavaHeapOf(s).max) {
    // (JavaHeapOf prefers MaxHeapSize, which is what the JDK uses.)
    // With MaxDirectMemorySize unset (or 0) the JDK allows as much direct
    // memory as Runtime.maxMemory(), about the max heap size.
    d.limit_bytes = heap;
    d.limit_is_max_heap = true;
  }
  if (d.used_bytes && d.limit_bytes && *d.limit_bytes > 0) {
    d.ratio = static_cast<double>(*d.used_bytes) / static_cast<double>(*d.limit_bytes);
  }
  return d;
}

JavaHeap JavaHeapOf(const TargetSample& s) {
  JavaHeap h;
  // The flag is exact; hsperfdata's generation maxima can add up to a few
  // bytes more.
  h.max = SettingBytes(s, "MaxHeapSize");
  if (s.jvm_perf) {
    h.committed = s.jvm_perf->heap.committed_bytes;
    h.used = s.jvm_perf->heap.used_bytes;
    if (!h.max && s.jvm_perf->heap.max_bytes > 0) h.max = s.jvm_perf->heap.max_bytes;
    h.source = "hsperfdata";
  } else if (s.jvm && s.jvm->gc_heap) {
    h.committed = s.jvm->gc_heap->committed_bytes;
    h.used = s.jvm->gc_heap->used_bytes;
    h.source = "GC.heap_info";
  }
  return h;
}

std::optional<int64_t> NmtGapBytes(const TargetSample& s) {
  if (!s.process || !s.jvm || !s.jvm->nmt || !s.jvm->nmt->enabled) return std::nullopt;
  uint64_t rss = s.process->rss_anon + s.process->rss_file + s.process->rss_shmem;
  return static_cast<int64_t>(rss) - static_cast<int64_t>(s.jvm->nmt->total_committed);
}

std::optional<uint64_t> TrimmableEstimate(const TargetSample& s) {
  if (!s.malloc) return std::nullopt;
  uint64_t sum = 0;
  for (const jvm::MallocArena& a : s.malloc->info.arenas) {
    sum += a.free_bytes_at_least_page;
    // malloc_trim also lowers brk by the main arena's top chunk (systrim);
    // other arenas' tops stay (only free() shrinks those heaps).
    if (a.nr == 0) sum += a.top_bytes;
  }
  return sum;
}

std::vector<RiskFinding> AssessJvmRisks(const TargetSample& s) {
  std::vector<RiskFinding> out;
  if (!s.jvm || !s.jvm->attachable) return out;
  const JvmSample& j = *s.jvm;
  auto setting = [&](const char* name) -> const std::string* {
    auto it = j.settings.find(name);
    return it == j.settings.end() ? nullptr : &it->second;
  };
  if (j.version) {
    bool unbounded = j.version->feature >= 18 && setting("jdk.nio.maxCachedBufferSize") == nullptr;
    out.push_back({"nio_cache_unbounded", unbounded,
                   unbounded ? "JDK " + std::to_string(j.version->feature) +
                                   " caches one temporary direct buffer per thread, as large as "
                                   "that thread's largest I/O; set "
                                   "-Djdk.nio.maxCachedBufferSize=262144 to bound it"
                             : "temporary direct buffer cache is bounded (JDK 17 and older read "
                               "in small chunks, or jdk.nio.maxCachedBufferSize is set)"});
  }
  if (const std::string* nmt = setting("NativeMemoryTracking")) {
    bool off = *nmt == "off";
    out.push_back({"nmt_off", off,
                   off ? "Native Memory Tracking is off: native memory cannot be attributed to "
                         "JVM categories (start with -XX:NativeMemoryTracking=summary)"
                       : "Native Memory Tracking is on (" + *nmt + ")"});
  }
  DirectMemory d = DirectMemoryOf(s);
  if (d.ratio) {
    bool high = *d.ratio > 0.9;
    out.push_back({"direct_memory_high", high,
                   "direct memory " + FormatBytes(static_cast<double>(*d.used_bytes)) + " of " +
                       FormatBytes(static_cast<double>(*d.limit_bytes)) +
                       (high ? ": above 90%, allocations will soon fail with "
                               "OutOfMemoryError: Direct buffer memory"
                             : "")});
  }
  if (const std::string* trim = setting("TrimNativeHeapInterval")) {
    auto ms = text::ParseUint(*trim);
    bool trims = ms && *ms > 0;
    out.push_back({"jvm_trims_itself", trims,
                   trims ? "the JVM trims its own native heap every " + *trim +
                               " ms (-XX:TrimNativeHeapInterval): do not trim it twice"
                         : "the JVM does not trim its native heap by itself"});
  } else if (j.version) {
    out.push_back({"jvm_trims_itself", false, "the JVM does not trim its native heap by itself"});
  }
  return out;
}

}  // namespace memtrimd

#include "daemon/analysis/findings.h"

#include <algorithm>
#include <cstdio>

#include "collectors/common/text.h"
#include "daemon/analysis/rss_account.h"
#include "daemon/base/units.h"

namespace memtrimd {
namespace {

// Above this share of MaxDirectMemorySize, the next reservations fail.
constexpr double kDirectHighRatio = 0.9;
// Full collections a second, with System.gc() as the last cause, above
// which there is a storm: the JDK's direct buffer reservation
// (java.nio.Bits.reserveMemory) calls System.gc() each time the pool is
// full, so a program that churns direct buffers near its limit runs dozens
// of full collections a second (75 to 154 measured with a 16 MiB limit).
// Young collections do not count (a busy heap runs hundreds a second), and
// the rate's window is at least a second, so a single System.gc() (a
// periodic one, every few seconds) never exceeds it.
constexpr double kStormFullCollectionsPerSecond = 1.0;
// The unbounded temporary buffer cache is a risk when it holds, now, at
// least this share of MaxDirectMemorySize on a JDK that counts it there
// (17-23): the program's own direct buffers have the rest, and the next
// larger read on a thread adds to it (reads then fail with "Cannot reserve
// ... direct buffer memory")...
constexpr double kNioCacheDirectShare = 0.25;
// ...or this share of the container's memory limit: memory neither the heap
// nor the pool's dashboards show, and enough of the limit to bring an OOM
// kill closer (the seed incident: 1.7 of 4 GiB outside the heap).
constexpr double kNioCacheContainerShare = 0.10;
// ...or grows by this much between two of the agent's reads (one
// --smaps.interval): it grows only when a thread reads more than it ever did,
// or a new thread reads, and it is kept for the thread's life, so growth of
// many MiB at a time is memory the process keeps adding, whatever its share.
constexpr uint64_t kNioCacheGrowthBytes = 16u << 20;

std::string Bytes(uint64_t b) { return FormatBytes(static_cast<double>(b)); }

const std::string* Setting(const TargetSample& s, const char* name) {
  if (!s.jvm) return nullptr;
  auto it = s.jvm->settings.find(name);
  return it == s.jvm->settings.end() ? nullptr : &it->second;
}

std::string Percent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f %%", ratio * 100);
  return buf;
}

// Full collections a second (FullCollections over the rate's window) and
// System.gc() as the last cause. hsperfdata keeps one cause, the last one:
// in a storm nearly every collection is a System.gc(), so a reading sees it.
bool GcStorm(const TargetSample& s, double* per_second) {
  if (!s.jvm_perf || !s.jvm_perf->gc || !s.jvm_perf->full_gc_per_second) return false;
  *per_second = *s.jvm_perf->full_gc_per_second;
  return *per_second > kStormFullCollectionsPerSecond &&
         s.jvm_perf->gc->last_cause == "System.gc()";
}

// What the temporary buffer cache holds now: exactly (the agent's walk) or
// at most (the JDK 24+ estimate, NMT Other less the pool; else NMT Other,
// which holds the cache on every JDK). nullopt: nothing bounds it.
struct CacheFigure {
  uint64_t bytes = 0;
  bool exact = false;
  std::string said;  // "the cache holds ... now", with where the figure comes from
};

std::optional<CacheFigure> CacheFigureOf(const TargetSample& s) {
  if (auto cache = TempBufferCacheOf(s)) {
    const bool exact = std::string(cache->source) == "agent";
    return CacheFigure{
        cache->bytes, exact,
        "the cache holds " + Bytes(cache->bytes) +
            (cache->buffers ? " in " + std::to_string(*cache->buffers) + " buffers" : "") +
            (exact ? "" : " at most (NMT Other minus the direct pool)") + " now"};
  }
  if (DirectMemory d = DirectMemoryOf(s); d.nmt_other_bytes) {
    return CacheFigure{*d.nmt_other_bytes, false,
                       "the cache holds at most " + Bytes(*d.nmt_other_bytes) +
                           " now (NMT Other, which also holds direct buffers, FFM and Unsafe "
                           "memory; preload libmemtrimd_agent.so to measure the cache itself)"};
  }
  return std::nullopt;
}

// What makes `bytes` of cache a threat now: the share of a limit it takes,
// e.g. "30 % of the direct memory limit (64.0 MiB)", or its growth since the
// agent's previous read; empty: none.
std::vector<std::string> NioCacheThreats(const TargetSample& s, uint64_t bytes) {
  std::vector<std::string> out;
  DirectMemory d = DirectMemoryOf(s);
  if (TempBuffersCountAgainstLimit(s) == true && d.limit_bytes && *d.limit_bytes > 0) {
    double r = static_cast<double>(bytes) / static_cast<double>(*d.limit_bytes);
    if (r >= kNioCacheDirectShare) {
      out.push_back(Percent(r) + " of the direct memory limit (" + Bytes(*d.limit_bytes) +
                    (d.limit_is_max_heap ? ", the max heap" : "") +
                    "), which it counts against on this JDK");
    }
  }
  if (s.cgroup && s.cgroup->limit_bytes && *s.cgroup->limit_bytes > 0) {
    double r = static_cast<double>(bytes) / static_cast<double>(*s.cgroup->limit_bytes);
    if (r >= kNioCacheContainerShare) {
      out.push_back(Percent(r) + " of the container's memory limit (" +
                    Bytes(*s.cgroup->limit_bytes) + ")");
    }
  }
  // Growth: from the agent's own figures only (the bounds say nothing of it).
  if (const JvmBuffers* b = s.jvm_buffers ? &*s.jvm_buffers : nullptr;
      b && b->temp_cache_bytes == bytes && b->temp_cache_previous_bytes &&
      bytes >= *b->temp_cache_previous_bytes + kNioCacheGrowthBytes) {
    out.push_back("grown by " + Bytes(bytes - *b->temp_cache_previous_bytes) +
                  " since the agent's previous read");
  }
  return out;
}

// nio_cache_unbounded: a risk only when the unbounded cache holds a share
// of a limit that matters now, or grows (NioCacheThreats, from an exact
// figure); not a risk when the property bounds it or when even an upper
// bound of the cache is under every share; undecided (nullopt) when only an
// upper bound reaches a share, or nothing bounds the cache. The unset
// property itself is advice (AdviseJvm), on every JVM.
std::optional<RiskFinding> NioCacheRisk(const TargetSample& s) {
  constexpr const char* kCheck = "nio_cache_unbounded";
  if (const std::string* bound = Setting(s, "jdk.nio.maxCachedBufferSize")) {
    return RiskFinding{kCheck, false,
                       "temporary buffer cache bounded: jdk.nio.maxCachedBufferSize=" + *bound};
  }
  std::optional<CacheFigure> cache = CacheFigureOf(s);
  if (!cache) return std::nullopt;
  std::vector<std::string> threats = NioCacheThreats(s, cache->bytes);
  if (!threats.empty() && !cache->exact) return std::nullopt;
  std::string line = "jdk.nio.maxCachedBufferSize is unset and " + cache->said;
  if (threats.empty()) {
    return RiskFinding{kCheck, false,
                       line + ": under " + Percent(kNioCacheDirectShare) +
                           " of the direct memory limit and " + Percent(kNioCacheContainerShare) +
                           " of the container's memory limit, and not growing by " +
                           Bytes(kNioCacheGrowthBytes) +
                           " between reads: no threat now (setting the property is advice)"};
  }
  for (std::size_t i = 0; i < threats.size(); ++i) {
    line += (i == 0 ? ": " : " and ") + threats[i];
  }
  return RiskFinding{kCheck, true,
                     line +
                         ". Every thread that reads or writes a heap buffer through a channel "
                         "keeps a temporary direct buffer as large as its largest read; set "
                         "-Djdk.nio.maxCachedBufferSize=262144 to bound it"};
}

// What to do about an error whatever read it: a capability memtrimd lacks
// (access.h), a process that is gone, a deadline. "" for any other cause.
std::string ErrorAction(Cause cause) {
  switch (cause) {
    case Cause::kNeedsCapability:
    case Cause::kNeedsCapabilityOrRoot:
      return "give memtrimd the capability named (securityContext.capabilities.add in a pod), or "
             "run it as the target's user";
    case Cause::kGone:
      return "nothing to do: the process exited, and leaves this page with the next sample";
    case Cause::kDeadline:
      return "nothing to do at once: memtrimd asks again at its next read; if it keeps timing "
             "out, the target is stalled or starved of CPU";
    default:
      return "";
  }
}

// What to do when the JVM's attach socket cannot be used (the attach
// client's causes).
std::string AttachAction(Cause cause) {
  if (std::string a = ErrorAction(cause); !a.empty()) return a;
  switch (cause) {
    // Options memtrimd cannot read all of leave -XX:+DisableAttachMechanism
    // possible: the same advice.
    case Cause::kAttachDisabled:
    case Cause::kJvmOptionsUnknown:
      return "start the JVM without -XX:+DisableAttachMechanism; NMT, JVM flags and malloc "
             "statistics need the attach socket";
    case Cause::kNotHotspot:
      return "nothing to do: memtrimd attaches to HotSpot JVMs only (heap figures still come "
             "from hsperfdata when the JVM writes it)";
    case Cause::kStarting:
      return "nothing to do yet: memtrimd tries again on the next --jvm.interval";
    case Cause::kNoAttachListener:
      return "start the JVM with -XX:+StartAttachListener (its attach socket then exists from the "
             "start and needs no signal), and check that memtrimd sees the JVM's /tmp, where the "
             "socket is made (shareProcessNamespace in a pod)";
    default:
      return "run 'memtrimd jcmd <pid> VM.version' beside memtrimd to see the same error by hand";
  }
}

// What to do when the loaded agent does not answer.
std::string AgentAction(Cause cause) {
  if (std::string a = ErrorAction(cause); !a.empty()) return a;
  return "memtrimd asks again every --smaps.interval; if this stays, the agent's own line on the "
         "target's stderr says why it did not serve its socket";
}

std::string With(std::string why, const std::string& action) {
  return action.empty() ? why : why + "; " + action;
}

}  // namespace

std::optional<uint64_t> SettingBytes(const TargetSample& s, const char* name) {
  const std::string* v = Setting(s, name);
  if (v == nullptr) return std::nullopt;
  return text::ParseUint(*v);
}

DirectMemory DirectMemoryOf(const TargetSample& s) {
  DirectMemory d;
  if (s.jvm_buffers) d.used_bytes = s.jvm_buffers->direct.memory_used;
  if (!s.jvm || !s.jvm->attachable) return d;  // the limit needs VM.flags
  if (s.jvm->nmt && s.jvm->nmt->enabled) {
    // NMT leaves out a category with nothing in it: then Other is 0.
    const jvm::NmtCategory* other = s.jvm->nmt->Find("Other");
    d.nmt_other_bytes = other != nullptr ? other->committed : 0;
  }
  std::optional<uint64_t> max_direct = SettingBytes(s, "MaxDirectMemorySize");
  if (max_direct && *max_direct > 0) {
    d.limit_bytes = max_direct;
  } else if (auto heap = JavaHeapOf(s).max) {
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

std::optional<bool> TempBuffersCountAgainstLimit(const TargetSample& s) {
  if (!s.jvm || !s.jvm->version) return std::nullopt;
  return s.jvm->version->feature < 24;
}

std::optional<TempBufferCache> TempBufferCacheOf(const TargetSample& s) {
  if (s.jvm_buffers && s.jvm_buffers->temp_cache_bytes) {
    return TempBufferCache{*s.jvm_buffers->temp_cache_bytes, s.jvm_buffers->temp_cache_buffers,
                           "agent"};
  }
  // On 24+ the cache is outside the pool: what NMT Other holds beyond the
  // pool is the cache, FFM and Unsafe memory. On 17-23 the cache is inside
  // the pool and cannot be told from allocateDirect without the agent.
  DirectMemory d = DirectMemoryOf(s);
  if (TempBuffersCountAgainstLimit(s) == false && s.jvm_buffers && d.nmt_other_bytes) {
    uint64_t pool = s.jvm_buffers->direct.memory_used;
    return TempBufferCache{*d.nmt_other_bytes > pool ? *d.nmt_other_bytes - pool : 0, std::nullopt,
                           "estimate"};
  }
  return std::nullopt;
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
    h.source = s.jvm_perf->source == "memory" ? "perf memory" : "hsperfdata";
  } else if (s.jvm && s.jvm->gc_heap) {
    h.committed = s.jvm->gc_heap->committed_bytes;
    h.used = s.jvm->gc_heap->used_bytes;
    h.source = "GC.heap_info";
  }
  return h;
}

std::optional<uint64_t> TrimmableEstimate(const TargetSample& s) {
  // What malloc_trim gives back is the resident part of what it madvises:
  // the whole pages inside free chunks (bin_pages_bytes), and the main
  // arena's top (it lowers brk). malloc_info lists free chunks whether or not
  // their pages are resident, and after a trim they stay in the bins with
  // their pages gone, so those figures alone offer again what a trim already
  // took. The smaps read gives the free memory the arenas hold resident
  // (GlibcFreeResident: their resident pages less the bytes in use, i.e.
  // malloc's free bytes less the free pages that are not resident). Of that,
  // what no trim can take is the free bytes outside those pages (chunks
  // under a page, the partial pages at each chunk's ends, the other arenas'
  // tops), which stay resident whatever happens: subtracting them leaves
  // the pages a trim would give back now. Right after a trim that is about
  // 0; on a heap nobody trimmed it is about the pages themselves.
  std::optional<uint64_t> resident_free = GlibcFreeResident(s);
  if (!resident_free) return std::nullopt;
  const jvm::MallocInfo& m = s.malloc->info;
  uint64_t releasable = 0;
  for (const jvm::MallocArena& a : m.arenas) {
    releasable += a.bin_pages_bytes;
    // systrim keeps MINSIZE + 1 bytes of the top and lowers brk by whole
    // pages; other arenas' tops stay (only free() shrinks those heaps).
    constexpr uint64_t kPage = 4096, kKept = 33;
    if (a.nr == 0 && a.top_bytes > kKept) releasable += (a.top_bytes - kKept) / kPage * kPage;
  }
  const uint64_t free = m.total_fast_bytes + m.total_rest_bytes;
  const uint64_t never_given = free > releasable ? free - releasable : 0;
  return *resident_free > never_given ? *resident_free - never_given : 0;
}

bool MallocStatsStale(const TargetSample& s) {
  return s.malloc && s.last_trim_steady && s.malloc->read_steady < *s.last_trim_steady;
}

std::vector<RiskFinding> AssessJvmRisks(const TargetSample& s) {
  std::vector<RiskFinding> out;
  const bool attached = s.jvm && s.jvm->attachable;
  if (attached && s.jvm->version) {
    if (std::optional<RiskFinding> nio = NioCacheRisk(s)) out.push_back(std::move(*nio));
  }
  double gc_rate = 0;
  bool storm = GcStorm(s, &gc_rate);
  DirectMemory d = DirectMemoryOf(s);
  if (attached && d.limit_bytes) {
    std::string of = " of " + Bytes(*d.limit_bytes) +
                     (d.limit_is_max_heap ? " (the max heap: MaxDirectMemorySize unset)" : "");
    if (d.ratio) {
      bool high = *d.ratio > kDirectHighRatio && !storm;
      std::string line =
          "direct buffer pool " + Bytes(*d.used_bytes) + of + " (" + Percent(*d.ratio) + ")";
      if (high) {
        line +=
            ": the next direct buffers will fail with OutOfMemoryError (Cannot reserve ... "
            "direct buffer memory); raise -XX:MaxDirectMemorySize or find who holds them";
      } else if (*d.ratio > kDirectHighRatio) {
        line += ", but the GC keeps freeing it (see direct_buffer_gc_storm)";
      }
      out.push_back({"direct_memory_high", high, line});
    } else if (d.nmt_other_bytes && static_cast<double>(*d.nmt_other_bytes) <=
                                        kDirectHighRatio * static_cast<double>(*d.limit_bytes)) {
      // NMT Other holds the pool and more: below the threshold, so is the pool.
      out.push_back({"direct_memory_high", false,
                     "NMT Other (direct buffers, temporary buffer cache, FFM, Unsafe) is " +
                         Bytes(*d.nmt_other_bytes) + of + ": the direct pool is at most that"});
    }
  }
  if (s.jvm_perf && s.jvm_perf->gc && s.jvm_perf->full_gc_per_second) {
    char rate[96];
    std::snprintf(rate, sizeof(rate), "%.1f full collections a second (of %.1f in all)", gc_rate,
                  s.jvm_perf->gc_per_second.value_or(gc_rate));
    std::string since = s.jvm_perf->gc_rates_since_start ? " since the JVM started" : "";
    std::string line =
        storm ? std::string(rate) + since +
                    ", the last caused by System.gc(): the JDK calls it "
                    "each time a direct buffer does not fit under MaxDirectMemorySize "
                    "(java.nio.Bits.reserveMemory), so a program that churns direct buffers "
                    "near its limit spends its time in full GCs. Pool the buffers, raise "
                    "-XX:MaxDirectMemorySize, or find what else calls System.gc()"
              : std::string(rate) + since + " (last cause: " + s.jvm_perf->gc->last_cause +
                    "): a storm is more than 1 full collection a second caused by System.gc()";
    if (storm && d.used_bytes && d.limit_bytes) {
      line += "; the direct pool is at " + Bytes(*d.used_bytes) + " of " + Bytes(*d.limit_bytes);
    }
    out.push_back({"direct_buffer_gc_storm", storm, line});
  }
  return out;
}

std::vector<MissingFigure> MissingFigures(const TargetSample& s) {
  std::vector<MissingFigure> out;
  const bool is_jvm = s.jvm.has_value() || s.jvm_perf.has_value();
  if (s.jvm && !s.jvm->attachable) {
    out.push_back(
        {"NMT, JVM flags, direct memory", With("the JVM is not attachable: " + s.jvm->attach_error,
                                               AttachAction(s.jvm->attach_cause))});
  }
  if (s.jvm && s.jvm->attachable && s.jvm->nmt && !s.jvm->nmt->enabled) {
    out.push_back({"NMT categories and memory outside NMT",
                   "Native Memory Tracking is off (start the JVM with "
                   "-XX:NativeMemoryTracking=summary; it cannot be switched on later)"});
  }
  if (is_jvm && !s.jvm_buffers) {
    out.push_back({"buffer pools (direct, mapped) and the temporary buffer cache",
                   s.jvm_buffers_missing.empty()
                       ? "libmemtrimd_agent.so is not preloaded into the JVM (start it with "
                         "LD_PRELOAD=libmemtrimd_agent.so to read BufferPoolMXBean's figures)"
                   : !s.agent_unreachable.empty()
                       ? With(s.jvm_buffers_missing, AgentAction(s.agent_unreachable_cause))
                       : s.jvm_buffers_missing});
  }
  // Another allocator serves malloc: glibc's figures are not missing, they
  // do not apply (and say so); the allocator's own may be missing.
  const Allocator allocator = SampleAllocator(s);
  const bool glibc_malloc = !IsOtherAllocator(allocator);
  if (!glibc_malloc) {
    out.push_back(
        {"glibc arena heaps, malloc_info, trimmable estimate",
         std::string("not applicable: malloc is ") + AllocatorName(allocator) + ", not glibc's"});
    if (!s.allocator && allocator != Allocator::kMusl) {
      out.push_back({std::string(AllocatorName(allocator)) + "'s own figures",
                     !s.allocator_missing.empty()
                         ? With(s.allocator_missing,
                                "preload the libmemtrimd_agent.so of this memtrimd's version")
                     : !s.agent_unreachable.empty()
                         ? With("the agent does not answer: " + s.agent_unreachable,
                                AgentAction(s.agent_unreachable_cause))
                         : "libmemtrimd_agent.so is not preloaded (start the program with "
                           "LD_PRELOAD=libmemtrimd_agent.so to read them)"});
    }
  }
  if (glibc_malloc && !s.malloc && (is_jvm || s.agent_loaded)) {
    std::string why;
    if (s.jvm && s.jvm->version && s.jvm->version->feature < 21) {
      why = "JDK " + std::to_string(s.jvm->version->feature) +
            " has no System.native_heap_info (JDK 21+); preload libmemtrimd_agent.so into the "
            "JVM to read them";
    } else if (!s.agent_unreachable.empty()) {
      why = With("the agent does not answer: " + s.agent_unreachable,
                 AgentAction(s.agent_unreachable_cause));
    } else if (s.agent_loaded) {
      why =
          "not read yet: the agent is asked on every --smaps.interval, the first time within "
          "one interval of memtrimd finding the target";
    } else if (s.jvm && !s.jvm->attachable) {
      why =
          "System.native_heap_info needs the attach socket, which memtrimd cannot use (see NMT, "
          "JVM flags, direct memory); preloading libmemtrimd_agent.so into the JVM gives them "
          "without it";
    } else {
      why =
          "not read yet: the JVM is asked (System.native_heap_info) on every --jvm.interval, "
          "the first time within one interval of memtrimd finding it";
    }
    out.push_back({"malloc statistics (glibc free memory, trimmable estimate)", why});
  }
  if (s.jvm && s.jvm->attachable) {
    DirectMemory d = DirectMemoryOf(s);
    bool decided = false;
    bool nio_decided = false;
    for (const RiskFinding& f : AssessJvmRisks(s)) {
      decided |= f.check == "direct_memory_high";
      nio_decided |= f.check == "nio_cache_unbounded";
    }
    if (!nio_decided && s.jvm->version) {
      out.push_back({"nio_cache_unbounded (undecided)",
                     "the temporary buffer cache is not measured (at most NMT Other, if that is "
                     "on), and that bound does not show it is small; preload "
                     "libmemtrimd_agent.so into the JVM (LD_PRELOAD) to measure the cache and "
                     "decide whether it threatens the JVM now"});
    }
    if (!decided && d.limit_bytes && d.nmt_other_bytes) {
      out.push_back({"direct_memory_high (undecided)",
                     "NMT Other is " + Bytes(*d.nmt_other_bytes) + " of a " +
                         Bytes(*d.limit_bytes) +
                         " limit, but it also holds memory the limit does not count (FFM, "
                         "Unsafe, and on JDK 24+ the temporary buffer cache); preload "
                         "libmemtrimd_agent.so into the JVM (LD_PRELOAD) to read the direct pool "
                         "itself and decide it"});
    }
  }
  if (is_jvm && !s.jvm_perf) {
    out.push_back(
        {"GC counters", !s.jvm_perf_missing.empty()
                            ? With(s.jvm_perf_missing, ErrorAction(s.jvm_perf_missing_cause))
                            : "no hsperfdata (the JVM's uid has no user name, it runs with "
                              "-XX:-UsePerfData or -XX:+PerfDisableSharedMem, or its file is "
                              "not reachable); let memtrimd see the JVM's /tmp, where "
                              "hsperfdata_<user>/<pid> is (shareProcessNamespace in a pod)"});
  }
  if (s.glibc && is_jvm && !s.glibc->java_heap_known) {
    out.push_back({"RSS account",
                   s.jvm && !s.jvm->attachable
                       ? "the Java heap's address range is not known: it comes from GC.heap_info "
                         "through the attach socket, which memtrimd cannot use (see NMT, JVM "
                         "flags, direct memory)"
                       : "the Java heap's address range is not known yet: it comes from "
                         "GC.heap_info on the next --jvm.interval, and the account with the smaps "
                         "read after it"});
  }
  return out;
}

std::string CollectorErrorAction(std::string_view collector, Cause cause) {
  if (collector == "jvm") return AttachAction(cause);
  if (collector == "agent") return AgentAction(cause);
  if (std::string a = ErrorAction(cause); !a.empty()) return a;
  if (collector == "glibc") {
    return "reading /proc/<pid>/smaps needs the target's user or CAP_SYS_PTRACE; memtrimd reads "
           "it again every --smaps.interval";
  }
  if (collector == "cgroup") {
    return "memtrimd reads the limit from the target's cgroup under /sys/fs/cgroup; where that is "
           "not mounted, --target.memory-limit gives it";
  }
  if (collector == "hsperfdata") {
    // The collector names the cause it found (a uid without a name, or the
    // flag that is set) and what the JVM needs.
    if (cause == Cause::kNoPerfFile) {
      return "memtrimd looks for the file again every sample";
    }
    return "let memtrimd see the JVM's /tmp (shareProcessNamespace in a pod)";
  }
  if (collector == "process") {
    return "memtrimd reads /proc/<pid>/status again every sample; it needs to see the target's "
           "/proc (the same pid namespace)";
  }
  return "memtrimd tries again at its next read";
}

std::string MallocEnvAdvice(const TargetSample& s) {
  if (!s.malloc_env) return "";
  auto it = s.malloc_env->find("MALLOC_ARENA_MAX");
  bool tunable_arena = false;
  if (auto t = s.malloc_env->find("GLIBC_TUNABLES"); t != s.malloc_env->end()) {
    tunable_arena = t->second.find("arena_max") != std::string::npos;
  }
  if (it == s.malloc_env->end() && !tunable_arena) return "";
  // Fewer arenas trade fragmentation for lock contention and can raise RSS
  // too: one production measurement saw +44 % with MALLOC_ARENA_MAX=2 while
  // one trim gave back 200 MB. Measure; trim first.
  return "the arena count is capped: fewer arenas is not a safe fix by itself (it can raise RSS "
         "and contention); compare RSS with and without it, and trim first";
}

}  // namespace memtrimd

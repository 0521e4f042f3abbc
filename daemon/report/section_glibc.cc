#include "daemon/report/section_glibc.h"

#include <cstdio>
#include <string>

#include "daemon/analysis/advice.h"
#include "daemon/analysis/findings.h"
#include "daemon/base/units.h"
#include "daemon/report/collector_note.h"

namespace memtrimd::report {
namespace {

// "HH:MM:SS UTC" of the moment malloc statistics were read.
std::string TimeOfDay(std::chrono::system_clock::time_point at) {
  return ClockUtc(UnixMs(at)) + " UTC";
}

}  // namespace

void GlibcText(TextTable& t, const TargetSnapshot& ts) {
  const auto& g = ts.sample.glibc;
  if (!g) {
    t.Heading("glibc malloc");
    ExplainFailure(t, ts, "glibc");
    return;
  }
  if (!g->arenas_not_applicable.empty()) {
    t.Heading("glibc malloc");
    t.Say("not applicable: " + g->arenas_not_applicable +
          ". glibc's arena heaps, malloc_info and malloc_trim do not describe this program's "
          "memory; its allocator's own figures follow.");
    return;
  }
  char hdr[160];
  std::snprintf(hdr, sizeof(hdr), "glibc malloc (from smaps: %zu mappings, read in %.1f ms)",
                g->mappings, g->read_seconds * 1000);
  t.Heading(hdr);
  std::string confirmed = g->heaps.empty() ? ""
                          : g->confirmed == g->heaps.size()
                              ? "all confirmed by their heap header"
                              : std::to_string(g->confirmed) + " confirmed by their heap header";
  if (g->merged > 0) {
    confirmed += "; " + std::to_string(g->merged) + " in mappings the kernel merged";
  }
  t.Row("arena heaps", std::to_string(g->heaps.size()),
        "64 MiB heaps of the non-main arenas" + (confirmed.empty() ? "" : "; " + confirmed));
  if ((!g->headers_unread.empty() && g->merged_unconfirmed > 0) || g->merged_skipped > 0) {
    // Their memory stays in "other anonymous": say why it is not counted.
    t.Say("not counted: " + std::to_string(g->merged_unconfirmed + g->merged_skipped) +
          " possible heaps inside larger mappings, which only their headers can confirm" +
          (g->headers_unread.empty() ? std::string()
                                     : " (headers not read: " + g->headers_unread + ")"));
  }
  t.Row("arena heaps mapped", Bytes(g->usable_bytes), "address space glibc made usable");
  t.Row("arena heaps resident", Bytes(g->resident_bytes),
        "in RAM: live data plus freed memory glibc keeps");
  t.Row("main arena resident", Bytes(g->main_arena_resident_bytes), "the [heap] brk area");
  if (const auto& m = ts.sample.malloc) {
    t.Row("malloc arenas", std::to_string(m->info.arenas.size()),
          "glibc malloc holds " + Bytes(m->info.system_current) + " (malloc_info, through the " +
              std::string(MallocSourceName(m->source)) + ")");
  }
  if (auto tr = TrimmableEstimate(ts.sample)) {
    // An estimate read before the last trim says what that trim could
    // take, not what one can take now.
    t.Row("trimmable", Bytes(*tr),
          MallocStatsStale(ts.sample)
              ? "READ BEFORE THE LAST TRIM (" + TimeOfDay(*ts.sample.last_trim_at) +
                    "): not what a trim can give now; re-read pending"
              : "what a trim would give back now (estimate): the glibc free kept less the "
                "free bytes outside whole free pages (read " +
                    TimeOfDay(ts.sample.malloc->read_at) + ")");
    if (auto ms = SettingBytes(ts.sample, "TrimNativeHeapInterval"); ms && *ms > 0) {
      // memtrimd does not see those trims: say the estimate may be older.
      t.Say("(the JVM trims itself every " + std::to_string(*ms) +
            " ms: this estimate may be from before its last trim)");
    }
  }
  if (ts.sample.malloc_env) {
    std::string line;
    for (const auto& [name, value] : *ts.sample.malloc_env) {
      line += (line.empty() ? "" : ", ") + name + "=" + value;
    }
    t.Say("malloc settings (initial environment): " + (line.empty() ? "none" : line));
    if (std::string advice = MallocEnvAdvice(ts.sample); !advice.empty()) t.Say(advice);
  }
  const auto& p = ts.sample.process;
  uint64_t base = p && p->Rss() ? p->Rss() : g->smaps_rss_bytes;
  if (base > 0 && !g->heaps.empty()) {
    double share = static_cast<double>(g->resident_bytes) / static_cast<double>(base);
    t.Say("Arena heaps hold " + Percent(share) +
          " of RSS (live native data and the free memory glibc keeps: see the account below)");
  }
}

void GlibcJson(JsonWriter& w, const TargetSample& s) {
  if (const auto& g = s.glibc) {
    w.Key("glibc").BeginObject();
    if (!g->arenas_not_applicable.empty()) {
      // Absent, with the reason, rather than zeros that look like a fact.
      w.Key("not_applicable").String(g->arenas_not_applicable);
    } else {
      w.Key("arena_heaps").Uint(g->heaps.size());
      w.Key("arena_heaps_confirmed").Uint(g->confirmed);
      w.Key("arena_heaps_merged").Uint(g->merged);
      w.Key("arena_heap_candidates_uncounted").Uint(g->merged_unconfirmed + g->merged_skipped);
      if (!g->headers_unread.empty()) w.Key("heap_headers_unread").String(g->headers_unread);
      w.Key("arena_heap_mapped_bytes").Uint(g->usable_bytes);
      w.Key("arena_heap_resident_bytes").Uint(g->resident_bytes);
      w.Key("main_arena_resident_bytes").Uint(g->main_arena_resident_bytes);
    }
    w.Key("mappings").Uint(g->mappings);
    w.Key("smaps_read_seconds").Double(g->read_seconds);
    w.EndObject();
  }
  // malloc statistics, for a JVM (System.native_heap_info) or the agent alike.
  if (const auto& m = s.malloc) {
    w.Key("malloc").BeginObject();
    w.Key("source").String(MallocSourceName(m->source));
    w.Key("arenas").Uint(m->info.arenas.size());
    w.Key("system_bytes").Uint(m->info.system_current);
    if (auto tr = TrimmableEstimate(s)) w.Key("trimmable_estimate_bytes").Uint(*tr);
    w.Key("read_at_unix_seconds").Double(UnixSeconds(m->read_at));
    // true: read before the last trim, so not what a trim can give now.
    w.Key("stale").Bool(MallocStatsStale(s));
    // Trims memtrimd does not see: the JVM's own (-XX:TrimNativeHeapInterval).
    auto self_trim = SettingBytes(s, "TrimNativeHeapInterval");
    w.Key("may_predate_jvm_trim").Bool(self_trim && *self_trim > 0);
    w.EndObject();
  }
  if (s.last_trim_at) w.Key("last_trim_unix_seconds").Double(UnixSeconds(*s.last_trim_at));
  if (const auto& env = s.malloc_env) {
    w.Key("malloc_env").BeginObject();
    for (const auto& [name, value] : *env) w.Key(name).String(value);
    w.EndObject();
  }
}

void BreakdownText(TextTable& t, const TargetSample& s) {
  if (!s.glibc) return;
  const glibc::RssBreakdown& b = s.glibc->breakdown;
  t.Heading("Where the RSS is, by mapping (one smaps read: " + Bytes(b.total) + ")");
  t.Row("file-backed and shared", Bytes(b.file_and_shared),
        "code, mapped files, shmem; the kernel can drop clean pages");
  if (s.glibc->java_heap_known) {
    t.Row("Java heap", Bytes(b.java_heap), "touched pages of the Java heap");
  }
  const bool arenas = s.glibc->arenas_not_applicable.empty();
  if (arenas) {
    t.Row("glibc arena heaps", Bytes(b.arena_heaps),
          "threads' malloc arenas: live native data plus freed memory glibc keeps");
    t.Row("glibc main arena", Bytes(b.main_arena), "[heap]: the main thread's malloc arena");
  }
  t.Row("other anonymous", Bytes(b.other_anonymous + (arenas ? 0 : b.arena_heaps + b.main_arena)),
        s.jvm || s.jvm_perf
            ? "metaspace, code cache, GC structures, stacks, large malloc chunks (direct "
              "buffers among them)"
            : "stacks, large malloc chunks (mmapped), other anonymous mappings");
}

void BreakdownJson(JsonWriter& w, const TargetSample& s) {
  const auto& g = s.glibc;
  if (!g) return;
  const glibc::RssBreakdown& b = g->breakdown;
  w.Key("rss_breakdown").BeginObject();
  w.Key("total_bytes").Uint(b.total);
  if (g->status_rss_bytes) w.Key("status_rss_bytes").Uint(g->status_rss_bytes);
  w.Key("file_bytes").Uint(b.file_and_shared);
  if (g->java_heap_known) w.Key("java_heap_bytes").Uint(b.java_heap);
  w.Key("glibc_arena_heaps_bytes").Uint(b.arena_heaps);
  w.Key("glibc_main_arena_bytes").Uint(b.main_arena);
  w.Key("other_anonymous_bytes").Uint(b.other_anonymous);
  w.EndObject();
}

}  // namespace memtrimd::report

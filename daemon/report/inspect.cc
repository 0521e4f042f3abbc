#include "daemon/report/inspect.h"

#include <cstdio>
#include <ctime>

#include <algorithm>
#include <cmath>

#include "collectors/common/text.h"
#include "collectors/procfs/target_reader.h"
#include "daemon/analysis/advice.h"
#include "daemon/analysis/allocator_findings.h"
#include "daemon/analysis/allocator_view.h"
#include "daemon/analysis/findings.h"
#include "daemon/analysis/rss_account.h"
#include "daemon/base/json_writer.h"
#include "daemon/base/units.h"
#include "daemon/report/site_report.h"
#include "daemon/trim/trim_heaps.h"

namespace memtrimd {
namespace {

// "  label ........ value  note" with aligned columns.
class Table {
 public:
  void Heading(const std::string& text) {
    if (!out_.empty()) out_ += '\n';
    out_ += text + '\n';
  }
  void Row(const std::string& label, const std::string& value, const std::string& note = "") {
    char buf[512];
    std::snprintf(buf, sizeof(buf), "  %-26s %12s", label.c_str(), value.c_str());
    out_ += buf;
    if (!note.empty()) out_ += "  " + note;
    out_ += '\n';
  }
  void Say(const std::string& text) { out_ += "  " + text + '\n'; }
  // Names from a target are bytes: invalid UTF-8 becomes U+FFFD, as in
  // every writer (text::ToValidUtf8).
  std::string Take() { return text::ToValidUtf8(out_); }

 private:
  std::string out_;
};

std::string Bytes(uint64_t b) { return FormatBytes(static_cast<double>(b)); }

std::string Percent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f %%", ratio * 100);
  return buf;
}

double UnixSeconds(std::chrono::system_clock::time_point at) {
  return std::chrono::duration<double>(at.time_since_epoch()).count();
}

std::string TimeOfDay(std::chrono::system_clock::time_point at) {
  std::time_t t = std::chrono::system_clock::to_time_t(at);
  std::tm tm;
  gmtime_r(&t, &tm);
  char buf[24];
  std::strftime(buf, sizeof(buf), "%H:%M:%S UTC", &tm);
  return buf;
}

std::string Utc(double seconds) {
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm;
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

const CollectorOutcome* Outcome(const TargetSnapshot& ts, std::string_view name) {
  for (const CollectorOutcome& o : ts.collectors) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

void ExplainFailure(Table& t, const TargetSnapshot& ts, std::string_view name) {
  const CollectorOutcome* o = Outcome(ts, name);
  if (o == nullptr) {
    t.Say("(collector " + std::string(name) + " is switched off)");
  } else if (!o->success) {
    t.Say("could not read: " + o->error);
  }
}

std::string PoolLine(const BufferPool& p) {
  return std::to_string(p.count) + " buffers, capacity " + Bytes(p.total_capacity);
}

void RenderJvm(Table& t, const TargetSnapshot& ts) {
  const TargetSample& s = ts.sample;
  if (!s.jvm && !s.jvm_perf) return;
  std::string version = s.jvm && s.jvm->version ? " " + s.jvm->version->full : "";
  t.Heading("JVM" + version);
  if (s.jvm && !s.jvm->attachable) {
    t.Say("not attachable: " + s.jvm->attach_error);
    t.Say(
        "(heap figures below come from hsperfdata; NMT, flags and malloc statistics need "
        "the attach socket)");
  }
  JavaHeap heap = JavaHeapOf(s);
  if (heap.committed) {
    t.Row("Java heap committed", Bytes(*heap.committed),
          std::string("used ") + (heap.used ? Bytes(*heap.used) : "?") +
              (heap.max ? ", max " + Bytes(*heap.max) : "") + " (" + heap.source + ")");
  }
  if (s.jvm && s.jvm->nmt) {
    const jvm::NmtSummary& n = *s.jvm->nmt;
    if (!n.enabled) {
      t.Say(
          "Native Memory Tracking is off: start the JVM with "
          "-XX:NativeMemoryTracking=summary to see its native memory by category");
    } else {
      t.Row("NMT committed", Bytes(n.total_committed),
            "everything the JVM accounts for (committed, not all of it touched)");
      std::vector<const jvm::NmtCategory*> cats;
      for (const jvm::NmtCategory& c : n.categories) cats.push_back(&c);
      std::sort(cats.begin(), cats.end(),
                [](auto* a, auto* b) { return a->committed > b->committed; });
      for (std::size_t i = 0; i < cats.size() && i < 8; ++i) {
        if (cats[i]->committed == 0) break;
        t.Row("  " + cats[i]->name, Bytes(cats[i]->committed),
              cats[i]->name == "Other"
                  ? "direct buffers, temporary buffer cache, FFM and Unsafe allocations"
                  : "");
      }
    }
  }
  DirectMemory d = DirectMemoryOf(s);
  if (s.jvm_buffers) {
    const JvmBuffers& b = *s.jvm_buffers;
    std::string limit;
    if (d.limit_bytes) {
      limit = "of " + Bytes(*d.limit_bytes) +
              (d.limit_is_max_heap ? " (max heap: MaxDirectMemorySize unset)" : "") +
              (d.ratio ? ", " + Percent(*d.ratio) : "") + "; ";
    }
    t.Row("direct buffer pool", Bytes(b.direct.memory_used), limit + PoolLine(b.direct));
    t.Row("mapped buffer pool", Bytes(b.mapped.memory_used),
          PoolLine(b.mapped) + " (file-backed: page cache, not native memory)");
  } else if (d.limit_bytes) {
    t.Row("direct memory limit", Bytes(*d.limit_bytes),
          d.limit_is_max_heap ? "the max heap (MaxDirectMemorySize unset)" : "MaxDirectMemorySize");
  }
  if (auto cache = TempBufferCacheOf(s)) {
    std::string note =
        std::string(cache->source) == "agent"
            ? (cache->buffers ? std::to_string(*cache->buffers) + " buffers, " : "") +
                  "summed over threads"
            : "at most: NMT Other minus the direct pool (also holds FFM, Unsafe)";
    if (auto counts = TempBuffersCountAgainstLimit(s)) {
      note += *counts ? "; inside the direct pool on this JDK" : "; outside the direct pool";
    }
    t.Row("temporary buffer cache", Bytes(cache->bytes), note);
  }
  if (s.jvm_perf && s.jvm_perf->gc) {
    const jvm::PerfGc& gc = *s.jvm_perf->gc;
    uint64_t n = 0;
    for (const jvm::PerfGcCollector& c : gc.collectors) n += c.invocations;
    std::string rate;
    if (s.jvm_perf->gc_per_second) {
      char buf[96];
      std::snprintf(
          buf, sizeof(buf), "%.1f/s %s (full %.1f/s), %.1f %% of the time; ",
          *s.jvm_perf->gc_per_second, s.jvm_perf->gc_rates_since_start ? "since start" : "lately",
          s.jvm_perf->full_gc_per_second.value_or(0), s.jvm_perf->gc_time_ratio.value_or(0) * 100);
      rate = buf;
    }
    // Without the file the counters come from the JVM's memory: said, so
    // that the reason there is no file stays visible.
    std::string from =
        s.jvm_perf->source == "memory" ? "; from the JVM's memory: " + s.jvm_perf->no_file : "";
    t.Row("GC collections", std::to_string(n), rate + "last cause: " + gc.last_cause + from);
  }
  if (s.jvm && !s.jvm->settings.empty()) {
    std::string line;
    for (const auto& [name, value] : s.jvm->settings) {
      line += (line.empty() ? "" : ", ") + name + "=" + value;
    }
    t.Say("settings: " + line);
  }
  for (const RiskFinding& f : AssessJvmRisks(s)) {
    if (f.at_risk) t.Say("RISK " + f.check + ": " + f.explanation);
  }
  for (const Advice& a : AdviseJvm(s)) t.Say("advice (" + a.check + "): " + a.text);
  if (s.jvm) {
    for (const std::string& e : s.jvm->command_errors) t.Say("command failed: " + e);
  }
}

void RenderAccount(Table& t, const TargetSnapshot& ts) {
  const TargetSample& s = ts.sample;
  std::optional<RssAccount> a = AccountRss(s);
  if (!a) return;
  t.Heading(std::string("Who holds the RSS (one smaps read") + (a->nmt ? ", NMT" : "") +
            (s.malloc ? ", malloc statistics" : "") + ")");
  t.Row("file-backed", Bytes(a->file), "code and mapped files: not native memory");
  if (a->java_heap) t.Row("Java heap", Bytes(*a->java_heap), "touched pages of the Java heap");
  if (a->nmt) {
    const NmtKnown& n = *a->nmt;
    t.Row("NMT-known native", Bytes(n.total()), "resident memory the JVM accounts for");
    t.Row("  buffers (NMT Other)", Bytes(n.buffers),
          "direct buffers, temporary buffer cache, FFM, Unsafe");
    t.Row("  metaspace", Bytes(n.metaspace), "class metadata");
    t.Row("  code", Bytes(n.code), "the JIT's code cache");
    t.Row("  threads", Bytes(n.threads), "stacks and thread structures");
    t.Row("  GC", Bytes(n.gc), "card tables, remembered sets, mark bitmaps");
    t.Row("  other JVM", Bytes(n.jvm_other), "symbols, compiler, internal, ...");
  }
  if (a->glibc_free) {
    std::string gives;
    if (auto tr = TrimmableEstimate(s)) {
      gives = "; a trim gives back about " + Bytes(*tr) +
              " of it (the rest is free space beside live blocks in their pages)";
    }
    t.Row("glibc free kept", Bytes(*a->glibc_free),
          "free memory malloc keeps resident" + gives +
              std::string(MallocStatsStale(s) ? " (malloc statistics from before the last trim)"
                                              : ""));
  }
  if (a->allocator_free) {
    t.Row(a->allocator + " free kept", Bytes(*a->allocator_free),
          "free memory " + a->allocator + " keeps; its release call gives it back");
  }
  std::string rest_note = a->nmt
                              ? "JNI and native libraries (zlib, TLS, ...), glibc's own structures"
                              : (a->is_jvm ? "all native memory (no NMT to split it)"
                                           : "the program's malloc'd and mapped memory");
  if (!a->glibc_free && !a->allocator_free) {
    rest_note += "; " + a->allocator + "'s free memory is in here (no malloc statistics)";
  }
  if (a->outside_is_estimate && a->nmt) {
    rest_note += "; an estimate (the JVM's malloc'd memory cannot be placed without them)";
  }
  t.Row(a->nmt ? "native outside NMT" : "native", Bytes(a->outside), rest_note);
  std::string eq = a->Equation();
  if (s.cgroup && s.cgroup->limit_bytes) eq += " (limit " + Bytes(*s.cgroup->limit_bytes) + ")";
  t.Say(eq);
  if (a->nmt_committed_untouched > 0) {
    t.Say("(NMT also counts " + Bytes(a->nmt_committed_untouched) +
          " committed but never touched, e.g. GC bitmaps of an untouched heap: not RSS)");
  }
}

void RenderBreakdown(Table& t, const TargetSnapshot& ts) {
  const TargetSample& s = ts.sample;
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

// What the agent calls to release memory under each allocator.
std::string ReleaseCallOf(Allocator a) {
  switch (a) {
    case Allocator::kJemalloc:
      return "mallctl arena.<all>.purge";
    case Allocator::kTcmalloc:
      return "MallocExtension::ReleaseFreeMemory";
    case Allocator::kMimalloc:
      return "mi_collect(true)";
    default:
      return "malloc_trim(0)";
  }
}

void RenderAllocator(Table& t, const Target& target, const AllocatorView& v,
                     const TargetSample& s) {
  t.Heading(std::string("Allocator: ") + AllocatorName(v.allocator) +
            (v.source.empty() ? "" : " (" + v.source + ")"));
  for (const RiskFinding& f : AssessAllocator(target, s)) {
    if (f.at_risk) t.Say("FINDING " + f.check + ": " + f.explanation);
  }
  if (!v.missing.empty()) {
    t.Say("no figures: " + v.missing);
    return;
  }
  const agent::AllocatorMeasures& m = v.measures;
  if (m.allocated) t.Row("allocated", Bytes(*m.allocated), "in blocks the program holds");
  if (m.held) t.Row("held", Bytes(*m.held), "taken from the system and not given back");
  if (m.free_kept) {
    const bool all = v.release_gives && *v.release_gives == *m.free_kept;
    t.Row("free, kept", Bytes(*m.free_kept),
          all || !v.release_gives ? "free memory a release would give back"
                                  : "free memory kept resident; a release gives back about " +
                                        Bytes(*v.release_gives) + " of it");
  }
  if (m.released) t.Row("released", Bytes(*m.released), "given back, address space kept");
  if (!s.allocator) return;
  std::string own;
  for (const auto& [stat, value] : s.allocator->bytes) {
    own += (own.empty() ? "" : ", ") + stat + " " + Bytes(value);
  }
  if (!own.empty()) t.Say("its own figures: " + own);
  auto decay = [](const std::optional<int64_t>& ms) {
    return !ms ? std::string("?") : *ms < 0 ? std::string("never") : std::to_string(*ms) + " ms";
  };
  if (s.allocator->dirty_decay_ms || s.allocator->muzzy_decay_ms) {
    t.Say("decay (jemalloc purges freed pages itself after): dirty " +
          decay(s.allocator->dirty_decay_ms) + ", muzzy " + decay(s.allocator->muzzy_decay_ms));
  }
}

void AllocatorJson(JsonWriter& w, const Target& target, const AllocatorView& v,
                   const TargetSample& s) {
  w.Key("allocator").BeginObject();
  w.Key("name").String(AllocatorName(v.allocator)).Key("source").String(v.source);
  w.Key("findings").BeginArray();
  for (const RiskFinding& f : AssessAllocator(target, s)) {
    w.BeginObject().Key("check").String(f.check).Key("at_risk").Bool(f.at_risk);
    w.Key("explanation").String(f.explanation).EndObject();
  }
  w.EndArray();
  if (const auto& c = s.allocator_change) {
    w.Key("changed_from").String(AllocatorName(c->before));
    w.Key("changed_from_pid").Int(c->before_pid);
  }
  if (!v.missing.empty()) w.Key("missing").String(v.missing);
  if (!v.measures_from.empty()) w.Key("measures_from").String(v.measures_from);
  const agent::AllocatorMeasures& m = v.measures;
  if (m.allocated) w.Key("allocated_bytes").Uint(*m.allocated);
  if (m.held) w.Key("held_bytes").Uint(*m.held);
  if (m.free_kept) w.Key("free_kept_bytes").Uint(*m.free_kept);
  if (v.release_gives) w.Key("release_gives_bytes").Uint(*v.release_gives);
  if (m.released) w.Key("released_bytes").Uint(*m.released);
  if (s.allocator) {
    w.Key("object").String(s.allocator->object);
    w.Key("stats_bytes").BeginObject();
    for (const auto& [stat, value] : s.allocator->bytes) w.Key(stat).Uint(value);
    w.EndObject();
    if (s.allocator->dirty_decay_ms) w.Key("dirty_decay_ms").Int(*s.allocator->dirty_decay_ms);
    if (s.allocator->muzzy_decay_ms) w.Key("muzzy_decay_ms").Int(*s.allocator->muzzy_decay_ms);
    w.Key("read_at_unix_seconds").Double(UnixSeconds(s.allocator->read_at));
  }
  w.EndObject();
}

void RenderMissing(Table& t, const TargetSnapshot& ts) {
  std::vector<MissingFigure> missing = MissingFigures(ts.sample);
  if (missing.empty()) return;
  t.Heading("Not shown, and why");
  for (const MissingFigure& m : missing) t.Say(m.figure + ": " + m.why);
}

// What to do about an unreachable agent, from the client's reason.
std::string AgentHint(std::string_view why) {
  if (why.find("no socket at") != std::string_view::npos) {
    return " (the agent did not start; it says why on the program's stderr, e.g. a socket path "
           "it cannot bind)";
  }
  // The reason already names the capability memtrimd lacks (a node agent
  // without CAP_DAC_OVERRIDE): nothing to add.
  if (why.find("(needs CAP_") != std::string_view::npos &&
      why.find(" or root)") == std::string_view::npos) {
    return "";
  }
  if (why.find("permission denied") != std::string_view::npos) {
    return " (the program made the socket as root and changed uid without glibc's setuid: run "
           "memtrimd as root)";
  }
  return "";
}

}  // namespace

std::string RenderInspectTable(const TargetSnapshot& ts) {
  return RenderInspectTable(ts, std::chrono::system_clock::now());
}

std::string RenderInspectTable(const TargetSnapshot& ts,
                               std::chrono::system_clock::time_point now) {
  Table t;
  const Target& tg = ts.target;
  double up = std::floor(UnixSeconds(now)) - ts.start_time_seconds;
  const AllocatorView alloc = ViewAllocator(tg, ts.sample);
  t.Heading("pid " + std::to_string(tg.pid) + " (" + tg.comm + "), runtime " +
            RuntimeName(tg.runtime) + ", allocator " + AllocatorName(alloc.allocator) +
            ", started " + Utc(ts.start_time_seconds) + " (up " +
            FormatDuration(std::chrono::seconds(static_cast<int64_t>(up > 0 ? up : 0))) + ")");

  const auto& p = ts.sample.process;
  uint64_t rss = 0;
  // Once the main thread has ended the figures come from a live thread's
  // status: the heading names the file they were read from.
  const pid_t task = procfs::ReadingTask(tg);
  t.Heading("Resident memory (from /proc/" + std::to_string(tg.pid) +
            (task != tg.pid ? "/task/" + std::to_string(task) : "") + "/status)");
  if (p) {
    rss = p->rss_anon + p->rss_file + p->rss_shmem;
    t.Row("RSS", Bytes(rss), "what the kernel counts against the process");
    t.Row("  anonymous", Bytes(p->rss_anon), "malloc heaps, stacks, anonymous mmaps");
    t.Row("  file-backed", Bytes(p->rss_file), "code and mapped files; the kernel can drop these");
    t.Row("  shared memory", Bytes(p->rss_shmem), "shmem and tmpfs pages");
    t.Row("swap", Bytes(p->vm_swap));
    t.Row("peak RSS", Bytes(p->vm_hwm), "highest RSS since the process started");
    t.Row("threads", std::to_string(p->threads),
          alloc.allocator == Allocator::kGlibc ? "each thread that mallocs may get its own arena"
                                               : "");
  } else {
    ExplainFailure(t, ts, "process");
  }

  const auto& g = ts.sample.glibc;
  if (g && !g->arenas_not_applicable.empty()) {
    t.Heading("glibc malloc");
    t.Say("not applicable: " + g->arenas_not_applicable +
          ". glibc's arena heaps, malloc_info and malloc_trim do not describe this program's "
          "memory; its allocator's own figures follow.");
  } else if (g) {
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
    uint64_t base = rss ? rss : g->smaps_rss_bytes;
    if (base > 0 && !g->heaps.empty()) {
      double share = static_cast<double>(g->resident_bytes) / static_cast<double>(base);
      t.Say("Arena heaps hold " + Percent(share) +
            " of RSS (live native data and the free memory glibc keeps: see the account below)");
    }
  } else {
    t.Heading("glibc malloc");
    ExplainFailure(t, ts, "glibc");
  }

  RenderAllocator(t, tg, alloc, ts.sample);
  RenderJvm(t, ts);
  RenderAccount(t, ts);
  RenderBreakdown(t, ts);
  RenderMissing(t, ts);

  t.Heading("Trimming");
  if (alloc.allocator == Allocator::kMusl) {
    t.Say(
        "no backend: musl's malloc has no call that gives free memory back; memtrimd does not "
        "trim it");
  } else if (IsOtherAllocator(alloc.allocator) && !ts.sample.agent_loaded) {
    t.Say(std::string("no backend: malloc is ") + AllocatorName(alloc.allocator) +
          (tg.runtime == Runtime::kJvm
               ? "; System.trim_native_heap would only trim glibc's unused heap, so memtrimd "
                 "does not send it"
               : "") +
          ". Preload libmemtrimd_agent.so to release with the allocator's own call.");
  } else if (IsOtherAllocator(alloc.allocator)) {
    t.Say(std::string("backend: agent, with ") + AllocatorName(alloc.allocator) +
          "'s own release call (" + ReleaseCallOf(alloc.allocator) + ")" +
          (ts.sample.agent_unreachable.empty()
               ? ""
               : "; unreachable now: " + ts.sample.agent_unreachable +
                     AgentHint(ts.sample.agent_unreachable)));
  } else if (tg.runtime == Runtime::kJvm) {
    t.Say("backend: jvm (System.trim_native_heap through the attach socket, JDK 17.0.2+)");
    if (auto ms = SettingBytes(ts.sample, "TrimNativeHeapInterval"); ms && *ms > 0) {
      t.Say("the JVM trims itself every " + std::to_string(*ms) +
            " ms: memtrimd skips it unless --trim.force");
    }
  } else if (ts.sample.agent_loaded && !ts.sample.agent_unreachable.empty()) {
    // Loaded is not enough: say plainly that trims cannot work, and why.
    t.Say("backend: agent loaded but unreachable: " + ts.sample.agent_unreachable +
          AgentHint(ts.sample.agent_unreachable));
  } else if (ts.sample.agent_loaded) {
    t.Say("backend: agent (libmemtrimd_agent.so is loaded and answers)");
  } else {
    t.Say(
        "no backend: not a JVM, and libmemtrimd_agent.so is not loaded (start the program "
        "with LD_PRELOAD=libmemtrimd_agent.so to let memtrimd trim it)");
  }

  const auto& c = ts.sample.cgroup;
  std::string source = !c                                      ? ""
                       : c->limit_source == LimitSource::kFlag ? "--target.memory-limit"
                       : c->version == 0                       ? ""
                                         : "cgroup v" + std::to_string(c->version);
  t.Heading("Container memory" + (source.empty() ? "" : " (" + source + ")"));
  if (c) {
    if (c->limit_bytes) {
      t.Row("limit", Bytes(*c->limit_bytes));
    } else {
      t.Row("limit", "none", "no memory limit: the OOM killer acts only on host pressure");
    }
    if (c->usage_bytes) {
      t.Row("usage", Bytes(*c->usage_bytes), "all of the cgroup's processes, page cache included");
    }
    if (c->limit_bytes && rss > 0) {
      double ratio = static_cast<double>(rss) / static_cast<double>(*c->limit_bytes);
      t.Row("RSS / limit", Percent(ratio),
            ratio >= 0.9    ? "close to the OOM kill"
            : ratio >= 0.75 ? "getting close"
                            : "");
    }
    if (c->oom_kills) t.Row("OOM kills", std::to_string(*c->oom_kills), "in this cgroup so far");
  }
  ExplainFailure(t, ts, "cgroup");
  if (ts.sample.sites) {
    std::string sites = report::SitesText(*ts.sample.sites, report::kReportSites, now);
    if (!sites.empty() && sites.back() == '\n') sites.pop_back();
    t.Heading(sites);
  } else if (const CollectorOutcome* o = Outcome(ts, "sites"); o != nullptr) {
    // Only when it ran: the collector is off unless asked for.
    t.Heading("Allocation sites");
    if (!ts.sample.sites_missing.empty()) t.Say(ts.sample.sites_missing);
    ExplainFailure(t, ts, "sites");
  }
  return t.Take();
}

std::string RenderInspectJson(const TargetSnapshot& ts) {
  JsonWriter w;
  const Target& tg = ts.target;
  w.BeginObject();
  w.Key("pid").Int(tg.pid).Key("comm").String(tg.comm).Key("runtime").String(
      RuntimeName(tg.runtime));
  w.Key("start_time_seconds").Double(ts.start_time_seconds);
  if (ts.reads > 0) {
    // In /report: how many samples read this target and which one last did
    // (older than the report's own after another target's trim).
    w.Key("samples").Uint(ts.reads).Key("sample_sequence").Uint(ts.read_in_sequence);
  }
  // A read of this target has not ended for this long: the figures are from
  // before it (Scheduler::ReadTarget).
  if (ts.read_stalled_seconds > 0) w.Key("read_stalled_seconds").Double(ts.read_stalled_seconds);
  AllocatorJson(w, tg, ViewAllocator(tg, ts.sample), ts.sample);
  if (const auto& p = ts.sample.process) {
    w.Key("process").BeginObject();
    w.Key("rss_bytes").Uint(p->rss_anon + p->rss_file + p->rss_shmem);
    w.Key("rss_anon_bytes").Uint(p->rss_anon).Key("rss_file_bytes").Uint(p->rss_file);
    w.Key("rss_shmem_bytes").Uint(p->rss_shmem).Key("swap_bytes").Uint(p->vm_swap);
    w.Key("rss_peak_bytes").Uint(p->vm_hwm).Key("threads").Uint(p->threads);
    w.EndObject();
  }
  if (const auto& g = ts.sample.glibc) {
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
  if (const auto& m = ts.sample.malloc) {
    w.Key("malloc").BeginObject();
    w.Key("source").String(MallocSourceName(m->source));
    w.Key("arenas").Uint(m->info.arenas.size());
    w.Key("system_bytes").Uint(m->info.system_current);
    if (auto tr = TrimmableEstimate(ts.sample)) w.Key("trimmable_estimate_bytes").Uint(*tr);
    w.Key("read_at_unix_seconds").Double(UnixSeconds(m->read_at));
    // true: read before the last trim, so not what a trim can give now.
    w.Key("stale").Bool(MallocStatsStale(ts.sample));
    // Trims memtrimd does not see: the JVM's own (-XX:TrimNativeHeapInterval).
    auto self_trim = SettingBytes(ts.sample, "TrimNativeHeapInterval");
    w.Key("may_predate_jvm_trim").Bool(self_trim && *self_trim > 0);
    w.EndObject();
  }
  if (ts.sample.last_trim_at) {
    w.Key("last_trim_unix_seconds").Double(UnixSeconds(*ts.sample.last_trim_at));
  }
  if (const auto& env = ts.sample.malloc_env) {
    w.Key("malloc_env").BeginObject();
    for (const auto& [name, value] : *env) w.Key(name).String(value);
    w.EndObject();
  }
  if (std::optional<RssAccount> a = AccountRss(ts.sample)) {
    w.Key("rss_account").BeginObject();
    w.Key("rss_bytes").Uint(a->rss).Key("file_bytes").Uint(a->file);
    if (a->java_heap) w.Key("java_heap_bytes").Uint(*a->java_heap);
    if (a->nmt) {
      const NmtKnown& n = *a->nmt;
      w.Key("nmt_known_bytes").Uint(n.total());
      w.Key("nmt_known").BeginObject();
      w.Key("buffers_bytes").Uint(n.buffers).Key("metaspace_bytes").Uint(n.metaspace);
      w.Key("code_bytes").Uint(n.code).Key("threads_bytes").Uint(n.threads);
      w.Key("gc_bytes").Uint(n.gc).Key("jvm_other_bytes").Uint(n.jvm_other);
      w.EndObject();
      w.Key("nmt_committed_untouched_bytes").Uint(a->nmt_committed_untouched);
    }
    if (a->glibc_free) w.Key("glibc_free_bytes").Uint(*a->glibc_free);
    if (a->allocator_free) w.Key("allocator_free_bytes").Uint(*a->allocator_free);
    w.Key(a->nmt ? "outside_nmt_bytes" : "native_bytes").Uint(a->outside);
    if (a->nmt) w.Key("outside_nmt_is_estimate").Bool(a->outside_is_estimate);
    w.Key("equation").String(a->Equation());
    w.EndObject();
  }
  if (ts.sample.agent_loaded) {
    w.Key("agent").BeginObject();
    w.Key("reachable").Bool(ts.sample.agent_unreachable.empty());
    if (!ts.sample.agent_unreachable.empty()) {
      w.Key("unreachable_reason").String(ts.sample.agent_unreachable);
    }
    w.EndObject();
  }
  if (const auto& c = ts.sample.cgroup) {
    w.Key("cgroup").BeginObject();
    w.Key("version").Int(c->version).Key("path").String(c->path);
    w.Key("limit_bytes");
    c->limit_bytes ? w.Uint(*c->limit_bytes) : w.Null();
    w.Key("limit_source")
        .String(c->limit_source == LimitSource::kFlag     ? "flag"
                : c->limit_source == LimitSource::kCgroup ? "cgroup"
                                                          : "none");
    if (c->usage_bytes) w.Key("usage_bytes").Uint(*c->usage_bytes);
    if (c->anon_bytes) w.Key("anon_bytes").Uint(*c->anon_bytes);
    if (c->file_bytes) w.Key("file_bytes").Uint(*c->file_bytes);
    if (c->oom_kills) w.Key("oom_kills").Uint(*c->oom_kills);
    w.EndObject();
  }
  if (const auto& g = ts.sample.glibc) {
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
  if (ts.sample.jvm || ts.sample.jvm_perf) {
    const TargetSample& s = ts.sample;
    w.Key("jvm").BeginObject();
    if (s.jvm) {
      w.Key("attachable").Bool(s.jvm->attachable);
      if (!s.jvm->attachable) w.Key("attach_error").String(s.jvm->attach_error);
      // --jvm.load-agent: what memtrimd's load of its agent did.
      if (!s.jvm->agent_load.empty()) {
        w.Key("agent_load").BeginObject();
        w.Key("result").String(s.jvm->agent_load);
        w.Key("text").String(s.jvm->agent_load_text);
        w.EndObject();
      }
      if (s.jvm->version) w.Key("version").String(s.jvm->version->full);
      w.Key("settings").BeginObject();
      for (const auto& [name, value] : s.jvm->settings) w.Key(name).String(value);
      w.EndObject();
      if (s.jvm->nmt) {
        w.Key("nmt").BeginObject().Key("enabled").Bool(s.jvm->nmt->enabled);
        if (s.jvm->nmt->enabled) {
          w.Key("total_committed_bytes").Uint(s.jvm->nmt->total_committed);
          w.Key("total_reserved_bytes").Uint(s.jvm->nmt->total_reserved);
          w.Key("categories").BeginArray();
          for (const jvm::NmtCategory& c : s.jvm->nmt->categories) {
            w.BeginObject().Key("name").String(c.name).Key("reserved_bytes").Uint(c.reserved);
            w.Key("committed_bytes").Uint(c.committed);
            if (c.malloc_bytes) w.Key("malloc_bytes").Uint(*c.malloc_bytes);
            w.EndObject();
          }
          w.EndArray();
        }
        w.EndObject();
      }
    }
    JavaHeap heap = JavaHeapOf(s);
    if (heap.committed) w.Key("heap_committed_bytes").Uint(*heap.committed);
    if (heap.used) w.Key("heap_used_bytes").Uint(*heap.used);
    if (heap.max) w.Key("heap_max_bytes").Uint(*heap.max);
    DirectMemory d = DirectMemoryOf(s);
    if (s.jvm_buffers) {
      auto pool = [&](const char* name, const BufferPool& p) {
        w.Key(name).BeginObject().Key("count").Uint(p.count);
        w.Key("total_capacity_bytes").Uint(p.total_capacity);
        w.Key("memory_used_bytes").Uint(p.memory_used).EndObject();
      };
      w.Key("buffer_pools").BeginObject();
      pool("direct", s.jvm_buffers->direct);
      pool("mapped", s.jvm_buffers->mapped);
      w.EndObject();
    } else {
      w.Key("buffer_pools_missing")
          .String(s.jvm_buffers_missing.empty() ? "libmemtrimd_agent.so is not preloaded"
                                                : s.jvm_buffers_missing);
    }
    if (d.nmt_other_bytes) w.Key("nmt_other_bytes").Uint(*d.nmt_other_bytes);
    if (auto cache = TempBufferCacheOf(s)) {
      w.Key("temp_buffer_cache_bytes").Uint(cache->bytes);
      w.Key("temp_buffer_cache_source").String(cache->source);
    }
    if (d.used_bytes) w.Key("direct_memory_bytes").Uint(*d.used_bytes);
    if (d.limit_bytes) w.Key("direct_memory_limit_bytes").Uint(*d.limit_bytes);
    if (s.jvm_perf && s.jvm_perf->gc) {
      const jvm::PerfGc& gc = *s.jvm_perf->gc;
      w.Key("gc").BeginObject();
      if (s.jvm_perf->gc_per_second) {
        w.Key("collections_per_second").Double(*s.jvm_perf->gc_per_second);
        if (s.jvm_perf->full_gc_per_second) {
          w.Key("full_collections_per_second").Double(*s.jvm_perf->full_gc_per_second);
        }
        w.Key("rates_since_jvm_start").Bool(s.jvm_perf->gc_rates_since_start);
      }
      if (s.jvm_perf->gc_time_ratio) w.Key("time_ratio").Double(*s.jvm_perf->gc_time_ratio);
      w.Key("last_cause").String(gc.last_cause);
      // "file" (hsperfdata) or "memory" (the JVM's perf memory: no file,
      // for the reason in no_file).
      w.Key("source").String(s.jvm_perf->source);
      if (!s.jvm_perf->no_file.empty()) w.Key("no_file").String(s.jvm_perf->no_file);
      w.Key("collectors").BeginArray();
      for (const jvm::PerfGcCollector& c : gc.collectors) {
        w.BeginObject().Key("name").String(c.name).Key("collections").Uint(c.invocations);
        w.Key("seconds").Double(c.seconds).EndObject();
      }
      w.EndArray().EndObject();
    }
    w.Key("risks").BeginArray();
    for (const RiskFinding& f : AssessJvmRisks(s)) {
      w.BeginObject().Key("check").String(f.check).Key("at_risk").Bool(f.at_risk);
      w.Key("explanation").String(f.explanation).EndObject();
    }
    w.EndArray();
    w.Key("advice").BeginArray();
    for (const Advice& a : AdviseJvm(s)) {
      w.BeginObject().Key("check").String(a.check).Key("text").String(a.text).EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  if (ts.sample.sites) {
    w.Key("sites");
    report::SitesJson(w, *ts.sample.sites, report::kReportSites);
  } else if (!ts.sample.sites_missing.empty()) {
    w.Key("sites_missing").String(ts.sample.sites_missing);
  }
  w.Key("missing").BeginArray();
  for (const MissingFigure& m : MissingFigures(ts.sample)) {
    w.BeginObject().Key("figure").String(m.figure).Key("why").String(m.why).EndObject();
  }
  w.EndArray();
  w.Key("collectors").BeginArray();
  for (const CollectorOutcome& o : ts.collectors) {
    w.BeginObject().Key("name").String(o.name).Key("success").Bool(o.success);
    w.Key("duration_seconds").Double(o.duration_seconds);
    if (!o.success) w.Key("error").String(o.error);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.str() + "\n";
}

namespace {

std::string SignedBytes(int64_t v) { return FormatBytes(static_cast<double>(v)); }

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

void TrimJsonFields(JsonWriter& w, const TrimResult& r) {
  w.Key("pid").Int(r.pid).Key("backend").String(r.backend).Key("trigger").String(r.trigger);
  w.Key("allocator").String(r.allocator).Key("call").String(r.call);
  if (r.free_kept_before) w.Key("free_kept_before_bytes").Uint(*r.free_kept_before);
  if (r.free_kept_after) w.Key("free_kept_after_bytes").Uint(*r.free_kept_after);
  if (r.committed_before) w.Key("committed_before_bytes").Uint(*r.committed_before);
  if (r.committed_after) w.Key("committed_after_bytes").Uint(*r.committed_after);
  w.Key("success").Bool(r.success);
  if (!r.success) w.Key("reason").String(r.reason).Key("error").String(r.error);
  w.Key("at_unix_seconds").Double(std::chrono::duration<double>(r.at.time_since_epoch()).count());
  w.Key("duration_seconds").Double(r.duration_seconds);
  w.Key("rss_swap_before_bytes").Uint(r.before.rss_swap_bytes);
  w.Key("rss_swap_after_bytes").Uint(r.after.rss_swap_bytes);
  w.Key("reclaimed_rss_swap_bytes").Int(r.ReclaimedRssSwap());
  if (auto c = r.ReclaimedCgroup()) w.Key("reclaimed_cgroup_bytes").Int(*c);
  if (auto a = r.ReclaimedArenaHeaps()) w.Key("reclaimed_arena_heaps_bytes").Int(*a);
  if (r.before.arena_resident_bytes)
    w.Key("arena_heaps_before_bytes").Uint(*r.before.arena_resident_bytes);
  if (r.after.arena_resident_bytes)
    w.Key("arena_heaps_after_bytes").Uint(*r.after.arena_resident_bytes);
  if (auto rep = r.Reported()) w.Key("reported_bytes").Int(*rep);
  // Each arena heap before and after (absent side: the heap came or went).
  std::vector<HeapTrimDelta> heaps = PairHeaps(r.before, r.after);
  if (!heaps.empty()) {
    w.Key("arena_heaps").BeginArray();
    for (const HeapTrimDelta& h : heaps) {
      w.BeginObject().Key("start").String(Hex(h.start));
      w.Key("before_resident_bytes");
      h.before_resident ? w.Uint(*h.before_resident) : w.Null();
      w.Key("after_resident_bytes");
      h.after_resident ? w.Uint(*h.after_resident) : w.Null();
      w.EndObject();
    }
    w.EndArray();
  }
}

// One line per arena heap: start, before -> after, change.
void RenderHeapTrims(Table& t, const TrimResult& r) {
  std::vector<HeapTrimDelta> heaps = PairHeaps(r.before, r.after);
  if (heaps.empty()) return;
  t.Say("arena heaps, resident before -> after:");
  for (const HeapTrimDelta& h : heaps) {
    std::string line = "  " + Hex(h.start) + "  " +
                       (h.before_resident ? Bytes(*h.before_resident) : "(new)") + " -> " +
                       (h.after_resident ? Bytes(*h.after_resident) : "(gone)");
    if (auto c = h.Change()) line += "  (" + SignedBytes(*c) + ")";
    t.Say(line);
  }
}

std::string TrimLine(const TrimResult& r) {
  std::string line = Utc(std::chrono::duration<double>(r.at.time_since_epoch()).count()) + "  " +
                     r.backend + " " + r.trigger + ": ";
  if (!r.success) return line + "failed (" + r.reason + "): " + r.error;
  char dur[32];
  std::snprintf(dur, sizeof(dur), "%.3f s", r.duration_seconds);
  line += "gave back " + SignedBytes(r.ReclaimedRssSwap()) + " RSS+swap in " + dur;
  if (auto a = r.ReclaimedArenaHeaps()) line += ", arena heaps " + SignedBytes(*a);
  if (auto c = r.ReclaimedCgroup()) line += ", cgroup " + SignedBytes(*c);
  if (auto rep = r.Reported()) line += ", reported " + SignedBytes(*rep);
  if (!r.call.empty()) line += " (" + r.allocator + ": " + r.call + ")";
  return line;
}

void RenderTrimStats(Table& t, const TrimStats& s) {
  t.Heading("Trimming (backend " + s.backend_setting + ")");
  if (s.effective_interval.count() == 0) {
    t.Say("scheduled trims are off (--trim.interval=0)");
  } else {
    std::string next =
        s.in_progress ? "a trim is running now"
        : s.next_due_in_seconds
            ? "next in " + FormatDuration(std::chrono::milliseconds(
                               static_cast<int64_t>(std::max(0.0, *s.next_due_in_seconds) * 1000)))
            : "";
    t.Say("every " + FormatDuration(s.effective_interval) + "; " + next +
          (s.last_skip_reason.empty() ? "" : "; last decision: skip (" + s.last_skip_reason + ")"));
  }
  t.Say("given back so far: " + Bytes(s.reclaimed_total_bytes) + " RSS+swap");
  for (const TrimResult& r : s.recent) t.Say(TrimLine(r));
  if (!s.recent.empty()) RenderHeapTrims(t, s.recent.front());
}

}  // namespace

std::string RenderTrimText(const TrimResult& r) {
  Table t;
  t.Heading("trim of pid " + std::to_string(r.pid) + " through the " + r.backend + " backend" +
            (r.call.empty() ? "" : " (" + r.allocator + ": " + r.call + ")") + ": " +
            (r.success ? "done" : "failed (" + r.reason + ")"));
  if (!r.success) t.Say(r.error);
  char dur[32];
  std::snprintf(dur, sizeof(dur), "%.3f s", r.duration_seconds);
  t.Row("duration", dur);
  t.Row("RSS+swap before", Bytes(r.before.rss_swap_bytes));
  t.Row("RSS+swap after", Bytes(r.after.rss_swap_bytes));
  t.Row("given back", SignedBytes(r.ReclaimedRssSwap()), "measured from /proc/<pid>/status");
  if (r.before.arena_resident_bytes && r.after.arena_resident_bytes) {
    t.Row("arena heaps before", Bytes(*r.before.arena_resident_bytes));
    t.Row("arena heaps after", Bytes(*r.after.arena_resident_bytes));
  }
  if (auto c = r.ReclaimedCgroup()) {
    t.Row("cgroup usage change", SignedBytes(-*c),
          "huge pages can keep memory.current from moving");
  }
  if (auto rep = r.Reported()) t.Row("reported by " + r.backend, SignedBytes(*rep));
  if (r.free_kept_before && r.free_kept_after) {
    t.Row(r.allocator + " free kept",
          Bytes(*r.free_kept_before) + " -> " + Bytes(*r.free_kept_after),
          "the allocator's own figure, just before and after its call");
  }
  if (r.committed_before && r.committed_after) {
    t.Row(r.allocator + " committed",
          Bytes(*r.committed_before) + " -> " + Bytes(*r.committed_after),
          "the allocator's own figure, just before and after its call");
  }
  RenderHeapTrims(t, r);
  return t.Take();
}

std::string RenderTrimJson(const TrimResult& r) {
  JsonWriter w;
  w.BeginObject();
  TrimJsonFields(w, r);
  w.EndObject();
  return w.str() + "\n";
}

namespace {

const TrimStats* TrimsOf(const std::vector<TrimStats>* trims, const Target& t) {
  if (trims == nullptr) return nullptr;
  for (const TrimStats& s : *trims) {
    if (s.pid == t.pid && s.start_ticks == t.start_ticks) return &s;
  }
  return nullptr;
}

void TrimStatsJson(JsonWriter& w, const TrimStats& trims) {
  w.BeginObject();
  w.Key("pid").Int(trims.pid);
  w.Key("opted_in").Bool(trims.opted_in);
  w.Key("backend").String(trims.backend_setting);
  w.Key("interval_seconds").Double(std::chrono::duration<double>(trims.effective_interval).count());
  if (trims.next_due_in_seconds) w.Key("next_in_seconds").Double(*trims.next_due_in_seconds);
  w.Key("in_progress").Bool(trims.in_progress);
  w.Key("last_skip_reason").String(trims.last_skip_reason);
  w.Key("reclaimed_total_bytes").Uint(trims.reclaimed_total_bytes);
  w.Key("recent").BeginArray();
  for (const TrimResult& r : trims.recent) {
    w.BeginObject();
    TrimJsonFields(w, r);
    w.EndObject();
  }
  w.EndArray().EndObject();
}

}  // namespace

std::string RenderReportText(const Snapshot* snap, const std::vector<TrimStats>* trims) {
  std::string out;
  if (snap == nullptr) {
    out = "no sample yet\n";
  } else if (snap->targets.empty()) {
    out = "no target: " + snap->no_target_reason + "\n";
  } else {
    if (snap->node_mode) {
      out += "node-agent mode: " + std::to_string(snap->targets.size() + snap->targets_unsampled) +
             " targets watched";
      if (snap->targets_skipped > 0) {
        out += ", " + std::to_string(snap->targets_skipped) + " more left out by --targets.max";
      }
      if (snap->targets_read_stalled > 0) {
        out += "; reads of " + std::to_string(snap->targets_read_stalled) +
               " have run past their deadline (last figures shown; " +
               std::to_string(snap->targets_unsampled) + " with none yet, not listed)";
      }
      out += "\n\n";
    }
    for (std::size_t i = 0; i < snap->targets.size(); ++i) {
      const TargetSnapshot& ts = snap->targets[i];
      if (i > 0) out += "\n";
      if (ts.read_stalled_seconds > 0) {
        out += "(figures from before a read of this process that has run " +
               std::to_string(static_cast<long long>(ts.read_stalled_seconds)) +
               " s without ending)\n";
      }
      out += RenderInspectTable(ts);
      if (const TrimStats* st = TrimsOf(trims, ts.target)) {
        Table t;
        RenderTrimStats(t, *st);
        out += "\n" + t.Take();
      }
    }
  }
  return text::ToValidUtf8(out);
}

std::string RenderReportJson(const Snapshot* snap, const std::vector<TrimStats>* trims) {
  std::string out = "{\"targets\":[";
  if (snap != nullptr) {
    for (std::size_t i = 0; i < snap->targets.size(); ++i) {
      std::string one = RenderInspectJson(snap->targets[i]);
      if (!one.empty() && one.back() == '\n') one.pop_back();
      out += (i ? "," : "") + one;
    }
  }
  out += "],\"no_target_reason\":";
  AppendJsonString(out, snap == nullptr ? "no sample yet" : snap->no_target_reason);
  if (snap != nullptr) {
    // The sample the page at / was drawn from carries the same number.
    out += ",\"sequence\":" + std::to_string(snap->sequence);
    out += ",\"node_mode\":" + std::string(snap->node_mode ? "true" : "false");
    out += ",\"targets_skipped\":" + std::to_string(snap->targets_skipped);
    out += ",\"targets_read_stalled\":" + std::to_string(snap->targets_read_stalled);
  }
  if (trims != nullptr) {
    // "trims": one entry per target; "trim": the first target's, as the
    // sidecar has always served it.
    std::string all = "[";
    for (std::size_t i = 0; i < trims->size(); ++i) {
      JsonWriter w;
      TrimStatsJson(w, (*trims)[i]);
      all += (i ? "," : "") + w.str();
    }
    out += ",\"trims\":" + all + "]";
    const TrimStats* first = snap != nullptr && !snap->targets.empty()
                                 ? TrimsOf(trims, snap->targets.front().target)
                                 : nullptr;
    if (first != nullptr) {
      JsonWriter w;
      TrimStatsJson(w, *first);
      out += ",\"trim\":" + w.str();
    }
  }
  out += "}\n";
  return out;
}

}  // namespace memtrimd

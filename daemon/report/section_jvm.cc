#include "daemon/report/section_jvm.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "daemon/analysis/advice.h"
#include "daemon/analysis/findings.h"

namespace memtrimd::report {
namespace {

std::string PoolLine(const BufferPool& p) {
  return std::to_string(p.count) + " buffers, capacity " + Bytes(p.total_capacity);
}

}  // namespace

void JvmText(TextTable& t, const TargetSample& s) {
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

void JvmJson(JsonWriter& w, const TargetSample& s) {
  if (!s.jvm && !s.jvm_perf) return;
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

}  // namespace memtrimd::report

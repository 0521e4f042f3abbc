#include "daemon/inspect.h"

#include <cstdio>
#include <ctime>

#include "daemon/json_writer.h"
#include "daemon/units.h"

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
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

std::string Bytes(uint64_t b) { return FormatBytes(static_cast<double>(b)); }

std::string Percent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f %%", ratio * 100);
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

}  // namespace

std::string RenderInspectTable(const TargetSnapshot& ts) {
  Table t;
  const Target& tg = ts.target;
  double up = static_cast<double>(std::time(nullptr)) - ts.start_time_seconds;
  t.Heading("pid " + std::to_string(tg.pid) + " (" + tg.comm + "), runtime " +
            RuntimeName(tg.runtime) + ", started " + Utc(ts.start_time_seconds) + " (up " +
            FormatDuration(std::chrono::seconds(static_cast<int64_t>(up > 0 ? up : 0))) + ")");

  const auto& p = ts.sample.process;
  uint64_t rss = 0;
  t.Heading("Resident memory (from /proc/" + std::to_string(tg.pid) + "/status)");
  if (p) {
    rss = p->rss_anon + p->rss_file + p->rss_shmem;
    t.Row("RSS", Bytes(rss), "what the kernel counts against the process");
    t.Row("  anonymous", Bytes(p->rss_anon), "malloc heaps, stacks, anonymous mmaps");
    t.Row("  file-backed", Bytes(p->rss_file), "code and mapped files; the kernel can drop these");
    t.Row("  shared memory", Bytes(p->rss_shmem), "shmem and tmpfs pages");
    t.Row("swap", Bytes(p->vm_swap));
    t.Row("peak RSS", Bytes(p->vm_hwm), "highest RSS since the process started");
    t.Row("threads", std::to_string(p->threads), "each thread that mallocs may get its own arena");
  } else {
    ExplainFailure(t, ts, "process");
  }

  const auto& g = ts.sample.glibc;
  if (g) {
    char hdr[160];
    std::snprintf(hdr, sizeof(hdr), "glibc malloc (from smaps: %zu mappings, read in %.1f ms)",
                  g->mappings, g->read_seconds * 1000);
    t.Heading(hdr);
    std::string confirmed = g->heaps.empty() ? ""
                            : g->confirmed == g->heaps.size()
                                ? "all confirmed by their heap header"
                                : std::to_string(g->confirmed) + " confirmed by their heap header";
    t.Row("arena heaps", std::to_string(g->heaps.size()),
          "64 MiB heaps of the non-main arenas" + (confirmed.empty() ? "" : "; " + confirmed));
    t.Row("arena heaps mapped", Bytes(g->usable_bytes), "address space glibc made usable");
    t.Row("arena heaps resident", Bytes(g->resident_bytes),
          "in RAM: live data plus freed memory glibc keeps");
    t.Row("main arena resident", Bytes(g->main_arena_resident_bytes), "the [heap] brk area");
    uint64_t base = rss ? rss : g->smaps_rss_bytes;
    if (base > 0 && !g->heaps.empty()) {
      double share = static_cast<double>(g->resident_bytes) / static_cast<double>(base);
      std::string verdict =
          share >= 0.5
              ? "Arena heaps hold " + Percent(share) +
                    " of RSS. If the program's live data is much smaller, most of this is freed "
                    "memory glibc keeps; malloc_trim can give its whole free pages back."
              : "Arena heaps hold " + Percent(share) + " of RSS.";
      t.Say(verdict);
    }
  } else {
    t.Heading("glibc malloc");
    ExplainFailure(t, ts, "glibc");
  }

  const auto& c = ts.sample.cgroup;
  std::string source = !c                                ? ""
                       : c->limit_source == LimitSource::kFlag ? "--target.memory-limit"
                       : c->version == 0                        ? ""
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
            ratio >= 0.9 ? "close to the OOM kill" : ratio >= 0.75 ? "getting close" : "");
    }
    if (c->oom_kills) t.Row("OOM kills", std::to_string(*c->oom_kills), "in this cgroup so far");
  }
  ExplainFailure(t, ts, "cgroup");
  return t.Take();
}

std::string RenderInspectJson(const TargetSnapshot& ts) {
  JsonWriter w;
  const Target& tg = ts.target;
  w.BeginObject();
  w.Key("pid").Int(tg.pid).Key("comm").String(tg.comm).Key("runtime").String(
      RuntimeName(tg.runtime));
  w.Key("start_time_seconds").Double(ts.start_time_seconds);
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
    w.Key("arena_heaps").Uint(g->heaps.size());
    w.Key("arena_heaps_confirmed").Uint(g->confirmed);
    w.Key("arena_heap_mapped_bytes").Uint(g->usable_bytes);
    w.Key("arena_heap_resident_bytes").Uint(g->resident_bytes);
    w.Key("main_arena_resident_bytes").Uint(g->main_arena_resident_bytes);
    w.Key("mappings").Uint(g->mappings);
    w.Key("smaps_read_seconds").Double(g->read_seconds);
    w.EndObject();
  }
  if (const auto& c = ts.sample.cgroup) {
    w.Key("cgroup").BeginObject();
    w.Key("version").Int(c->version).Key("path").String(c->path);
    w.Key("limit_bytes");
    c->limit_bytes ? w.Uint(*c->limit_bytes) : w.Null();
    w.Key("limit_source").String(c->limit_source == LimitSource::kFlag     ? "flag"
                                 : c->limit_source == LimitSource::kCgroup ? "cgroup"
                                                                           : "none");
    if (c->usage_bytes) w.Key("usage_bytes").Uint(*c->usage_bytes);
    if (c->anon_bytes) w.Key("anon_bytes").Uint(*c->anon_bytes);
    if (c->file_bytes) w.Key("file_bytes").Uint(*c->file_bytes);
    if (c->oom_kills) w.Key("oom_kills").Uint(*c->oom_kills);
    w.EndObject();
  }
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

}  // namespace memtrimd

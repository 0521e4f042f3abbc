#include "daemon/report/section_cgroup.h"

#include <string>

#include "daemon/report/collector_note.h"

namespace memtrimd::report {

std::optional<uint64_t> LimitOf(const TargetSample& s) {
  if (s.cgroup && s.cgroup->limit_bytes) return s.cgroup->limit_bytes;
  return std::nullopt;
}

void CgroupText(TextTable& t, const TargetSnapshot& ts) {
  const uint64_t rss = ts.sample.process ? ts.sample.process->Rss() : 0;
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
  ExplainFailure(t, ts, "cgroup");
}

void CgroupJson(JsonWriter& w, const TargetSample& s) {
  const auto& c = s.cgroup;
  if (!c) return;
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

}  // namespace memtrimd::report

#include "daemon/report/section_allocator.h"

#include <string>

#include "daemon/analysis/allocator_findings.h"
#include "daemon/base/units.h"

namespace memtrimd::report {

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

void AllocatorText(TextTable& t, const Target& target, const AllocatorView& v,
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

}  // namespace memtrimd::report

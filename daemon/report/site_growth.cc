#include "daemon/report/site_growth.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "daemon/base/units.h"

namespace memtrimd::report {
namespace {

// Whole minutes, as a person reads a span of reads 30 s apart.
std::string Minutes(int64_t ms) {
  const int64_t minutes = std::max<int64_t>(ms / 60'000, 1);
  return FormatDuration(std::chrono::minutes(minutes));
}

std::string Fixed(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

}  // namespace

std::optional<SiteGrowth> SiteGrowthOf(const SampleHistory* history, const Target& target,
                                       uint64_t up_to_sequence) {
  if (history == nullptr) return std::nullopt;
  std::optional<SiteHistoryView> view = history->sites().Of(target, up_to_sequence);
  if (!view || view->rest.empty()) return std::nullopt;
  SiteGrowth g;
  g.first_ms = view->rest.front().t_ms;
  g.last_ms = view->rest.back().t_ms;
  g.reads = view->rest.size();
  std::vector<SiteLeakPoint> points;
  for (const SiteTimeline& t : view->sites) {
    // A run must reach the newest read: a site no longer among the largest
    // is not growing now.
    if (t.points.empty() || t.points.back().t_ms != g.last_ms) continue;
    points.clear();
    for (const SiteHistoryPoint& p : t.points) points.push_back({p.t_ms, p.bytes});
    if (std::optional<SiteLeak> leak = FindSiteLeak(points)) {
      g.growing.push_back({t.name, t.nmt_tracked, *leak});
    }
  }
  std::stable_sort(g.growing.begin(), g.growing.end(),
                   [](const GrowingSite& a, const GrowingSite& b) {
                     return a.leak.bytes_per_hour > b.leak.bytes_per_hour;
                   });
  return g;
}

std::string GrowingSiteSentence(const GrowingSite& g) {
  const SiteLeak& l = g.leak;
  std::string out = g.site + ": " + std::string(kGrowthMeasure) + " bytes grew " +
                    FormatBytes(l.bytes_per_hour) + "/h since " + ClockUtc(l.since_ms) +
                    " UTC, steady for " + Minutes(l.span_ms());
  // The history's window ends there; the rise may be older.
  if (l.from_first_point) out += " (as far back as the history goes)";
  out += ", Kendall tau " + Fixed(l.tau, 2) + " over " + std::to_string(l.points) + " reads";
  if (g.nmt_tracked) out += "; NMT counts it";
  return out;
}

std::string NoGrowthSentence(const SiteGrowth& g) {
  const SiteLeakRule rule;
  const int64_t span = g.last_ms - g.first_ms;
  if (span < rule.min_span_ms || g.reads < rule.min_points) {
    return "Steady growth: not judged yet; it needs " + Minutes(rule.min_span_ms) + " and " +
           std::to_string(rule.min_points) + " reads of the sites, there are " +
           std::to_string(g.reads) + " over " + Minutes(span);
  }
  return "Steady growth: none among the largest sites over the last " + Minutes(span) + " (" +
         std::to_string(g.reads) + " reads)";
}

void SiteGrowthText(TextTable& t, const SiteGrowth& g) {
  if (g.growing.empty()) {
    t.Say(NoGrowthSentence(g));
    return;
  }
  t.Say("Growing steadily, a leak until shown otherwise:");
  for (const GrowingSite& s : g.growing) t.Say("  " + GrowingSiteSentence(s));
}

void SiteGrowthJson(JsonWriter& w, const SiteGrowth& g) {
  w.Key("site_growth").BeginObject();
  w.Key("measure").String(kGrowthMeasure);
  w.Key("first_read_seconds").Double(static_cast<double>(g.first_ms) / 1000);
  w.Key("last_read_seconds").Double(static_cast<double>(g.last_ms) / 1000);
  w.Key("reads").Uint(g.reads);
  w.Key("growing").BeginArray();
  for (const GrowingSite& s : g.growing) {
    const SiteLeak& l = s.leak;
    w.BeginObject().Key("site").String(s.site);
    w.Key("bytes_per_hour").Double(l.bytes_per_hour);
    w.Key("since_seconds").Double(static_cast<double>(l.since_ms) / 1000);
    w.Key("steady_seconds").Double(static_cast<double>(l.span_ms()) / 1000);
    w.Key("since_first_read").Bool(l.from_first_point);
    w.Key("kendall_tau").Double(l.tau).Key("reads").Uint(l.points);
    w.Key("nmt_tracked").Bool(s.nmt_tracked);
    w.Key("text").String(GrowingSiteSentence(s));
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

}  // namespace memtrimd::report

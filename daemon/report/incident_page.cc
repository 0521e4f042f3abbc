#include "daemon/report/incident_page.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "daemon/analysis/advice.h"
#include "daemon/analysis/allocator_findings.h"
#include "daemon/analysis/findings.h"
#include "daemon/analysis/rss_account.h"
#include "daemon/analysis/site_share.h"
#include "daemon/analysis/top_sites.h"
#include "daemon/base/units.h"
#include "daemon/build_info.h"
#include "daemon/report/section_account.h"
#include "daemon/report/section_cgroup.h"
#include "daemon/report/section_direct_callers.h"
#include "daemon/report/section_trims.h"
#include "daemon/report/site_growth.h"
#include "daemon/report/site_report.h"
#include "daemon/report/svg_chart.h"

namespace memtrimd {
namespace {

using report::LimitOf;

// The stylesheet: type and layout only. Colours that carry meaning (the
// bar's parts, the chart lines, the legend keys) are SVG presentation
// attributes in the page, so that the page reads the same without it.
constexpr std::string_view kCss =
    "body{font:14px/1.4 system-ui,sans-serif;margin:16px 24px;color:#1b1b1b;background:#fafafa}\n"
    "h1{font-size:20px;margin:0 0 4px}h2{font-size:17px;margin:20px 0 6px}"
    "h3{font-size:15px;margin:14px 0 4px}\n"
    ".meta{color:#555}a{color:#0645ad}\n"
    "table{border-collapse:collapse}td,th{padding:3px 10px;border-bottom:1px solid #ddd;"
    "text-align:right}\n"
    "td:first-child,th:first-child,td.l,th.l{text-align:left}\n"
    ".legend span{white-space:nowrap}.legend svg.key{vertical-align:-1px;margin:0 4px 0 8px}\n"
    ".charts{display:flex;flex-wrap:wrap;gap:8px}"
    "figure{margin:0;background:#fff;border:1px solid #ddd;padding:6px;max-width:424px}\n"
    "figcaption{font-weight:600}.note{color:#555;font-size:12px;margin:4px 0 0}\n"
    ".risk{color:#b00;font-weight:600}.ok{color:#2a7}.todo{color:#555}\n"
    "ul{margin:4px 0;padding-left:20px}li{margin:2px 0}\n";

// Three bars, the page's own picture; same-origin, so a CSP of
// default-src 'self' lets the browser load it.
constexpr std::string_view kIcon =
    "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 16 16\">"
    "<rect x=\"1\" y=\"9\" width=\"4\" height=\"6\" fill=\"#4e79a7\"/>"
    "<rect x=\"6\" y=\"5\" width=\"4\" height=\"10\" fill=\"#f28e2b\"/>"
    "<rect x=\"11\" y=\"1\" width=\"4\" height=\"14\" fill=\"#59a14f\"/></svg>\n";

// The free memory the target's allocator keeps ("12.0 MiB", or "3.1 MiB
// jemalloc" for another allocator than glibc); "" when not known.
std::string FreeKept(const std::optional<RssAccount>& a) {
  if (!a) return "";
  if (a->glibc_free) return FormatMib(*a->glibc_free);
  if (a->allocator_free) return FormatMib(*a->allocator_free) + " " + HtmlEscape(a->allocator);
  return "";
}

// As /report's process.rss_bytes adds it up.
uint64_t RssOf(const TargetSample& s) { return s.process ? s.process->Rss() : 0; }

std::string TargetName(const TargetSnapshot& ts) {
  return HtmlEscape(ts.target.comm) + " (pid " + std::to_string(ts.target.pid) + ")";
}

// Under the direct memory chart: what NMT Other is when it stands in for
// the pool, or why there is nothing to draw and what would give it. The
// same reading as /report's: the pool is what -XX:MaxDirectMemorySize
// limits; NMT Other holds it and more, so it bounds the pool from above and
// is never called the pool.
std::string DirectChartNote(const TargetSample& s, bool pool_drawn, bool nmt_other_drawn) {
  // The pool needs the agent; a loaded agent that did not answer says why.
  const bool agent_failed = s.agent_loaded && !s.jvm_buffers_missing.empty();
  const std::string get_pool = "start the JVM with LD_PRELOAD=libmemtrimd_agent.so";
  if (nmt_other_drawn) {
    std::string note =
        std::string(pool_drawn ? "Where the pool line is missing, the dashed line is NMT Other"
                               : "The dashed line is NMT Other, not the direct buffer pool") +
        ": it also holds the temporary buffer cache, FFM and Unsafe memory, so the pool (what "
        "-XX:MaxDirectMemorySize limits) is at most this.";
    if (s.jvm_buffers) return note;
    return note + (agent_failed ? " The pool is not read: " + s.jvm_buffers_missing + "."
                                : " To chart the pool itself, " + get_pool + ".");
  }
  if (pool_drawn) return "";
  std::string nmt_why;
  if (s.jvm && !s.jvm->attachable) {
    nmt_why = "NMT cannot be read: the JVM is not attachable (see below)";
  } else if (s.jvm && s.jvm->nmt && !s.jvm->nmt->enabled) {
    nmt_why = "NMT is off (-XX:NativeMemoryTracking=summary would give NMT Other, an upper bound)";
  } else {
    nmt_why = "NMT is not read yet (every --jvm.interval)";
  }
  if (s.jvm_buffers) {
    return "No data: the pool is not read yet (every --smaps.interval), and " + nmt_why + ".";
  }
  return "No data: " +
         (agent_failed
              ? "the pool is not read (" + s.jvm_buffers_missing + ")"
              : std::string("the direct buffer pool needs libmemtrimd_agent.so in the JVM")) +
         ", and " + nmt_why + "." + (agent_failed ? "" : " To chart the pool, " + get_pool + ".");
}

void RenderCharts(std::string& out, const TargetSnapshot& ts, const SampleHistory* history,
                  uint64_t sequence, int64_t now_ms) {
  if (history == nullptr) return;
  std::optional<TargetHistory> h = history->Of(ts.target, sequence);
  if (!h || h->points.empty()) return;
  const int64_t to = std::max(now_ms, h->points.back().t_ms);
  // From the first point kept (at most the window back), at least a minute:
  // a target watched for two minutes gets two minutes across the chart, not
  // a sliver at the right end of an hour.
  const int64_t from =
      std::min(std::max(to - history->window().count(), h->points.front().t_ms), to - 60000);
  ChartSeries rss{"rss", "RSS", "#4e79a7", false, {}};
  ChartSeries limit{"limit", "limit", "#c00", true, {}};
  ChartSeries arena{"arena_heaps", "arena heaps resident", "#f28e2b", false, {}};
  ChartSeries direct{"direct", "direct buffer pool", "#b07aa1", false, {}};
  // Dashed: an upper bound of the pool, not the pool.
  ChartSeries nmt_other{"nmt_other",
                        "NMT Other (direct buffers, temporary buffer cache, FFM, Unsafe)",
                        "#b07aa1",
                        true,
                        {}};
  for (const HistoryPoint& p : h->points) {
    if (p.rss != kNoValue) rss.points.push_back({p.t_ms, p.rss});
    if (p.limit != kNoValue) limit.points.push_back({p.t_ms, p.limit});
    if (p.arena_resident != kNoValue) arena.points.push_back({p.t_ms, p.arena_resident});
    if (auto d = DirectOf(p))
      (d->nmt_other ? nmt_other : direct).points.push_back({p.t_ms, d->bytes});
  }
  std::vector<ChartMark> marks;
  for (const TrimMark& m : h->trims) marks.push_back({m.t_ms, m.before, m.after});
  out += "<h3>The last " + FormatDuration(history->window()) + "</h3>\n";
  out += "<div class=\"charts\" data-samples=\"" + std::to_string(h->points.size()) +
         "\" data-first-sequence=\"" + std::to_string(h->points.front().sequence) +
         "\" data-last-sequence=\"" + std::to_string(h->points.back().sequence) + "\">\n";
  std::vector<ChartSeries> first{rss};
  if (!limit.points.empty()) first.push_back(limit);
  out += RenderLineChart("RSS, memory limit and trims", from, to, first, marks);
  out += RenderLineChart("glibc arena heaps, resident", from, to, {arena}, {});
  if (ts.sample.jvm || ts.sample.jvm_perf) {
    std::vector<ChartSeries> series;
    if (!direct.points.empty() || nmt_other.points.empty()) series.push_back(direct);
    if (!nmt_other.points.empty()) series.push_back(nmt_other);
    out += RenderLineChart(
        "direct memory", from, to, series, {},
        DirectChartNote(ts.sample, !direct.points.empty(), !nmt_other.points.empty()));
  }
  out += "</div>\n";
}

// The sites' chart colours: apart from each other, and from the "other"
// line's grey.
constexpr const char* kSiteColors[] = {"#e15759", "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1"};
static_assert(std::size(kSiteColors) == SiteHistory::kTopSites);

std::string Percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "";
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%.0f %%",
                100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buf;
}

// The largest sites over the last hour: a line per site while it was among
// a read's largest, and the rest dashed.
void RenderSitesChart(std::string& out, const TargetSnapshot& ts, const SampleHistory* history,
                      uint64_t sequence, int64_t now_ms) {
  if (history == nullptr) return;
  std::optional<SiteHistoryView> h = history->sites().Of(ts.target, sequence);
  if (!h || h->rest.empty()) return;
  const int64_t to = std::max(now_ms, h->rest.back().t_ms);
  const int64_t from =
      std::min(std::max(to - history->window().count(), h->rest.front().t_ms), to - 60000);
  std::vector<ChartSeries> series;
  for (std::size_t i = 0; i < h->sites.size() && i < SiteHistory::kTopSites; ++i) {
    const SiteTimeline& t = h->sites[i];
    ChartSeries c{"site" + std::to_string(i),
                  t.name + (t.nmt_tracked ? " (NMT counts it)" : ""),
                  kSiteColors[i],
                  false,
                  {}};
    for (const SiteHistoryPoint& p : t.points) c.points.push_back({p.t_ms, p.bytes});
    series.push_back(std::move(c));
  }
  ChartSeries rest{"other_sites", "other sites", "#9aa5b1", true, {}};
  for (const SiteHistoryPoint& p : h->rest) rest.points.push_back({p.t_ms, p.bytes});
  series.push_back(std::move(rest));
  out += "<div class=\"charts\" data-site-reads=\"" + std::to_string(h->rest.size()) + "\">\n";
  out += RenderLineChart(
      "Largest allocation sites, " + std::string(kGrowthMeasure), from, to, series, {},
      "One line per site while it is among the " + std::to_string(SiteHistory::kTopSites) +
          " largest at a read (every --sites.interval); the dashed line is "
          "everything else sampled.");
  out += "</div>\n";
}

// The leak finding: each site that grows steadily, or what the check
// looked at. Nothing without the history (it is what the check reads).
void RenderSiteGrowth(std::string& out, const TargetSnapshot& ts, const SampleHistory* history,
                      uint64_t sequence) {
  const std::optional<report::SiteGrowth> g = report::SiteGrowthOf(history, ts.target, sequence);
  if (!g) return;
  if (g->growing.empty()) {
    out += "<p class=\"site-growth\" data-growing=\"0\">" +
           HtmlEscape(report::NoGrowthSentence(*g)) + ".</p>\n";
    return;
  }
  out += "<p class=\"site-growth\" data-growing=\"" + std::to_string(g->growing.size()) +
         "\">Growing steadily, a leak until shown otherwise:</p>\n<ul class=\"site-growth\">\n";
  for (const report::GrowingSite& site : g->growing) {
    char rate[32];
    std::snprintf(rate, sizeof(rate), "%.0f", site.leak.bytes_per_hour);
    out += "<li class=\"risk\" data-site=\"" + HtmlEscape(site.site) + "\" data-bytes-per-hour=\"" +
           rate + "\">" + HtmlEscape(report::GrowingSiteSentence(site)) + ".</li>\n";
  }
  out += "</ul>\n";
}

// "Who holds the native memory": the sampled allocation sites against the
// account's part that holds them, "outside NMT" for a JVM with NMT (the
// sites NMT counts are in its NMT-known parts instead), "native" otherwise.
void RenderSites(std::string& out, const TargetSnapshot& ts, const SampleHistory* history,
                 uint64_t sequence, int64_t now_ms) {
  const TargetSample& s = ts.sample;
  if (s.sampler) {
    out += "<p class=\"sampler\">" + HtmlEscape(report::SamplerText(*s.sampler)) + ".</p>\n";
  }
  if (!s.sites) {
    // Only with the sites collector on: it says why there are none.
    if (!s.sites_missing.empty()) {
      out +=
          "<p class=\"sites-missing\">Allocation sites: " + HtmlEscape(s.sites_missing) + ".</p>\n";
    }
    return;
  }
  const agent::SiteProfile& p = *s.sites;
  const std::optional<RssAccount> a = AccountRss(s);
  // The sites are of now; an account of another moment gets no share.
  const std::string not_of_now =
      a ? report::AccountNotOfNow(
              *a, std::chrono::system_clock::time_point(std::chrono::milliseconds(now_ms)))
        : "";
  const bool shares = a && not_of_now.empty();
  // Before the account (its smaps read), NMT as the JVM reported it.
  const bool nmt = a ? a->nmt.has_value() : s.jvm && s.jvm->nmt && s.jvm->nmt->enabled;
  const bool jvm = (a && a->is_jvm) || s.jvm || s.jvm_perf;
  const std::string part = nmt ? "outside_nmt" : "native";
  const std::string words = nmt ? "outside NMT" : "native";
  out += "<h3>Who holds the native memory</h3>\n";
  if (std::string unseen = report::NotSampledText(p); !unseen.empty()) {
    out += "<p class=\"not-sampled\" data-unhooked-objects=\"" +
           std::to_string(p.unhooked_objects) + "\">" + HtmlEscape(unseen) + ".</p>\n";
  }
  out += "<table class=\"sites\" data-part=\"" + part + "\"";
  if (a) out += " data-part-bytes=\"" + std::to_string(a->outside) + "\"";
  out += std::string(" data-shares=\"") + (shares ? "1" : "0") + "\"";
  // Shares of the part are of resident bytes (allocated memory never
  // touched holds no RSS); of live bytes only when the resident figure is
  // not known, and then said so.
  const bool resident = p.resident.known;
  out += "><tr><th>site (innermost function first)</th><th>live</th>";
  if (resident) out += "<th>resident</th>";
  out += "<th>of " + words + "</th>";
  if (jvm) out += "<th>NMT counts it</th>";
  out += "</tr>\n";
  uint64_t explained = 0, in_nmt = 0, explained_resident = 0, in_nmt_resident = 0;
  double explained_variance = 0;
  for (const agent::NamedSite& site : p.sites) {
    const uint64_t live = site.values.live_bytes;
    // Memory NMT counts is not in "outside NMT"; without NMT it is native.
    if (nmt && site.nmt_tracked) {
      in_nmt += live;
      in_nmt_resident += site.values.resident_bytes;
    } else {
      explained += live;
      explained_resident += site.values.resident_bytes;
      explained_variance += site.values.resident_variance;
    }
  }
  bool capped = false;
  auto row = [&](std::size_t i, const agent::NamedSite& site) {
    const uint64_t live = site.values.live_bytes;
    const uint64_t held = resident ? site.values.resident_bytes : live;
    std::string share;
    if (nmt && site.nmt_tracked) {
      share = "in NMT";
    } else if (shares) {
      const SiteShare sh = ShareOf(held, site.values.resident_variance, a->outside);
      share = resident ? sh.text : Percent(live, a->outside);
      capped = capped || (resident && sh.capped);
    }
    out += "<tr data-site-rank=\"" + std::to_string(i) + "\" data-live-bytes=\"" +
           std::to_string(live) + "\" data-nmt-tracked=\"" + (site.nmt_tracked ? "1" : "0") + "\"";
    if (resident) out += " data-resident-bytes=\"" + std::to_string(held) + "\"";
    out += "><td class=\"l\">" + HtmlEscape(site.name) + "</td><td>" + FormatMib(live) + "</td>";
    if (resident) out += "<td>" + FormatMib(held) + "</td>";
    out += "<td>" + share + "</td>";
    if (jvm) out += std::string("<td>") + (site.nmt_tracked ? "yes" : "no") + "</td>";
    out += "</tr>\n";
  };
  uint64_t resident_shown = 0;
  const uint64_t rest = ForTopSites(p, report::kReportSites, EmptySites::kStop,
                                    [&](std::size_t i, const agent::NamedSite& site) {
                                      row(i, site);
                                      resident_shown += site.values.resident_bytes;
                                    });
  out += "<tr data-site-rank=\"other\" data-live-bytes=\"" + std::to_string(rest) +
         "\"><td class=\"l\">other sites</td><td>" + FormatMib(rest) + "</td>";
  if (resident) {
    const uint64_t all = p.total.resident_bytes;
    out += "<td>" + FormatMib(all > resident_shown ? all - resident_shown : 0) + "</td>";
  }
  out += std::string("<td></td>") + (jvm ? "<td></td>" : "") + "</tr>\n</table>\n";
  // A file's name where a function's should be: say why, the next question.
  for (const agent::UnnamedFile& f : p.unnamed_files) {
    out += "<p class=\"unnamed-file\">" + HtmlEscape(report::UnnamedFileText(f)) + ".</p>\n";
  }
  if (p.budget_cut_stacks > 0) {
    out += "<p class=\"sites-missing\">" + std::to_string(p.budget_cut_stacks) +
           " of the largest stacks not kept: over the node's sites memory budget "
           "(--sites.memory-budget); their memory is in other sites.</p>\n";
  }

  out += "<p class=\"sites-explain\" data-explained-bytes=\"" + std::to_string(explained) + "\"";
  if (resident) {
    out += " data-resident-bytes=\"" + std::to_string(explained_resident) +
           "\" data-resident-error-bytes=\"" +
           std::to_string(TwoStandardErrors(explained_variance)) + "\"";
    if (shares) {
      const SiteShare all = ShareOf(explained_resident, explained_variance, a->outside);
      char pct[64];
      std::snprintf(pct, sizeof(pct), "%.1f\" data-share-error-percent=\"%.1f", all.percent,
                    all.error_percent);
      out += std::string(" data-share-percent=\"") + pct + "\"";
    }
  }
  out += ">";
  if (shares && resident) {
    // Resident against resident: the sites' pages in RAM of the part's.
    const SiteShare all = ShareOf(explained_resident, explained_variance, a->outside);
    capped = capped || all.capped;
    char err[48];
    std::snprintf(err, sizeof(err), " \u00b1 %.0f %%", all.error_percent);
    out += "The sampled sites hold " + FormatMib(explained_resident) + " resident (\u00b1 " +
           FormatMib(TwoStandardErrors(explained_variance)) + ", two standard errors) of the " +
           FormatMib(explained) + " they allocated: " + all.text + err + " of the " +
           FormatMib(a->outside) + " " + words + ".";
  } else if (shares) {
    out += "The sampled sites explain " + FormatMib(explained) + " of the " +
           FormatMib(a->outside) + " " + words;
    if (a->outside > 0) out += " (" + Percent(explained, a->outside) + ")";
    out += ".";
  } else if (a) {
    out += "The sampled sites hold " + FormatMib(explained) + "; no share of " + words + ": " +
           HtmlEscape(not_of_now) + ".";
  } else {
    out += "The sampled sites hold " + FormatMib(explained) + "; the share of " + words +
           " needs the account (a smaps read, every --smaps.interval).";
  }
  if (in_nmt > 0) {
    out += " Sites NMT counts (the JVM's own malloc) hold " + FormatMib(in_nmt) + " more";
    out += resident ? " (" + FormatMib(in_nmt_resident) + " resident)." : ".";
  }
  if (!resident) {
    out += " Shares are of bytes allocated, not resident (untouched pages hold no RSS): " +
           HtmlEscape(p.resident.why) + ".";
  } else if (p.resident.scaled) {
    out += " Resident bytes read for " + std::to_string(p.resident.read) + " of " +
           std::to_string(p.resident.samples) +
           " live samples (the pass's bound), scaled to all of them.";
  }
  const int64_t age_ms = std::max<int64_t>(0, now_ms - UnixMs(p.started_at));
  out += " Sampling since " + ClockUtc(UnixMs(p.started_at)) + " UTC (" +
         FormatDuration(std::chrono::milliseconds(age_ms)) +
         " ago): older allocations are not seen. Each figure is an estimate from samples taken "
         "every " +
         FormatBytes(static_cast<double>(p.period)) + " allocated on average.</p>\n";
  if (capped) {
    out += "<p class=\"sites-footnote\">* The resident estimate is above the " + words +
           " figure: the estimate has its error, and the two are read at different moments. "
           "Shown as 100 %.</p>\n";
  }
  RenderSiteGrowth(out, ts, history, sequence);
  RenderSitesChart(out, ts, history, sequence, now_ms);
}

void RenderFindings(std::string& out, const TargetSnapshot& ts, const TrimStats* trims) {
  const TargetSample& s = ts.sample;
  out += "<h3>What it means, and what to do</h3>\n<ul class=\"findings\">\n";
  std::vector<std::string> fine;
  for (const RiskFinding& f : AllFindings(ts.target, s)) {
    if (f.at_risk) {
      out += "<li class=\"risk\" data-check=\"" + HtmlEscape(f.check) + "\">Risk (" +
             HtmlEscape(f.check) + "): <span>" + HtmlEscape(f.explanation) + "</span></li>\n";
    } else {
      fine.push_back(f.check);
    }
  }
  if (!fine.empty()) {
    std::string list;
    for (const std::string& c : fine) list += (list.empty() ? "" : ", ") + c;
    out += "<li class=\"ok\">No risk seen by: " + HtmlEscape(list) + "</li>\n";
  }
  if (auto trimmable = TrimmableEstimate(s); trimmable && *trimmable > 0) {
    std::string last;
    if (trims && !trims->recent.empty() && trims->recent.front().success) {
      const TrimResult& r = trims->recent.front();
      const uint64_t given = r.before.rss_swap_bytes > r.after.rss_swap_bytes
                                 ? r.before.rss_swap_bytes - r.after.rss_swap_bytes
                                 : 0;
      last =
          " The last trim (" + ClockUtc(UnixMs(r.at)) + " UTC) gave back " + FormatMib(given) + ".";
    }
    out += "<li data-finding=\"trimmable\" data-bytes=\"" + std::to_string(*trimmable) +
           "\">malloc_trim would give back about " + FormatMib(*trimmable) +
           " now (of the free memory malloc keeps resident, a trim takes the whole free pages: "
           "free chunks under a page, and the partial pages beside live data, stay)" +
           (MallocStatsStale(s) ? " (statistics from before the last trim)" : "") +
           (trims && trims->opted_in
                ? ": memtrimd trims this target on its schedule."
                : ": memtrimd does not trim this target (MEMTRIMD_TRIM=1 in its environment "
                  "opts it in).") +
           last + "</li>\n";
  }
  if (std::string advice = MallocEnvAdvice(s); !advice.empty()) {
    out += "<li data-finding=\"malloc_env\">" + HtmlEscape(advice) + "</li>\n";
  }
  for (const CollectorOutcome& o : ts.collectors) {
    if (!o.success) {
      out += "<li data-finding=\"collector\">The " + HtmlEscape(o.name) +
             " collector failed: " + HtmlEscape(o.error) + ". <span class=\"todo\">What to do: " +
             HtmlEscape(CollectorErrorAction(o.name, o.cause)) + ".</span></li>\n";
    }
  }
  out += "</ul>\n";
  // Settings worth changing, apart from the risks and never red: a risk is
  // what threatens the process now.
  if (std::vector<Advice> advice = AdviseJvm(s); !advice.empty()) {
    out += "<h3>Advice: settings worth changing (not risks)</h3>\n<ul class=\"advice\">\n";
    for (const Advice& a : advice) {
      out += "<li data-advice=\"" + HtmlEscape(a.check) + "\">" + HtmlEscape(a.text) + "</li>\n";
    }
    out += "</ul>\n";
  }
  std::vector<MissingFigure> missing = MissingFigures(s);
  if (!missing.empty()) {
    out += "<h3>Not shown, and why</h3>\n<ul class=\"missing\">\n";
    for (const MissingFigure& m : missing) {
      out += "<li data-figure=\"" + HtmlEscape(m.figure) + "\"><b>" + HtmlEscape(m.figure) +
             "</b>: " + HtmlEscape(m.why) + "</li>\n";
    }
    out += "</ul>\n";
  }
  if (trims != nullptr) report::TrimsHtml(out, *trims);
}

void RenderTarget(std::string& out, const Snapshot& snap, const TargetSnapshot& ts,
                  const std::vector<TrimStats>* trims, const SampleHistory* history) {
  const TargetSample& s = ts.sample;
  out += "<section class=\"target\" data-pid=\"" + std::to_string(ts.target.pid) + "\">\n<h2>" +
         TargetName(ts) + "</h2>\n<p class=\"meta\">RSS " + FormatMib(RssOf(s));
  if (auto limit = LimitOf(s)) {
    out += " of a " + FormatMib(*limit) + " limit (" +
           std::to_string(static_cast<int>(100.0 * static_cast<double>(RssOf(s)) /
                                           static_cast<double>(std::max<uint64_t>(*limit, 1)))) +
           " %)";
  } else {
    out += "; no memory limit known";
  }
  out += "</p>\n";
  report::AccountHtml(out, s, snap.taken_at);
  RenderSites(out, ts, history, snap.sequence, UnixMs(snap.taken_at));
  RenderCharts(out, ts, history, snap.sequence, UnixMs(snap.taken_at));
  report::DirectCallersHtml(out, s);
  RenderFindings(out, ts, report::TrimsOf(trims, ts.target));
  out += "</section>\n";
}

// Fullest first: RSS / limit, then targets without a limit by RSS.
void RenderTargetTable(std::string& out, const Snapshot& snap) {
  std::vector<const TargetSnapshot*> rows;
  for (const TargetSnapshot& ts : snap.targets) rows.push_back(&ts);
  auto ratio = [](const TargetSnapshot* t) -> double {
    auto limit = LimitOf(t->sample);
    if (!limit || *limit == 0) return -1;
    return static_cast<double>(RssOf(t->sample)) / static_cast<double>(*limit);
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const TargetSnapshot* a, const TargetSnapshot* b) {
    double ra = ratio(a), rb = ratio(b);
    if (ra != rb) return ra > rb;
    return RssOf(a->sample) > RssOf(b->sample);
  });
  out += "<h2>" + std::to_string(rows.size()) + " targets, fullest first</h2>\n";
  if (snap.targets_skipped > 0) {
    out += "<p>" + std::to_string(snap.targets_skipped) + " more left out by --targets.max.</p>\n";
  }
  if (snap.sites_budget) {
    out += "<p>" + HtmlEscape(report::SitesBudgetText(*snap.sites_budget)) + ".</p>\n";
  }
  out +=
      "<table class=\"targets\"><tr><th>process</th><th>RSS</th><th>limit</th>"
      "<th>RSS / limit</th><th>malloc free kept</th><th class=\"l\">risks</th></tr>\n";
  for (const TargetSnapshot* ts : rows) {
    const TargetSample& s = ts->sample;
    auto limit = LimitOf(s);
    std::optional<RssAccount> a = AccountRss(s);
    std::string risks;
    for (const RiskFinding& f : AssessJvmRisks(s)) {
      if (f.at_risk) risks += (risks.empty() ? "" : ", ") + f.check;
    }
    char pct[16] = "";
    if (double r = ratio(ts); r >= 0) std::snprintf(pct, sizeof(pct), "%.0f %%", r * 100);
    out += "<tr data-pid=\"" + std::to_string(ts->target.pid) +
           "\"><td><a href=\"/?pid=" + std::to_string(ts->target.pid) + "\">" + TargetName(*ts) +
           "</a></td><td>" + FormatMib(RssOf(s)) + "</td><td>" +
           (limit ? FormatMib(*limit) : "none") + "</td><td>" + pct + "</td><td>" + FreeKept(a) +
           "</td><td class=\"l\">" + HtmlEscape(risks) + "</td></tr>\n";
  }
  out += "</table>\n";
}

}  // namespace

std::string_view IncidentPageCss() { return kCss; }

const std::string& IncidentPageAssetQuery() {
  static const std::string query = [] {
    std::string v = std::string(kVersion) + "-" + kRevision;
    // Only what needs no escaping in a URL or an HTML attribute.
    for (char& c : v) {
      const bool plain = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                         (c >= 'A' && c <= 'Z') || c == '.' || c == '-' || c == '_';
      if (!plain) c = '_';
    }
    return "?v=" + v;
  }();
  return query;
}
std::string_view IncidentPageIcon() { return kIcon; }

IncidentPage RenderIncidentPage(const Snapshot* snap, const std::vector<TrimStats>* trims,
                                const SampleHistory* history, const IncidentPageOptions& options) {
  IncidentPage page;
  std::string& out = page.html;
  // Every 30 s, or every sample when samples are further apart: a reload
  // costs memtrimd what a scrape does (docs/benchmarks.md, section 7), and
  // at 30 s a person watching adds under 5 % to its CPU.
  const int64_t refresh_s = std::max<int64_t>(
      30, std::chrono::duration_cast<std::chrono::seconds>(options.refresh).count());
  out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<link rel=\"icon\" href=\"" +
      std::string(kIncidentIconPath) + IncidentPageAssetQuery() +
      "\" type=\"image/svg+xml\">\n<link rel=\"stylesheet\" href=\"" + kIncidentCssPath +
      IncidentPageAssetQuery() + "\">\n<meta http-equiv=\"refresh\" content=\"" +
      std::to_string(refresh_s) + "\">\n<title>memtrimd</title>\n</head>\n";
  out += "<body data-sequence=\"" + std::to_string(snap ? snap->sequence : 0) + "\">\n";
  out += "<h1>memtrimd</h1>\n<p class=\"meta\">";
  if (snap != nullptr) {
    out += "Sample " + std::to_string(snap->sequence) + ", taken " +
           ClockUtc(UnixMs(snap->taken_at)) + " UTC; this page reloads every " +
           std::to_string(refresh_s) + " s. ";
  }
  out += "<a href=\"" + HtmlEscape(options.metrics_path) +
         "\">Metrics</a> · <a href=\"/report\">Report</a> (<a "
         "href=\"/report?format=json\">JSON</a>) · <a href=\"/healthz\">Health</a> · version " +
         HtmlEscape(kVersion) + " (" + HtmlEscape(kRevision) + ")</p>\n";
  if (snap == nullptr) {
    out += "<p>No sample yet.</p>\n";
  } else if (snap->targets.empty()) {
    out += "<p>No target: " + HtmlEscape(snap->no_target_reason) + "</p>\n";
  } else if (options.pid) {
    const TargetSnapshot* found = nullptr;
    for (const TargetSnapshot& ts : snap->targets) {
      if (ts.target.pid == *options.pid) found = &ts;
    }
    if (found == nullptr) {
      page.code = 404;
      out += "<p>No watched target has pid " + std::to_string(*options.pid) +
             " now. <a href=\"/\">All targets</a></p>\n";
    } else {
      if (snap->node_mode) out += "<p><a href=\"/\">All targets</a></p>\n";
      RenderTarget(out, *snap, *found, trims, history);
    }
  } else if (snap->node_mode) {
    RenderTargetTable(out, *snap);
  } else {
    for (const TargetSnapshot& ts : snap->targets) RenderTarget(out, *snap, ts, trims, history);
  }
  out += "</body></html>\n";
  return page;
}

}  // namespace memtrimd

#include "daemon/analysis/site_leak.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace memtrimd {
namespace {

constexpr double kMsPerHour = 3600.0 * 1000.0;

// Candidate starts of a run: at most this many, evenly spread. Each costs
// one pass over its pairs (Kendall); the slopes, a sort of every pair's,
// are taken only for the steadiest few.
constexpr std::size_t kMaxStarts = 24;

// How much less steady than the steadiest a longer run may be and still
// be the one reported.
constexpr double kTauSlack = 0.02;

double Bytes(const SiteLeakPoint& p) { return static_cast<double>(p.bytes); }

uint64_t MedianBytes(std::span<const SiteLeakPoint> run) {
  std::vector<uint64_t> b;
  b.reserve(run.size());
  for (const SiteLeakPoint& p : run) b.push_back(p.bytes);
  std::nth_element(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(b.size() / 2), b.end());
  return b[b.size() / 2];
}

// Whether the run falls: its running median (of k reads) comes down
// from a high by more than `share` of its whole range. A sawtooth's drop
// stays down for its next reads; a leak's churn is back up within a few, so
// its running median hardly comes down at all.
bool Falls(std::span<const SiteLeakPoint> run, double share) {
  const std::size_t k = std::max<std::size_t>(3, run.size() / 8);
  double high = 0, low = 0, peak = 0, fall = 0;
  for (std::size_t i = 0; i + k <= run.size(); ++i) {
    const double m = static_cast<double>(MedianBytes(run.subspan(i, k)));
    if (i == 0) high = low = peak = m;
    high = std::max(high, m);
    low = std::min(low, m);
    peak = std::max(peak, m);
    fall = std::max(fall, peak - m);
  }
  return high > low && fall > share * (high - low);
}

// `before`: the reads older than the run; `trend`: the run's KendallOf.
bool Rises(std::span<const SiteLeakPoint> before, std::span<const SiteLeakPoint> run,
           const KendallTrend& trend, const SiteLeakRule& rule, double* rate) {
  if (run.size() < rule.min_points) return false;
  const int64_t span = run.back().t_ms - run.front().t_ms;
  if (span < rule.min_span_ms) return false;
  if (trend.tau < rule.min_tau || trend.z < rule.min_z) return false;
  // A rise from a fall: the site held more before the run than halfway
  // through it. The ramp of a sawtooth, or a cache filling again.
  if (!before.empty()) {
    const uint64_t median = MedianBytes(run);
    for (const SiteLeakPoint& p : before) {
      if (p.bytes > median) return false;
    }
  }
  *rate = TheilSenBytesPerHour(run);
  if (*rate < rule.min_bytes_per_hour) return false;
  const double grown = *rate * static_cast<double>(span) / kMsPerHour;
  if (grown < static_cast<double>(rule.min_growth_bytes)) return false;
  if (Falls(run, rule.max_fall_share)) return false;
  // Every third rises: a cache that filled then held, or a burst then
  // nothing, has a flat one, and a run that starts before the rise did has
  // a flat first third.
  const std::size_t third = run.size() / 3;
  const double floor = *rate * rule.min_part_share;
  return TheilSenBytesPerHour(run.first(third + 1)) >= floor &&
         TheilSenBytesPerHour(run.subspan(third, third + 1)) >= floor &&
         TheilSenBytesPerHour(run.subspan(2 * third)) >= floor;
}

}  // namespace

double TheilSenBytesPerHour(std::span<const SiteLeakPoint> points) {
  std::vector<double> slopes;
  slopes.reserve(points.size() * (points.size() - 1) / 2);
  for (std::size_t i = 0; i < points.size(); ++i) {
    for (std::size_t j = i + 1; j < points.size(); ++j) {
      const int64_t dt = points[j].t_ms - points[i].t_ms;
      if (dt <= 0) continue;  // two reads in one millisecond say nothing of a rate
      slopes.push_back((Bytes(points[j]) - Bytes(points[i])) * kMsPerHour /
                       static_cast<double>(dt));
    }
  }
  if (slopes.empty()) return 0;
  const std::size_t mid = slopes.size() / 2;
  std::nth_element(slopes.begin(), slopes.begin() + static_cast<std::ptrdiff_t>(mid), slopes.end());
  const double upper = slopes[mid];
  if (slopes.size() % 2 == 1) return upper;
  const double lower =
      *std::max_element(slopes.begin(), slopes.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

KendallTrend KendallOf(std::span<const SiteLeakPoint> points) {
  const std::size_t n = points.size();
  if (n < 2) return {};
  int64_t s = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      s += (points[j].bytes > points[i].bytes) - (points[j].bytes < points[i].bytes);
    }
  }
  const double nd = static_cast<double>(n);
  const double pairs = nd * (nd - 1) / 2;
  // The variance without the correction for ties: equal reads (a site at
  // rest) only make it smaller, so z errs towards "not sure".
  const double var = nd * (nd - 1) * (2 * nd + 5) / 18;
  const double sd = std::sqrt(var);
  // The continuity correction: S moves in steps of two.
  const double corrected = s > 0   ? static_cast<double>(s) - 1
                           : s < 0 ? static_cast<double>(s) + 1
                                   : 0;
  return {static_cast<double>(s) / pairs, corrected / sd};
}

std::optional<SiteLeak> FindSiteLeak(std::span<const SiteLeakPoint> points,
                                     const SiteLeakRule& rule) {
  if (points.size() < std::max<std::size_t>(rule.min_points, 2)) return std::nullopt;
  const std::size_t last_start = points.size() - std::max<std::size_t>(rule.min_points, 2);
  const std::size_t step = std::max<std::size_t>(1, (last_start + kMaxStarts) / kMaxStarts);
  struct Start {
    std::size_t at;
    KendallTrend trend;
  };
  std::vector<Start> starts;
  for (std::size_t at = 0; at <= last_start; at += step) {
    std::span<const SiteLeakPoint> run = points.subspan(at);
    if (run.back().t_ms - run.front().t_ms < rule.min_span_ms) break;  // later ones are shorter
    starts.push_back({at, KendallOf(run)});
  }
  auto passes = [&](const Start& s, double* rate) {
    return Rises(points.first(s.at), points.subspan(s.at), s.trend, rule, rate);
  };
  // Of the starts whose run passes, the earliest about as steady as the
  // steadiest: a run that begins on the flat before a rise is less steady
  // (its flat pairs count as neither), one that begins later on a noisy
  // leak is not steadier. Tried steadiest first, so that the full test
  // (the slopes, a few milliseconds a run) runs on few of them.
  std::vector<const Start*> by_tau;
  for (const Start& s : starts) by_tau.push_back(&s);
  std::stable_sort(by_tau.begin(), by_tau.end(),
                   [](const Start* a, const Start* b) { return a->trend.tau > b->trend.tau; });
  double steadiest_rate = 0;
  const Start* steadiest = nullptr;
  for (const Start* s : by_tau) {
    if (s->trend.tau < rule.min_tau) break;
    if (passes(*s, &steadiest_rate)) {
      steadiest = s;
      break;
    }
  }
  if (steadiest == nullptr) return std::nullopt;
  for (const Start& s : starts) {
    if (s.trend.tau < steadiest->trend.tau - kTauSlack) continue;
    double rate = steadiest_rate;
    if (&s != steadiest && !passes(s, &rate)) continue;
    std::span<const SiteLeakPoint> run = points.subspan(s.at);
    SiteLeak leak;
    leak.bytes_per_hour = rate;
    leak.since_ms = run.front().t_ms;
    leak.last_ms = run.back().t_ms;
    leak.tau = s.trend.tau;
    leak.points = run.size();
    leak.from_first_point = s.at == 0;
    return leak;
  }
  return std::nullopt;
}

}  // namespace memtrimd

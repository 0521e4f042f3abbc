// Whether one allocation site's bytes rise steadily: the leak finding of
// the sites section. A pure function of the site's points (SiteHistory
// keeps them); inspect, /report and the page word what it returns.
//
// Why these tests, not a fitted line: a site's figure is an estimate from
// samples, and the program around it frees and allocates at its own pace.
// The Theil-Sen slope (the median of the slopes between every two points)
// is not moved by a few wild reads; Kendall's tau (the share of pairs of
// reads in time order that also rise, less the share that fall) says how
// steady the rise is whatever its shape; and a rise must go on in each
// third of its run. A cache that fills then holds (its last third is flat),
// a sawtooth (as many pairs fall as rise, and each ramp starts from a
// fall) and a burst at start (flat after it) fail one of these; a slow leak under noisy churn
// passes all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace memtrimd {

struct SiteLeakPoint {
  int64_t t_ms = 0;  // when the site was read, Unix milliseconds
  uint64_t bytes = 0;
};

// What counts as a leak. The defaults suit the sites collector's reads
// (every 30 s) and an hour of history.
struct SiteLeakRule {
  int64_t min_span_ms = 30 * 60 * 1000;  // the rise seen for at least this long
  std::size_t min_points = 12;
  double min_bytes_per_hour = 2.0 * 1024 * 1024;
  uint64_t min_growth_bytes = 4 * 1024 * 1024;  // rate times span: above sampling noise
  double min_tau = 0.4;
  // Mann-Kendall: the rise's S statistic this many standard deviations
  // above none (3: one chance in a thousand that noise alone rose so).
  double min_z = 3.0;
  // No fall inside the run (its running median down from a high) larger
  // than this share of the running median's range.
  double max_fall_share = 0.5;
  // Each third of the run rises at least this share of the whole run's rate.
  double min_part_share = 0.25;
};

struct SiteLeak {
  double bytes_per_hour = 0;  // Theil-Sen slope of the run
  int64_t since_ms = 0;       // the run's first point
  int64_t last_ms = 0;        // the newest point
  double tau = 0;             // Kendall's tau over the run, -1..1
  std::size_t points = 0;     // reads in the run
  // The run starts at the oldest point given: it may have begun before.
  bool from_first_point = false;
  int64_t span_ms() const { return last_ms - since_ms; }
};

// The longest run ending at the newest point that rises steadily by
// `rule`, or nullopt. REQUIRES: points oldest first.
std::optional<SiteLeak> FindSiteLeak(std::span<const SiteLeakPoint> points,
                                     const SiteLeakRule& rule = {});

// The pieces, for the tests: the median pairwise slope (bytes per hour) and
// Kendall's tau with the Mann-Kendall z, of points oldest first (at least two).
double TheilSenBytesPerHour(std::span<const SiteLeakPoint> points);
struct KendallTrend {
  double tau = 0;
  double z = 0;
};
KendallTrend KendallOf(std::span<const SiteLeakPoint> points);

}  // namespace memtrimd

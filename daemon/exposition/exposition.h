// Turns a Snapshot, the trim engine's counters and memtrimd's own process
// into Prometheus metric families, and renders the 0.0.4 text format.
// MetricsPage (metrics_page.h) puts them together for /metrics.
#pragma once

#include <prometheus/metric_family.h>

#include <chrono>
#include <string>
#include <vector>

#include "daemon/exposition/metric_detail.h"
#include "daemon/sampling/snapshot.h"

namespace memtrimd {

struct TrimStats;

// The trim engine's figures, per target (TrimEngine::Stats).
std::vector<prometheus::MetricFamily> TrimFamilies(const std::vector<TrimStats>& stats,
                                                   const MetricDetail& detail = MetricDetail{});

// Families for one snapshot (nullptr: before the first sample), all but the
// ages. Pure: the same snapshot always gives the same families, so their text
// can be rendered once per snapshot.
std::vector<prometheus::MetricFamily> SnapshotFamilies(const Snapshot* snap,
                                                       const MetricDetail& detail = MetricDetail{});

// The snapshot's ages at `now`, on the monotonic clock:
// memtrimd_sample_age_seconds and memtrimd_smaps_age_seconds. Empty for
// nullptr.
std::vector<prometheus::MetricFamily> AgeFamilies(const Snapshot* snap,
                                                  std::chrono::steady_clock::time_point now,
                                                  const MetricDetail& detail = MetricDetail{});

// memtrimd's own process_* families, read from /proc/self.
std::vector<prometheus::MetricFamily> SelfProcessFamilies();

// The text exposition format, version 0.0.4.
std::string RenderText(const std::vector<prometheus::MetricFamily>& families);

inline constexpr const char* kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace memtrimd

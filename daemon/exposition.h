// Turns the latest Snapshot into Prometheus metric families at scrape time
// (a prometheus::Collectable) and renders the 0.0.4 text format.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <string>
#include <vector>

#include "daemon/snapshot.h"

namespace memtrimd {

class TrimEngine;
struct TrimStats;

class SnapshotCollectable : public prometheus::Collectable {
 public:
  // `trims` may be null (no trim engine).
  SnapshotCollectable(const SnapshotStore& store, const TrimEngine* trims)
      : store_(store), trims_(trims) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const SnapshotStore& store_;
  const TrimEngine* trims_;
};

std::vector<prometheus::MetricFamily> TrimFamilies(const TrimStats& stats);

// Families for one snapshot (nullptr: before the first sample). Pure apart
// from reading the clock for ages; tests call it directly.
std::vector<prometheus::MetricFamily> SnapshotFamilies(const Snapshot* snap);

// memtrimd's own process_* families, read from /proc/self.
std::vector<prometheus::MetricFamily> SelfProcessFamilies();

// The text exposition format, version 0.0.4.
std::string RenderText(const std::vector<prometheus::MetricFamily>& families);

inline constexpr const char* kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace memtrimd

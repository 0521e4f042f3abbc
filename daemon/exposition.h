// Turns the latest Snapshot into Prometheus metric families at scrape time
// (a prometheus::Collectable) and renders the 0.0.4 text format.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <string>
#include <vector>

#include "daemon/snapshot.h"

namespace memtrimd {

class SnapshotCollectable : public prometheus::Collectable {
 public:
  explicit SnapshotCollectable(const SnapshotStore& store) : store_(store) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const SnapshotStore& store_;
};

// Families for one snapshot (nullptr: before the first sample). Pure apart
// from reading the clock for ages; tests call it directly.
std::vector<prometheus::MetricFamily> SnapshotFamilies(const Snapshot* snap);

// memtrimd's own process_* families, read from /proc/self.
std::vector<prometheus::MetricFamily> SelfProcessFamilies();

// The text exposition format, version 0.0.4.
std::string RenderText(const std::vector<prometheus::MetricFamily>& families);

inline constexpr const char* kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace memtrimd

// The /metrics body.
//
// A snapshot changes once per --sample.interval and the trim figures once
// per trim, while Prometheus servers, people and load balancers may ask many
// times in between. So each part of the page is rendered to text when it
// changes and that text is reused:
// - the snapshot's families, once per snapshot;
// - the trim families, when the trim engine's MetricsVersion moves;
// - memtrimd's own process_* families, at most once per `process_max_age`
//   (1 s in the daemon): reading /proc/self costs more than the rest of a
//   request, and grows with memtrimd's threads and connections;
// - the ages, on every request: they are what a stalled sampler shows in.
// docs/benchmarks.md has what this saves.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/exposition/gzip.h"
#include "daemon/exposition/metric_detail.h"
#include "daemon/sampling/snapshot.h"

namespace memtrimd {

class TrimEngine;

// One rendering of the page, in its parts. The cached ones are shared with
// the cache: a request takes them under the cache's lock without copying
// them, and copies each once, outside the lock, into its response.
struct MetricsText {
  std::string ages;                             // rendered for this request
  std::shared_ptr<const std::string> trims;     // null without a trim engine
  std::shared_ptr<const std::string> process;   // memtrimd's own process_*
  std::shared_ptr<const std::string> snapshot;  // the largest, so last
  // The body, part by part, in page order.
  std::vector<std::string_view> Parts() const;
  std::string Joined() const;
};

class MetricsPage {
 public:
  static constexpr std::chrono::milliseconds kProcessMaxAge{1000};

  // `trims` may be null (no trim engine, no trim families).
  MetricsPage(const SnapshotStore& store, const TrimEngine* trims,
              std::chrono::milliseconds process_max_age = kProcessMaxAge,
              MetricDetail detail = MetricDetail{})
      : store_(store),
        trims_(trims),
        process_max_age_(process_max_age),
        detail_(std::move(detail)) {}

  // The whole text exposition as of now. Thread-safe.
  MetricsText Render() const;
  // The same page as one gzip member. The cached parts are compressed once
  // each (when first asked for), only the ages per request. nullopt if zlib
  // fails. Thread-safe.
  std::optional<std::string> RenderGzip() const;
  // Renders and compresses the cached parts now, so that the next request
  // finds them ready: the scheduler's thread calls it after each publish,
  // and no scrape pays for a new snapshot's text.
  void Prepare() const;

 private:
  const SnapshotStore& store_;
  const TrimEngine* trims_;
  const std::chrono::milliseconds process_max_age_;
  const MetricDetail detail_;

  mutable std::mutex mu_;  // guards the cache below
  // The cache holds its snapshot so that a new snapshot can never be taken
  // for the old one at a reused address.
  mutable std::shared_ptr<const Snapshot> snapshot_key_;
  mutable std::shared_ptr<const std::string> snapshot_text_;
  mutable std::optional<uint64_t> trims_key_;
  mutable std::shared_ptr<const std::string> trims_text_;
  mutable std::chrono::steady_clock::time_point process_read_at_;
  mutable std::shared_ptr<const std::string> process_text_;
  // Each cached text compressed (DeflatePart), keyed by the text it was made
  // from.
  struct Compressed {
    std::shared_ptr<const std::string> of;
    std::shared_ptr<const DeflatedPart> part;
  };
  mutable Compressed snapshot_gz_, trims_gz_, process_gz_;
};

}  // namespace memtrimd

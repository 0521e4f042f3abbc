// The last hour (--web.history) of each watched target's memory, for the
// charts of the incident page: one fixed-size point per published sample
// and the trims' before and after, in memtrimd's own memory. Fed once per
// snapshot (SnapshotStore's publish hook) and once per trim (the trim
// engine's after-trim hook); never makes memtrimd sample.
//
// Memory: a point is kept in 32 bytes (its byte figures in KiB, the unit
// /proc and smaps give them in), a trim mark in 24. At the default 10 s
// sample interval an hour is 360 points, about 11 KiB per target (samples
// the scheduler takes right after a trim add one or two points each), in
// one block per target that grows by half when full (13 KiB for 406 points
// then). Whatever the interval, a target keeps at most kMaxPoints points
// (22.5 KiB) and kMaxTrimMarks marks (1.5 KiB): with samples so frequent
// that the window holds more, the older points are thinned (every other one
// dropped), so the chart keeps its whole span at a coarser step. Targets
// that leave the snapshot are dropped at once.
//
// Why one block per target and nothing allocated per sample once it is
// full: a node agent keeps hundreds of targets' points for an hour, and
// long-lived small blocks allocated a few at a time between each tick's
// short-lived ones pin glibc's heap pages (a deque's 512-byte nodes grew a
// 200-target memtrimd by 10 MiB in half an hour).
//
// The targets' allocation sites have a history of their own (SiteHistory,
// fed from Record: under 10 KiB more for each target with sites).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "collectors/common/process_key.h"
#include "daemon/report/site_history.h"
#include "daemon/sampling/snapshot.h"
#include "daemon/trim/trim.h"

namespace memtrimd {

inline constexpr uint64_t kNoValue = UINT64_MAX;  // a figure the sample did not have

struct HistoryPoint {
  int64_t t_ms = 0;  // when the snapshot was taken, Unix milliseconds
  uint64_t sequence = 0;
  uint64_t rss = kNoValue;             // VmRSS
  uint64_t limit = kNoValue;           // the memory limit (cgroup or flag)
  uint64_t arena_resident = kNoValue;  // glibc arena heaps' Rss, from the latest smaps read
  // The JVM's direct memory: the direct buffer pool's memory used (read
  // through the agent), else NMT Other with kDirectIsNmtOther set (an upper
  // bound of the pool that also holds the temporary buffer cache, FFM and
  // Unsafe memory). Read it with DirectOf.
  uint64_t direct = kNoValue;
};

inline constexpr uint64_t kDirectIsNmtOther = uint64_t{1} << 63;

struct DirectFigure {
  uint64_t bytes = 0;
  bool nmt_other = false;  // NMT Other, not the pool
};
std::optional<DirectFigure> DirectOf(const HistoryPoint& p);

struct TrimMark {
  int64_t t_ms = 0;  // when the trim started
  uint64_t before = 0;
  uint64_t after = 0;  // RSS+swap measured around the trim
};

struct TargetHistory {
  std::vector<HistoryPoint> points;  // oldest first
  std::vector<TrimMark> trims;       // oldest first
};

// The point a sample of one target gives (pure; the unit tests build
// samples in code).
HistoryPoint PointOf(const TargetSample& s, int64_t t_ms, uint64_t sequence);

class SampleHistory {
 public:
  // Hard cap on the marks kept per target, whatever the window: manual
  // trims through the API could otherwise come at any rate.
  static constexpr std::size_t kMaxTrimMarks = 64;
  // Twice an hour's points at the default 10 s interval: room for the extra
  // samples after trims before any thinning.
  static constexpr std::size_t kMaxPoints = 720;
  // What a point takes kept (the figures as KiB).
  static const std::size_t kStoredPointBytes;

  // `window`: how far back points are kept.
  explicit SampleHistory(std::chrono::milliseconds window);

  // One point per target of the snapshot; targets not in it are dropped.
  void Record(const Snapshot& snap);
  // A successful trim of `target` (failed ones measured nothing useful).
  void RecordTrim(const Target& target, const TrimResult& r);

  // The points of one target (pid and start ticks) up to and including
  // sample `up_to_sequence`, so that a page drawn from one snapshot shows
  // nothing newer than it; nullopt when the target is not known.
  std::optional<TargetHistory> Of(const Target& target, uint64_t up_to_sequence) const;

  std::size_t targets() const;
  std::chrono::milliseconds window() const { return window_; }
  // The sites' last hour, over the same window, fed by Record.
  const SiteHistory& sites() const { return sites_; }

 private:
  // A point as kept: the figures in KiB (kNoKib: absent; direct's top bit:
  // NMT Other).
  struct StoredPoint {
    int64_t t_ms = 0;
    uint64_t sequence = 0;
    uint32_t rss_kib = 0;
    uint32_t limit_kib = 0;
    uint32_t arena_kib = 0;
    uint32_t direct_kib = 0;
  };
  static StoredPoint Store(const HistoryPoint& p);
  static HistoryPoint Load(const StoredPoint& s);
  // The points, oldest first, in a ring: ring.size() is the capacity.
  struct PerTarget {
    std::vector<StoredPoint> ring;
    std::size_t head = 0;  // the oldest point's index
    std::size_t count = 0;
    std::vector<TrimMark> trims;  // oldest first
    uint64_t seen = 0;            // the Record that last had the target
    uint64_t exec_mark = 0;       // the program it ran (Target::exec_mark)
    const StoredPoint& At(std::size_t i) const { return ring[(head + i) % ring.size()]; }
    StoredPoint& At(std::size_t i) { return ring[(head + i) % ring.size()]; }
  };
  static void Push(PerTarget& pt, const StoredPoint& p);
  void Prune(PerTarget& pt, int64_t now_ms) const;

  const std::chrono::milliseconds window_;
  mutable std::mutex mu_;
  std::map<ProcessKey, PerTarget> targets_;
  uint64_t records_ = 0;
  SiteHistory sites_;
};

}  // namespace memtrimd

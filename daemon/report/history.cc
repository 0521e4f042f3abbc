#include "daemon/report/history.h"

#include <algorithm>

#include "daemon/analysis/findings.h"

namespace memtrimd {
namespace {

int64_t UnixMs(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

}  // namespace

HistoryPoint PointOf(const TargetSample& s, int64_t t_ms, uint64_t sequence) {
  HistoryPoint p;
  p.t_ms = t_ms;
  p.sequence = sequence;
  // As /report's process.rss_bytes adds it up.
  if (s.process) p.rss = s.process->rss_anon + s.process->rss_file + s.process->rss_shmem;
  if (s.cgroup && s.cgroup->limit_bytes) p.limit = *s.cgroup->limit_bytes;
  if (s.glibc) p.arena_resident = s.glibc->resident_bytes;
  DirectMemory d = DirectMemoryOf(s);
  if (d.used_bytes) {
    p.direct = std::min(*d.used_bytes, kDirectIsNmtOther - 1);
  } else if (d.nmt_other_bytes) {
    p.direct = std::min(*d.nmt_other_bytes, kDirectIsNmtOther - 1) | kDirectIsNmtOther;
  }
  return p;
}

std::optional<DirectFigure> DirectOf(const HistoryPoint& p) {
  if (p.direct == kNoValue) return std::nullopt;
  return DirectFigure{p.direct & ~kDirectIsNmtOther, (p.direct & kDirectIsNmtOther) != 0};
}

SampleHistory::SampleHistory(std::chrono::milliseconds window) : window_(window) {}

void SampleHistory::Prune(PerTarget& pt, int64_t now_ms) const {
  const int64_t oldest = now_ms - window_.count();
  while (!pt.points.empty() && pt.points.front().t_ms < oldest) pt.points.pop_front();
  if (pt.points.size() > kMaxPoints) {
    // Every other point goes, the newest stays: half the points over the
    // same span. Amortized, one point moved per sample.
    std::deque<HistoryPoint> kept;
    const std::size_t n = pt.points.size();
    for (std::size_t i = (n - 1) % 2; i < n; i += 2) kept.push_back(pt.points[i]);
    pt.points = std::move(kept);
  }
  while (!pt.trims.empty() && (pt.trims.front().t_ms < oldest || pt.trims.size() > kMaxTrimMarks))
    pt.trims.pop_front();
}

void SampleHistory::Record(const Snapshot& snap) {
  const int64_t now = UnixMs(snap.taken_at);
  std::lock_guard<std::mutex> lock(mu_);
  std::map<Key, PerTarget> next;
  for (const TargetSnapshot& ts : snap.targets) {
    Key key{ts.target.pid, ts.target.start_ticks};
    PerTarget pt;
    if (auto it = targets_.find(key); it != targets_.end()) pt = std::move(it->second);
    pt.points.push_back(PointOf(ts.sample, now, snap.sequence));
    Prune(pt, now);
    next.emplace(key, std::move(pt));
  }
  // Everything not in this snapshot is gone (exited, or left out of the set).
  targets_ = std::move(next);
}

void SampleHistory::RecordTrim(const Target& target, const TrimResult& r) {
  if (!r.success) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = targets_.find({target.pid, target.start_ticks});
  if (it == targets_.end()) return;
  it->second.trims.push_back({UnixMs(r.at), r.before.rss_swap_bytes, r.after.rss_swap_bytes});
  Prune(it->second,
        std::max(UnixMs(r.at),
                 it->second.points.empty() ? UnixMs(r.at) : it->second.points.back().t_ms));
}

std::optional<TargetHistory> SampleHistory::Of(const Target& target,
                                               uint64_t up_to_sequence) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = targets_.find({target.pid, target.start_ticks});
  if (it == targets_.end()) return std::nullopt;
  TargetHistory h;
  h.points.reserve(it->second.points.size());
  int64_t last_ms = 0;
  for (const HistoryPoint& p : it->second.points) {
    if (p.sequence > up_to_sequence) break;
    h.points.push_back(p);
    last_ms = p.t_ms;
  }
  for (const TrimMark& m : it->second.trims) {
    if (!h.points.empty() && m.t_ms > last_ms) break;
    h.trims.push_back(m);
  }
  return h;
}

std::size_t SampleHistory::targets() const {
  std::lock_guard<std::mutex> lock(mu_);
  return targets_.size();
}

}  // namespace memtrimd

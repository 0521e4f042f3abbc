#include "daemon/report/history.h"

#include <algorithm>

#include "collectors/procfs/proc_stat.h"
#include "daemon/analysis/findings.h"
#include "daemon/base/units.h"

namespace memtrimd {

HistoryPoint PointOf(const TargetSample& s, int64_t t_ms, uint64_t sequence) {
  HistoryPoint p;
  p.t_ms = t_ms;
  p.sequence = sequence;
  // As /report's process.rss_bytes adds it up.
  if (s.process) p.rss = s.process->Rss();
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

const std::size_t SampleHistory::kStoredPointBytes = sizeof(StoredPoint);

SampleHistory::SampleHistory(std::chrono::milliseconds window) : window_(window), sites_(window) {}

namespace {

constexpr uint32_t kNoKib = UINT32_MAX;
constexpr uint32_t kKibIsNmtOther = uint32_t{1} << 31;

// Bytes to KiB, rounded to the nearest (a byte figure that is not whole KiB
// is a direct pool's sum of buffer capacities); kNoValue stays absent.
uint32_t ToKib(uint64_t bytes, uint32_t max_kib) {
  if (bytes == kNoValue) return kNoKib;
  return static_cast<uint32_t>(std::min<uint64_t>(bytes / 1024 + (bytes % 1024 >= 512), max_kib));
}

uint64_t FromKib(uint32_t kib) { return kib == kNoKib ? kNoValue : uint64_t{kib} * 1024; }

}  // namespace

SampleHistory::StoredPoint SampleHistory::Store(const HistoryPoint& p) {
  StoredPoint s;
  s.t_ms = p.t_ms;
  s.sequence = p.sequence;
  s.rss_kib = ToKib(p.rss, kNoKib - 1);
  s.limit_kib = ToKib(p.limit, kNoKib - 1);
  s.arena_kib = ToKib(p.arena_resident, kNoKib - 1);
  if (std::optional<DirectFigure> d = DirectOf(p)) {
    s.direct_kib = ToKib(d->bytes, kKibIsNmtOther - 1) | (d->nmt_other ? kKibIsNmtOther : 0);
  } else {
    s.direct_kib = kNoKib;
  }
  return s;
}

HistoryPoint SampleHistory::Load(const StoredPoint& s) {
  HistoryPoint p;
  p.t_ms = s.t_ms;
  p.sequence = s.sequence;
  p.rss = FromKib(s.rss_kib);
  p.limit = FromKib(s.limit_kib);
  p.arena_resident = FromKib(s.arena_kib);
  if (s.direct_kib != kNoKib) {
    p.direct = uint64_t{s.direct_kib & ~kKibIsNmtOther} * 1024 |
               ((s.direct_kib & kKibIsNmtOther) != 0 ? kDirectIsNmtOther : 0);
  }
  return p;
}

void SampleHistory::Push(PerTarget& pt, const StoredPoint& p) {
  if (pt.count == pt.ring.size()) {
    if (pt.ring.size() < kMaxPoints) {
      // Grow by half into one new block, oldest first.
      std::vector<StoredPoint> grown(
          std::min(kMaxPoints, std::max<std::size_t>(16, pt.ring.size() * 3 / 2)));
      for (std::size_t i = 0; i < pt.count; ++i) grown[i] = pt.At(i);
      pt.ring.swap(grown);
      pt.head = 0;
    } else {
      // Every other point goes, the oldest stays (and the new one comes
      // next): half the points over the same span, in place (a point only
      // moves towards the oldest).
      const std::size_t n = pt.count;
      std::size_t kept = 0;
      for (std::size_t i = 0; i < n; i += 2) pt.At(kept++) = pt.At(i);
      pt.count = kept;
    }
  }
  pt.At(pt.count++) = p;
}

void SampleHistory::Prune(PerTarget& pt, int64_t now_ms) const {
  const int64_t oldest = now_ms - window_.count();
  while (pt.count > 0 && pt.At(0).t_ms < oldest) {
    pt.head = (pt.head + 1) % pt.ring.size();
    --pt.count;
  }
  std::size_t drop = 0;
  while (drop < pt.trims.size() &&
         (pt.trims[drop].t_ms < oldest || pt.trims.size() - drop > kMaxTrimMarks)) {
    ++drop;
  }
  pt.trims.erase(pt.trims.begin(), pt.trims.begin() + static_cast<std::ptrdiff_t>(drop));
}

void SampleHistory::Record(const Snapshot& snap) {
  const int64_t now = UnixMs(snap.taken_at);
  std::lock_guard<std::mutex> lock(mu_);
  ++records_;
  for (const TargetSnapshot& ts : snap.targets) {
    PerTarget& pt = targets_[ts.target.Key()];
    if (procfs::ExecMarksDiffer(pt.exec_mark, ts.target.exec_mark)) {
      // The process runs another program since its last point (exec): the
      // shell's few hundred KiB are not the start of the JVM's history.
      pt = PerTarget{};
    }
    if (ts.target.exec_mark != 0) pt.exec_mark = ts.target.exec_mark;
    pt.seen = records_;
    if (ts.carried) continue;  // no read, no point
    Push(pt, Store(PointOf(ts.sample, now, snap.sequence)));
    Prune(pt, now);
  }
  // Everything not in this snapshot is gone (exited, or left out of the set).
  std::erase_if(targets_, [&](const auto& kv) { return kv.second.seen != records_; });
  sites_.Record(snap);
}

void SampleHistory::RecordTrim(const Target& target, const TrimResult& r) {
  if (!r.success) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = targets_.find(target.Key());
  if (it == targets_.end()) return;
  PerTarget& pt = it->second;
  pt.trims.push_back({UnixMs(r.at), r.before.rss_swap_bytes, r.after.rss_swap_bytes});
  Prune(pt, std::max(UnixMs(r.at), pt.count == 0 ? UnixMs(r.at) : pt.At(pt.count - 1).t_ms));
}

std::optional<TargetHistory> SampleHistory::Of(const Target& target,
                                               uint64_t up_to_sequence) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = targets_.find(target.Key());
  if (it == targets_.end()) return std::nullopt;
  const PerTarget& pt = it->second;
  TargetHistory h;
  h.points.reserve(pt.count);
  int64_t last_ms = 0;
  for (std::size_t i = 0; i < pt.count; ++i) {
    const StoredPoint& p = pt.At(i);
    if (p.sequence > up_to_sequence) break;
    h.points.push_back(Load(p));
    last_ms = p.t_ms;
  }
  for (const TrimMark& m : pt.trims) {
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

#include "daemon/report/site_history.h"

#include <algorithm>

#include "collectors/procfs/proc_stat.h"
#include "daemon/analysis/top_sites.h"
#include "daemon/base/units.h"

namespace memtrimd {
namespace {

// Bytes to KiB, rounded to the nearest, at most 4 TiB: a site's estimate is
// a sum of unbiased weights, rarely whole KiB.
uint32_t ToKib(uint64_t bytes) {
  return static_cast<uint32_t>(
      std::min<uint64_t>(bytes / 1024 + (bytes % 1024 >= 512), UINT32_MAX));
}

// The longest prefix of `name` that fits and does not end inside a UTF-8
// sequence (the page prints it).
std::string_view Fitting(std::string_view name, std::size_t max) {
  if (name.size() <= max) return name;
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(name[n]) & 0xc0) == 0x80) --n;
  return name.substr(0, n);
}

}  // namespace

uint64_t GrowthBytes(const agent::SiteProfile& p, const agent::SiteValues& v) {
  return p.resident.known ? v.resident_bytes : v.live_bytes;
}

const std::size_t SiteHistory::kStoredPointBytes = sizeof(StoredPoint);
const std::size_t SiteHistory::kTargetBytes = sizeof(PerTarget);

SiteHistory::SiteHistory(std::chrono::milliseconds window) : window_(window) {}

uint8_t SiteHistory::NameSlot(PerTarget& pt, std::string_view name, bool nmt_tracked, int64_t t_ms,
                              const StoredPoint& adding) {
  name = Fitting(name, kNameBytes);
  for (std::size_t i = 0; i < kMaxNames; ++i) {
    if (pt.names[i].size != 0 && pt.names[i].view() == name) {
      pt.names[i].nmt_tracked = nmt_tracked;
      pt.names[i].last_ms = t_ms;
      return static_cast<uint8_t>(i);
    }
  }
  // A free slot (no kept point names it), else the one least recently among
  // a read's largest; never one the point being added uses.
  std::array<bool, kMaxNames> used{};
  for (std::size_t i = 0; i < pt.count; ++i) {
    for (uint8_t n : pt.At(i).name) {
      if (n != kNoName) used[n] = true;
    }
  }
  std::array<bool, kMaxNames> taken{};
  for (uint8_t n : adding.name) {
    if (n != kNoName) taken[n] = true;
  }
  std::size_t pick = kMaxNames;
  for (std::size_t i = 0; i < kMaxNames; ++i) {
    if (taken[i]) continue;
    if (!used[i]) {
      pick = i;
      break;
    }
    if (pick == kMaxNames || pt.names[i].last_ms < pt.names[pick].last_ms) pick = i;
  }
  // kTopSites < kMaxNames: there is always one. The older points that named
  // the evicted site count its bytes in their rest, so they still add up.
  if (used[pick]) {
    for (std::size_t i = 0; i < pt.count; ++i) {
      StoredPoint& p = pt.At(i);
      for (std::size_t k = 0; k < kTopSites; ++k) {
        if (p.name[k] != pick) continue;
        p.rest_kib =
            static_cast<uint32_t>(std::min<uint64_t>(uint64_t{p.rest_kib} + p.kib[k], UINT32_MAX));
        p.kib[k] = 0;
        p.name[k] = kNoName;
      }
    }
  }
  Name& slot = pt.names[pick];
  slot.size = static_cast<uint16_t>(name.size());
  slot.nmt_tracked = nmt_tracked;
  slot.last_ms = t_ms;
  std::copy(name.begin(), name.end(), slot.text.begin());
  return static_cast<uint8_t>(pick);
}

void SiteHistory::Add(PerTarget& pt, const agent::SiteProfile& p, uint64_t sequence) const {
  const int64_t now = UnixMs(p.read_at);
  // The window first, so that the slots of names only old points used are free.
  const int64_t oldest = now - window_.count();
  while (pt.count > 0 && pt.At(0).t_ms < oldest) {
    pt.head = (pt.head + 1) % pt.ring.size();
    --pt.count;
  }
  StoredPoint point;
  point.t_ms = now;
  point.sequence = sequence;
  point.name.fill(kNoName);
  uint64_t shown = 0;
  const uint64_t rest_live =
      ForTopSites(p, kTopSites, EmptySites::kStop, [&](std::size_t n, const agent::NamedSite& s) {
        const uint8_t slot = NameSlot(pt, s.name, s.nmt_tracked, now, point);
        point.name[n] = slot;
        const uint64_t bytes = GrowthBytes(p, s.values);
        shown += bytes;
        point.kib[n] = ToKib(bytes);
      });
  // The rest in the same measure as the sites drawn.
  const uint64_t all = GrowthBytes(p, p.total);
  point.rest_kib = ToKib(p.resident.known ? (all > shown ? all - shown : 0) : rest_live);
  if (pt.count == pt.ring.size()) {
    // Every other point goes, the oldest stays: half the points over the
    // same span, in place.
    std::size_t k = 0;
    for (std::size_t i = 0; i < pt.count; i += 2) pt.At(k++) = pt.At(i);
    pt.count = k;
  }
  pt.At(pt.count++) = point;
}

void SiteHistory::Record(const Snapshot& snap) {
  std::lock_guard<std::mutex> lock(mu_);
  ++records_;
  for (const TargetSnapshot& ts : snap.targets) {
    const ProcessKey key = ts.target.Key();
    auto it = targets_.find(key);
    const agent::SiteProfile* p = ts.sample.sites.get();
    if (it == targets_.end()) {
      if (p == nullptr) continue;  // no block until there is something to keep
      it = targets_.emplace(key, std::make_unique<PerTarget>()).first;
    }
    PerTarget& pt = *it->second;
    if (procfs::ExecMarksDiffer(pt.exec_mark, ts.target.exec_mark)) {
      pt = PerTarget{};  // another program since the last point (exec)
    }
    if (ts.target.exec_mark != 0) pt.exec_mark = ts.target.exec_mark;
    pt.seen = records_;
    if (p == nullptr || p->read_at == pt.read_at) continue;  // not read again
    pt.read_at = p->read_at;
    Add(pt, *p, snap.sequence);
  }
  std::erase_if(targets_, [&](const auto& kv) { return kv.second->seen != records_; });
}

std::optional<SiteHistoryView> SiteHistory::Of(const Target& target,
                                               uint64_t up_to_sequence) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = targets_.find(target.Key());
  if (it == targets_.end()) return std::nullopt;
  const PerTarget& pt = *it->second;
  SiteHistoryView view;
  std::array<int, kMaxNames> timeline;  // name slot -> view.sites index
  timeline.fill(-1);
  for (std::size_t i = 0; i < pt.count; ++i) {
    const StoredPoint& s = pt.At(i);
    if (s.sequence > up_to_sequence) break;
    if (view.rest.empty()) view.first_sequence = s.sequence;
    view.last_sequence = s.sequence;
    view.rest.push_back({s.t_ms, uint64_t{s.rest_kib} * 1024});
    for (std::size_t k = 0; k < kTopSites; ++k) {
      const uint8_t n = s.name[k];
      if (n == kNoName) continue;
      if (timeline[n] < 0) {
        timeline[n] = static_cast<int>(view.sites.size());
        view.sites.push_back({std::string(pt.names[n].view()), pt.names[n].nmt_tracked, 0, {}});
      }
      SiteTimeline& t = view.sites[timeline[n]];
      const uint64_t bytes = uint64_t{s.kib[k]} * 1024;
      t.points.push_back({s.t_ms, bytes});
      t.max_bytes = std::max(t.max_bytes, bytes);
    }
  }
  if (view.rest.empty()) return std::nullopt;
  std::stable_sort(view.sites.begin(), view.sites.end(),
                   [](const SiteTimeline& a, const SiteTimeline& b) {
                     if (a.max_bytes != b.max_bytes) return a.max_bytes > b.max_bytes;
                     return a.name < b.name;
                   });
  return view;
}

std::size_t SiteHistory::targets() const {
  std::lock_guard<std::mutex> lock(mu_);
  return targets_.size();
}

}  // namespace memtrimd

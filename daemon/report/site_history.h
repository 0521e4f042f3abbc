// The last hour (--web.history) of each target's largest allocation sites,
// for the incident page's "who holds it" chart: one point per read of the
// target's sites (the sites collector, every --sites.interval), holding the
// live bytes of the read's kTopSites largest sites by name and of all the
// rest. Fed with each published snapshot (SampleHistory::Record), adding a
// point only when a target's SiteProfile was read again (its read_at
// changed): a snapshot carries the last profile between reads.
//
// Memory: a target has an entry only once it has sites, in one block
// allocated then and freed when the target leaves the snapshot: kMaxPoints
// points of 48 bytes (the byte figures in KiB, each site as an index into
// the target's name table) and kMaxNames names of at most kNameBytes bytes,
// stored once however many points show them (272 bytes a slot): 10,152
// bytes per target in all (kTargetBytes: 5,760 of points, 4,352 of names).
// Nothing is allocated per read. At the default 30 s
// interval an hour is 120 points; reads more frequent than that thin the
// older points (every other one dropped), so the chart keeps its whole span
// at a coarser step. When sites churn, the name that was least recently
// among a read's largest gives its slot to a new one, and the older points
// that showed it count its bytes in their rest: the newest reads are always
// named, and every point still adds up to what its read held.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collectors/common/process_key.h"
#include "daemon/sampling/snapshot.h"

namespace memtrimd {

// The one figure of a site the history keeps, and so the one the chart
// draws and the leak finding (site_growth.h) follows: its resident bytes,
// as the OOM killer counts RSS, not what was allocated (calloc'd memory never
// touched holds none). A profile whose resident pass did not run (an agent of
// protocol 5 or older, a failed pagemap read) gives its live bytes instead.
// kGrowthMeasure names it in their words.
uint64_t GrowthBytes(const agent::SiteProfile& p, const agent::SiteValues& v);
inline constexpr std::string_view kGrowthMeasure = "resident";

struct SiteHistoryPoint {
  int64_t t_ms = 0;  // when the sites were read, Unix milliseconds
  uint64_t bytes = 0;
};

// One site's points: those reads where it was among the largest.
struct SiteTimeline {
  std::string name;
  bool nmt_tracked = false;
  uint64_t max_bytes = 0;
  std::vector<SiteHistoryPoint> points;  // oldest first
};

struct SiteHistoryView {
  // Largest first (by the most each held at one read), then by name.
  std::vector<SiteTimeline> sites;
  // Everything else at each read: the sites beyond its kTopSites largest
  // and the stacks the profile summed.
  std::vector<SiteHistoryPoint> rest;  // one per read, oldest first
  uint64_t first_sequence = 0;
  uint64_t last_sequence = 0;
};

class SiteHistory {
 public:
  static constexpr std::size_t kTopSites = 5;
  // An hour at the default --sites.interval of 30 s.
  static constexpr std::size_t kMaxPoints = 120;
  static constexpr std::size_t kMaxNames = 16;
  // A site's name is at most 240 bytes and "..." (site_profile.h); longer
  // (invalid bytes made U+FFFD) is cut here.
  static constexpr std::size_t kNameBytes = 256;
  static const std::size_t kStoredPointBytes;
  static const std::size_t kTargetBytes;  // one target's block

  explicit SiteHistory(std::chrono::milliseconds window);

  // A point for each target of the snapshot whose sites were read since
  // its last point; targets not in it are dropped.
  void Record(const Snapshot& snap);

  // The points of one target up to and including sample `up_to_sequence`;
  // nullopt when it has none.
  std::optional<SiteHistoryView> Of(const Target& target, uint64_t up_to_sequence) const;

  std::size_t targets() const;

 private:
  static constexpr uint8_t kNoName = 0xff;
  struct StoredPoint {
    int64_t t_ms = 0;
    uint64_t sequence = 0;
    std::array<uint32_t, kTopSites> kib{};
    uint32_t rest_kib = 0;
    std::array<uint8_t, kTopSites> name{};  // index into names, kNoName: none
  };
  struct Name {
    int64_t last_ms = 0;  // the newest point that names it
    uint16_t size = 0;    // 0: never used
    bool nmt_tracked = false;
    std::array<char, kNameBytes> text{};
    std::string_view view() const { return {text.data(), size}; }
  };
  struct PerTarget {
    std::array<StoredPoint, kMaxPoints> ring;
    std::size_t head = 0;  // the oldest point's index
    std::size_t count = 0;
    std::array<Name, kMaxNames> names;
    std::chrono::system_clock::time_point read_at{};  // of the last point's profile
    uint64_t seen = 0;
    uint64_t exec_mark = 0;
    const StoredPoint& At(std::size_t i) const { return ring[(head + i) % ring.size()]; }
    StoredPoint& At(std::size_t i) { return ring[(head + i) % ring.size()]; }
  };

  void Add(PerTarget& pt, const agent::SiteProfile& p, uint64_t sequence) const;
  // The name's slot in pt.names, given to it if it has none.
  static uint8_t NameSlot(PerTarget& pt, std::string_view name, bool nmt_tracked, int64_t t_ms,
                          const StoredPoint& adding);

  const std::chrono::milliseconds window_;
  mutable std::mutex mu_;
  std::map<ProcessKey, std::unique_ptr<PerTarget>> targets_;
  uint64_t records_ = 0;
};

}  // namespace memtrimd

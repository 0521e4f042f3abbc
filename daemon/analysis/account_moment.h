// Whether reads of one target taken at different moments may be combined or
// set beside each other. The RSS account adds up parts from a smaps read,
// NMT and the malloc statistics, each on its own interval and thread; the
// page sets the account beside the RSS of the latest sample. A JVM that grew
// from 40 to 98 MiB between two reads made NMT's parts crowd "outside NMT"
// down to 0 B, and the sites "explain 157.7 MiB of the 0.0 MiB" of it.
//
// The test is the target's RSS right after each read (procfs::RssNow): two
// reads are of one moment unless those differ by more than 10 % (of the
// larger) and by more than 1 MiB. Time alone says nothing: a steady process
// read a minute apart is still in step, a growing one not after a second.
#pragma once

#include <chrono>
#include <cstdint>

namespace memtrimd {

// One read: when, and the target's RSS right after it (0: not known).
struct ReadMoment {
  std::chrono::system_clock::time_point at{};
  uint64_t rss = 0;
};

inline constexpr uint64_t kInStepSlackBytes = 1u << 20;

// True unless `a` and `b` differ by more than 10 % of the larger and more
// than kInStepSlackBytes; an unknown figure (0) is never held against a read.
inline bool RssInStep(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0) return true;
  const uint64_t larger = a > b ? a : b;
  const uint64_t diff = a > b ? a - b : b - a;
  return diff <= kInStepSlackBytes || diff * 10 <= larger;
}

}  // namespace memtrimd

// One process instance: its pid and its start time. A pid alone is not an
// identity (the kernel reuses pids); with the start time a restarted
// process that got the same pid back is a different key. Every record kept
// per process (watched targets, trims, histories, the attach records) is
// keyed by it, so that none outlives its process into a newcomer's.
#pragma once

#include <sys/types.h>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace memtrimd {

struct ProcessKey {
  pid_t pid = 0;
  // Clock ticks since boot (field 22 of /proc/<pid>/stat).
  uint64_t start_ticks = 0;

  friend auto operator<=>(const ProcessKey&, const ProcessKey&) = default;

  // "pid 1234 (started at tick 5678)": for logs and test failures.
  std::string ToString() const;
};

inline std::ostream& operator<<(std::ostream& out, const ProcessKey& k) {
  return out << k.ToString();
}

}  // namespace memtrimd

template <>
struct std::hash<memtrimd::ProcessKey> {
  std::size_t operator()(const memtrimd::ProcessKey& k) const noexcept {
    // Start ticks differ between the instances a pid is reused for: mixing
    // them in keeps those apart in a table.
    const std::size_t p = std::hash<pid_t>{}(k.pid);
    const std::size_t t = std::hash<uint64_t>{}(k.start_ticks);
    return p ^ (t + 0x9e3779b97f4a7c15ull + (p << 6) + (p >> 2));
  }
};

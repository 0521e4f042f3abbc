#include "tests/integration/heap_walk.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <set>

#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

constexpr uint64_t kHeap = 64ull << 20;
constexpr uint64_t kPage = 4096;
constexpr uint64_t kTopOffset = 96;

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

bool ReadWords(int mem, uint64_t address, uint64_t* words, std::size_t n) {
  const auto bytes = static_cast<ssize_t>(n * sizeof(uint64_t));
  return ::pread(mem, words, static_cast<std::size_t>(bytes), static_cast<off_t>(address)) == bytes;
}

uint64_t PresentPages(int pagemap, uint64_t start, uint64_t length) {
  uint64_t present = 0;
  std::array<uint64_t, 512> entries{};
  for (uint64_t page = start / kPage; page < (start + length) / kPage;) {
    const uint64_t n = std::min<uint64_t>(entries.size(), (start + length) / kPage - page);
    const auto bytes = static_cast<ssize_t>(n * sizeof(uint64_t));
    if (::pread(pagemap, entries.data(), static_cast<std::size_t>(bytes),
                static_cast<off_t>(page * sizeof(uint64_t))) != bytes) {
      return present;
    }
    for (uint64_t i = 0; i < n; ++i) present += entries[i] >> 63;
    page += n;
  }
  return present;
}

}  // namespace

HeapWalk WalkArenaHeaps(pid_t pid) {
  HeapWalk walk;
  const std::string proc = "/proc/" + std::to_string(pid);
  Fd mem{::open((proc + "/mem").c_str(), O_RDONLY | O_CLOEXEC)};
  Fd pagemap{::open((proc + "/pagemap").c_str(), O_RDONLY | O_CLOEXEC)};
  if (mem.fd < 0 || pagemap.fd < 0) {
    walk.error = "cannot open " + proc + "/mem or pagemap";
    return walk;
  }
  // First heaps: where an arena lives.
  std::vector<uint64_t> arenas;
  for (const RawMapping& m : ReadSmapsIndependently(pid)) {
    if (m.perms != "rw-p" || m.inode != 0 || (!m.path.empty() && m.path.rfind("[anon:", 0) != 0)) {
      continue;
    }
    for (uint64_t a = (m.start + kHeap - 1) & ~(kHeap - 1); a < m.end; a += kHeap) {
      if (PresentPages(pagemap.fd, a, kPage) == 0) continue;  // never read what nobody wrote
      uint64_t h[5] = {};
      if (!ReadWords(mem.fd, a, h, 5)) continue;
      if (h[1] == 0 && h[0] == a + 48 && h[2] != 0 && h[2] <= h[3] && h[3] <= kHeap) {
        arenas.push_back(h[0]);
      }
    }
  }
  std::set<uint64_t> seen;
  for (uint64_t arena : arenas) {
    uint64_t top = 0;
    if (!ReadWords(mem.fd, arena + kTopOffset, &top, 1)) {
      walk.error = "cannot read an arena's top";
      continue;
    }
    uint64_t at = top & ~(kHeap - 1);
    for (int steps = 0; steps < 100000; ++steps) {
      uint64_t h[5] = {};
      if (!ReadWords(mem.fd, at, h, 5) || h[0] != arena || !seen.insert(at).second) {
        walk.error = "a chain leaves its arena";
        break;
      }
      WalkedHeap w{at, arena, h[3], PresentPages(pagemap.fd, at, h[3]) * kPage};
      walk.resident += w.resident;
      walk.heaps.push_back(w);
      if (h[1] == 0) {
        if (at + 48 != arena) walk.error = "a chain ends away from its arena";
        break;
      }
      at = h[1];
    }
  }
  std::sort(walk.heaps.begin(), walk.heaps.end(),
            [](const WalkedHeap& a, const WalkedHeap& b) { return a.start < b.start; });
  return walk;
}

}  // namespace memtrimd::testing

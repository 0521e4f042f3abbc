#include "collectors/agent/client/site_resident.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace memtrimd::agent {

namespace {

// Samples read between two looks at the clock, in address order (nearby
// ranges share pagemap reads); the rounds themselves are a random order.
constexpr std::size_t kRound = 4096;
// One pagemap read covers at most this many pages (16 KiB of entries), and
// ranges whose pages lie within kJoinGap of each other share one read.
constexpr uint64_t kWindowPages = 2048;
constexpr uint64_t kJoinGap = 32;

struct Span {
  uint64_t first = 0;  // first page
  uint64_t end = 0;    // one past the last page
};

Span PagesOf(const LiveSample& s, uint64_t page) {
  if (s.size == 0) return {s.ptr / page, s.ptr / page};
  const uint64_t last = s.ptr + s.size - 1 < s.ptr ? UINT64_MAX : s.ptr + s.size - 1;
  return {s.ptr / page, last / page + 1};
}

}  // namespace

void EstimateResident(AgentSites& sites, const procfs::PageResidency& pages,
                      const ResidentOptions& options) {
  SiteResident& r = sites.resident;
  r = SiteResident{};
  for (AgentStack& s : sites.stacks) {
    s.values.resident_bytes = 0;
    s.values.resident_variance = 0;
  }
  if (!sites.has_live) {
    r.why = kResidentOldAgent;
    return;
  }
  const auto started = options.now();
  const std::size_t n = sites.live.size();
  r.listed = n;
  r.samples = std::max<uint64_t>(sites.live_seen, n);
  const uint64_t page = std::max<uint64_t>(pages.PageSize(), 1);

  // A random order, read a round at a time: wherever the budget stops the
  // pass, the samples read are a uniform subset of those listed.
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::mt19937_64 rng(options.seed);
  std::shuffle(order.begin(), order.end(), rng);

  std::vector<double> resident(sites.stacks.size(), 0.0);
  std::vector<double> variance(sites.stacks.size(), 0.0);
  std::array<uint64_t, kWindowPages> buf{};
  uint64_t pages_planned = 0;
  std::size_t read = 0;
  Status error;
  // One sample's share: weight * resident / size, and its variance under
  // the sampler's Poisson draw (kept with probability size / weight).
  auto add = [&](const LiveSample& s, uint64_t in_ram) {
    if (s.size == 0 || s.stack >= resident.size()) return;
    const double y =
        static_cast<double>(s.weight) * static_cast<double>(in_ram) / static_cast<double>(s.size);
    const double p =
        s.weight == 0 ? 1.0
                      : std::min(1.0, static_cast<double>(s.size) / static_cast<double>(s.weight));
    resident[s.stack] += y;
    variance[s.stack] += (1.0 - p) * y * y;
  };
  bool stop = false;
  for (std::size_t begin = 0; begin < n && !stop && error.ok(); begin += kRound) {
    if (begin > 0 && options.now() - started >= options.budget) break;
    std::size_t end = std::min(n, begin + kRound);
    // The page budget: the round ends at the first sample that would pass it.
    for (std::size_t i = begin; i < end; ++i) {
      const Span sp = PagesOf(sites.live[order[i]], page);
      if (pages_planned + (sp.end - sp.first) > options.max_pages) {
        end = i;
        stop = true;
        break;
      }
      pages_planned += sp.end - sp.first;
    }
    std::sort(order.begin() + static_cast<std::ptrdiff_t>(begin),
              order.begin() + static_cast<std::ptrdiff_t>(end),
              [&](uint32_t a, uint32_t b) { return sites.live[a].ptr < sites.live[b].ptr; });
    std::size_t i = begin;
    while (i < end && error.ok()) {
      const LiveSample& first = sites.live[order[i]];
      const Span sp = PagesOf(first, page);
      if (sp.end - sp.first > kWindowPages) {
        // A large range on its own, in chunks.
        Result<uint64_t> bytes = pages.RangeResidentBytes(first.ptr, first.size);
        if (!bytes.ok()) {
          error = bytes.status();
          break;
        }
        r.pages_read += sp.end - sp.first;
        add(first, *bytes);
        ++i;
        continue;
      }
      // Ranges close enough to share one read of at most kWindowPages.
      std::size_t j = i + 1;
      uint64_t group_end = sp.end;
      while (j < end) {
        const Span next = PagesOf(sites.live[order[j]], page);
        if (next.first > group_end + kJoinGap ||
            std::max(group_end, next.end) - sp.first > kWindowPages) {
          break;
        }
        group_end = std::max(group_end, next.end);
        ++j;
      }
      if (group_end > sp.first) {
        std::span<uint64_t> entries(buf.data(), static_cast<std::size_t>(group_end - sp.first));
        error = pages.Entries(sp.first, entries);
        if (!error.ok()) break;
        r.pages_read += entries.size();
        for (std::size_t k = i; k < j; ++k) {
          const LiveSample& s = sites.live[order[k]];
          add(s, procfs::ResidentInRange(s.ptr, s.size, sp.first, entries, page));
        }
      }
      i = j;
    }
    if (error.ok()) read = end;
  }
  r.seconds = std::chrono::duration<double>(options.now() - started).count();
  if (!error.ok()) {
    r.why = "the target's pagemap could not be read: " + error.message();
    return;
  }
  r.read = read;
  if (read == 0 && r.samples > 0) {
    r.why = "no live sample's pages could be read within the pass's bound";
    return;
  }
  // Samples not read (the bound) or not listed (the agent's buffer) are
  // stood for by those read.
  const double scale = read == 0 ? 1.0 : static_cast<double>(r.samples) / static_cast<double>(read);
  r.scaled = read < r.samples;
  for (std::size_t s = 0; s < sites.stacks.size(); ++s) {
    SiteValues& v = sites.stacks[s].values;
    // Never more than the live bytes: a resident byte is a live one.
    const double est = std::min(resident[s] * scale, static_cast<double>(v.live_bytes));
    v.resident_bytes = static_cast<uint64_t>(std::llround(est));
    v.resident_variance = variance[s] * scale * scale;
  }
  r.known = true;
}

}  // namespace memtrimd::agent

// Which detail families /metrics carries. A JVM target is about 160 series
// with every family on; a node agent watching dozens of JVMs on each of a
// thousand nodes cannot afford that, so node-agent mode starts from the
// series a fleet needs and --metrics.detail buys the rest family by family
// (docs/metrics.md, "Series budget").
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace memtrimd {

// The detail families, by the name --metrics.detail takes.
inline constexpr std::string_view kDetailFamilies[] = {
    "nmt",           // memtrimd_jvm_nmt_{reserved,committed,malloc}_bytes per category
    "buffer_pools",  // memtrimd_jvm_buffer_pool_* per pool, direct memory used and limit
    "gc",            // memtrimd_jvm_gc_* per collector
    "settings",      // JVM settings, malloc settings, Java heap max
    "breakdown",     // memtrimd_rss_breakdown_bytes (the RSS account stays)
    "heaps",         // arena heap details, smaps age and duration, malloc_info figures
    "process",       // threads, swap, peak RSS
    "cgroup",        // the cgroup's usage and its anon/file split
    "collectors",    // memtrimd_collector_{success,duration_seconds} per target
    "trim",          // run counters still at 0, last trim by measure, interval, durations
    "allocator",     // the allocator's figures: common measures, its own stats, decay
};

struct MetricDetail {
  bool all = true;
  std::set<std::string, std::less<>> on;  // when !all
  bool Has(std::string_view family) const { return all || on.count(family) > 0; }
  // Rows of memtrimd_native_site_live_bytes per target besides "other"
  // (--sites.top).
  std::size_t sites_top = 5;
};

// "all", "none", or a comma-separated list of kDetailFamilies; "" on
// success, else the one-line error.
std::string ParseMetricDetail(std::string_view text, MetricDetail& out);

}  // namespace memtrimd

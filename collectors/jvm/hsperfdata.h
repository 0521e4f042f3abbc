// hsperfdata: the JVM's shared performance counters, a 32 KiB file at
// /tmp/hsperfdata_<user>/<nspid> in the JVM's mount namespace. Cheap to
// read (no attach, no safepoint); written without locks, so a value may be
// torn mid-update: callers treat it as a hint for gauges.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "collectors/common/status.h"

namespace memtrimd::jvm {

using PerfValue = std::variant<int64_t, std::string>;

struct PerfData {
  int major = 0;
  int minor = 0;
  bool accessible = false;
  std::map<std::string, PerfValue, std::less<>> entries;

  std::optional<int64_t> Long(std::string_view name) const;
  std::optional<std::string> String(std::string_view name) const;
};

// What a file may make ParsePerfData hold, whatever it contains. HotSpot
// writes about 130 to 220 entries (JDK 17 and 25, every collector), of
// which memtrimd reads at most 70, with names under 80 bytes and strings
// (causes, collector names, sun.rt.jvmCapabilities) under 80 bytes; the
// caps leave room twenty times over. At most 512 * (128 + 256 + the map's
// ~100 bytes) = 250 KiB per parsed file, 10 KiB for a real one.
constexpr std::size_t kMaxPerfEntries = 4096;     // more: refused at the prologue
constexpr std::size_t kMaxPerfKeptEntries = 512;  // of the names memtrimd reads
constexpr std::size_t kMaxPerfNameBytes = 128;    // a longer name is skipped
constexpr std::size_t kMaxPerfStringBytes = 256;  // a longer string value is cut

// Pure: parses the bytes of an hsperfdata file, keeping only the entries
// memtrimd reads (sun.gc.generation.*, sun.gc.collector.*, sun.gc.cause,
// sun.gc.lastCause, sun.os.hrt.frequency, sun.rt.createVmBeginTime,
// sun.rt.createVmEndTime, sun.rt.jvmCapabilities) within the caps above.
// Rejects a wrong magic, a byte order other than little-endian, offsets
// outside the buffer and more than kMaxPerfEntries entries.
Result<PerfData> ParsePerfData(std::string_view bytes);

// Java heap committed/used/max from sun.gc.generation.* (nullopt when the
// counters are absent). committed = sum of generation capacities, used = sum
// of space used. max = sum of generation maxCapacity for Serial/Parallel
// (generation 0 named "new"); G1, ZGC and Shenandoah give every generation
// the whole heap as maximum, so there it is the largest one. committed
// matches GC.heap_info (G1 on 17 pads each counter by 8 bytes); used is
// updated at GC (and sampled every 50 ms on 17 Serial/Parallel), so it lags.
struct PerfHeap {
  uint64_t committed_bytes = 0;
  uint64_t used_bytes = 0;
  uint64_t max_bytes = 0;
};
std::optional<PerfHeap> HeapFromPerfData(const PerfData& data);

// Garbage collection counters: sun.gc.collector.<n>.{name,invocations,time}
// (time in ticks of sun.os.hrt.frequency), sun.gc.cause / sun.gc.lastCause.
struct PerfGcCollector {
  std::string name;  // e.g. "G1 young collection pauses"
  uint64_t invocations = 0;
  double seconds = 0;
};
struct PerfGc {
  std::vector<PerfGcCollector> collectors;  // by n
  std::string cause;                        // of the collection running now ("No GC" when none)
  // Of the last collection, e.g. "System.gc()"; the running one's while a
  // collection runs (see GcFromPerfData).
  std::string last_cause;
};
// Absent when the file has neither collector nor cause counters.
std::optional<PerfGc> GcFromPerfData(const PerfData& data);

// Full collections among a JVM's collections so far: what a System.gc()
// runs. The collectors named "full" (G1, Parallel, Serial: collector 1) or
// "major" (generational ZGC); G1's concurrent cycles too, at two pauses
// (remark, cleanup) each in "G1 concurrent cycle pauses": with
// -XX:+ExplicitGCInvokesConcurrent a System.gc() starts one of those
// instead of a full collection. A JVM with none of these names (ZGC on 17,
// Shenandoah) has one collector, whose every collection takes the whole
// heap: all of its pauses count. Young collections never count (Parallel
// runs one before each full one, with the same cause).
double FullCollections(const PerfGc& gc);

// Pure: collections per second (all collectors together), full collections
// per second (FullCollections) and the share of wall time spent in them,
// between two readings of the same JVM `wall_seconds` apart. Absent when
// the window is shorter than `min_wall_seconds` (a rate over a few
// milliseconds is noise) or a counter went down.
struct GcRates {
  double per_second = 0;
  double full_per_second = 0;
  double time_ratio = 0;
};
std::optional<GcRates> GcRatesBetween(const PerfGc& before, const PerfGc& after,
                                      double wall_seconds, double min_wall_seconds = 1.0);

// Whether the JVM supports attach, as it resolved -XX:+/-DisableAttachMechanism
// from every source (the first character of sun.rt.jvmCapabilities, which
// the JDK's own tools read). nullopt when the counter is absent or malformed.
std::optional<bool> AttachSupportedFromPerfData(const PerfData& data);

// The JVM's own mapping of its perf-data file in a /proc/<pid>/maps line:
// a shared mapping of ".../hsperfdata_<user>/<nspid>". The path is as the
// JVM sees it (its mount namespace); device and inode identify the file, so
// that a stale file of an earlier JVM with the same pid is not taken for it.
struct PerfDataMapping {
  std::string path;
  unsigned dev_major = 0;
  unsigned dev_minor = 0;
  uint64_t inode = 0;
};
std::optional<PerfDataMapping> PerfDataMappingFromMapsLine(std::string_view line, int nspid);

}  // namespace memtrimd::jvm

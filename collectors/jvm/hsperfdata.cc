#include "collectors/jvm/hsperfdata.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "collectors/common/text.h"

namespace memtrimd::jvm {
namespace {

// PerfDataPrologue (HotSpot perfMemory.hpp), 32 bytes:
//   0 magic u32 (bytes CA FE C0 C0)   4 byte_order u8 (0 big, 1 little)
//   5 major u8   6 minor u8   7 accessible u8
//   8 used i32   12 overflow i32   16 mod_time_stamp i64
//   24 entry_offset i32   28 num_entries i32
constexpr std::size_t kPrologueSize = 32;
// PerfDataEntry header, 20 bytes:
//   0 entry_length i32   4 name_offset i32   8 vector_length i32
//   12 data_type u8   13 flags u8   14 data_units u8   15 data_variability u8
//   16 data_offset i32
// name_offset and data_offset are relative to the entry's start.
constexpr std::size_t kEntryHeaderSize = 20;
constexpr uint8_t kLittleEndian = 1;

uint8_t U8(std::string_view b, std::size_t at) { return static_cast<uint8_t>(b[at]); }

// Little-endian reads; the caller has checked at + width <= b.size().
int32_t I32(std::string_view b, std::size_t at) {
  uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v |= static_cast<uint32_t>(U8(b, at + i)) << (8 * i);
  return static_cast<int32_t>(v);
}

int64_t I64(std::string_view b, std::size_t at) {
  uint64_t v = 0;
  for (std::size_t i = 0; i < 8; ++i) v |= static_cast<uint64_t>(U8(b, at + i)) << (8 * i);
  return static_cast<int64_t>(v);
}

Status Bad(const std::string& what) {
  return Status(ErrorCode::kParseError, "hsperfdata: " + what);
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// The counters memtrimd reads (HeapFromPerfData, GcFromPerfData,
// AttachSupportedFromPerfData, the collector's createVmBeginTime, and
// createVmEndTime, which tells a JVM that finished starting). Every
// other entry is skipped without a copy: a file holding 150k minimal
// entries used to cost a map of all of them (15 MiB) on every read.
bool Wanted(std::string_view name) {
  return StartsWith(name, "sun.gc.generation.") || StartsWith(name, "sun.gc.collector.") ||
         name == "sun.gc.cause" || name == "sun.gc.lastCause" || name == "sun.os.hrt.frequency" ||
         name == "sun.rt.createVmBeginTime" || name == "sun.rt.createVmEndTime" ||
         name == "sun.rt.jvmCapabilities";
}

// Skips leading decimal digits of `s`; false when there are none.
bool SkipIndex(std::string_view& s) {
  std::size_t n = 0;
  while (n < s.size() && s[n] >= '0' && s[n] <= '9') ++n;
  if (n == 0) return false;
  s.remove_prefix(n);
  return true;
}

uint64_t SatAdd(uint64_t a, int64_t b) {
  if (b <= 0) return a;  // a torn or unset counter: ignore
  uint64_t u = static_cast<uint64_t>(b);
  return a > std::numeric_limits<uint64_t>::max() - u ? std::numeric_limits<uint64_t>::max()
                                                      : a + u;
}

}  // namespace

std::optional<int64_t> PerfData::Long(std::string_view name) const {
  auto it = entries.find(name);
  if (it == entries.end()) return std::nullopt;
  if (const int64_t* v = std::get_if<int64_t>(&it->second)) return *v;
  return std::nullopt;
}

std::optional<std::string> PerfData::String(std::string_view name) const {
  auto it = entries.find(name);
  if (it == entries.end()) return std::nullopt;
  if (const std::string* v = std::get_if<std::string>(&it->second)) return *v;
  return std::nullopt;
}

std::optional<bool> AttachSupportedFromPerfData(const PerfData& data) {
  std::optional<std::string> caps = data.String("sun.rt.jvmCapabilities");
  if (!caps || caps->empty()) return std::nullopt;
  if ((*caps)[0] == '1') return true;
  if ((*caps)[0] == '0') return false;
  return std::nullopt;
}

// "start-end perms offset major:minor inode   path"; the path may hold
// spaces, and " (deleted)" when the file was removed under the JVM.
std::optional<PerfDataMapping> PerfDataMappingFromMapsLine(std::string_view line, int nspid) {
  std::string_view rest = line;
  std::string_view fields[5];
  for (std::string_view& f : fields) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    std::size_t sp = rest.find(' ');
    if (sp == std::string_view::npos) return std::nullopt;
    f = rest.substr(0, sp);
    rest.remove_prefix(sp);
  }
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  const std::string_view path = rest;
  if (fields[1].size() != 4 || fields[1][3] != 's') return std::nullopt;  // the JVM maps it shared
  const std::string name = "/" + std::to_string(nspid);
  if (path.size() <= name.size() || path.substr(path.size() - name.size()) != name) {
    return std::nullopt;
  }
  std::string_view dir = path.substr(0, path.size() - name.size());
  std::size_t slash = dir.rfind('/');
  if (slash == std::string_view::npos || !StartsWith(dir.substr(slash + 1), "hsperfdata_")) {
    return std::nullopt;
  }
  PerfDataMapping m;
  std::size_t colon = fields[3].find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::optional<uint64_t> major = text::ParseHex(fields[3].substr(0, colon));
  std::optional<uint64_t> minor = text::ParseHex(fields[3].substr(colon + 1));
  if (!major || !minor || *major > 0xffffffffu || *minor > 0xffffffffu) return std::nullopt;
  m.dev_major = static_cast<unsigned>(*major);
  m.dev_minor = static_cast<unsigned>(*minor);
  std::string_view ino = fields[4];
  if (ino.empty()) return std::nullopt;
  for (char c : ino) {
    if (c < '0' || c > '9' || m.inode > (UINT64_MAX - 9) / 10) return std::nullopt;
    m.inode = m.inode * 10 + static_cast<uint64_t>(c - '0');
  }
  m.path = std::string(path);
  return m;
}

Result<PerfData> ParsePerfData(std::string_view bytes) {
  if (bytes.size() < kPrologueSize) return Bad("shorter than the 32-byte prologue");
  if (U8(bytes, 0) != 0xCA || U8(bytes, 1) != 0xFE || U8(bytes, 2) != 0xC0 ||
      U8(bytes, 3) != 0xC0) {
    return Bad("bad magic");
  }
  if (U8(bytes, 4) != kLittleEndian) return Bad("byte order is not little-endian");

  PerfData out;
  out.major = U8(bytes, 5);
  out.minor = U8(bytes, 6);
  out.accessible = U8(bytes, 7) != 0;
  int32_t used = I32(bytes, 8);
  int32_t entry_offset = I32(bytes, 24);
  int32_t num_entries = I32(bytes, 28);

  // Entries live in [entry_offset, used); a file shorter than `used` was
  // truncated (or is being created).
  if (used < static_cast<int32_t>(kPrologueSize)) return Bad("used smaller than the prologue");
  if (static_cast<std::size_t>(used) > bytes.size()) return Bad("truncated (used > file size)");
  const std::size_t limit = static_cast<std::size_t>(used);
  if (entry_offset < static_cast<int32_t>(kPrologueSize) ||
      static_cast<std::size_t>(entry_offset) > limit) {
    return Bad("entry_offset outside the buffer");
  }
  if (num_entries < 0) return Bad("negative num_entries");
  if (num_entries > static_cast<int32_t>(kMaxPerfEntries)) {
    return Bad("more than " + std::to_string(kMaxPerfEntries) + " entries");
  }
  if (static_cast<std::size_t>(num_entries) >
      (limit - static_cast<std::size_t>(entry_offset)) / kEntryHeaderSize) {
    return Bad("num_entries larger than the buffer can hold");
  }

  std::size_t off = static_cast<std::size_t>(entry_offset);
  for (int32_t i = 0; i < num_entries; ++i) {
    if (limit - off < kEntryHeaderSize) return Bad("entry header outside the buffer");
    int32_t entry_length = I32(bytes, off);
    int32_t name_offset = I32(bytes, off + 4);
    int32_t vector_length = I32(bytes, off + 8);
    char data_type = static_cast<char>(U8(bytes, off + 12));
    int32_t data_offset = I32(bytes, off + 16);

    if (entry_length < static_cast<int32_t>(kEntryHeaderSize) ||
        static_cast<std::size_t>(entry_length) > limit - off) {
      return Bad("entry_length outside the buffer");
    }
    const std::size_t len = static_cast<std::size_t>(entry_length);
    std::string_view entry = bytes.substr(off, len);
    if (name_offset < static_cast<int32_t>(kEntryHeaderSize) ||
        static_cast<std::size_t>(name_offset) >= len) {
      return Bad("name_offset outside the entry");
    }
    std::string_view name_area = entry.substr(static_cast<std::size_t>(name_offset));
    std::size_t nul = name_area.find('\0');
    if (nul == std::string_view::npos) return Bad("entry name not NUL-terminated");
    std::string_view name = name_area.substr(0, nul);
    if (data_offset < static_cast<int32_t>(kEntryHeaderSize) ||
        static_cast<std::size_t>(data_offset) > len || vector_length < 0) {
      return Bad("data_offset outside the entry");
    }
    const std::size_t data_at = static_cast<std::size_t>(data_offset);
    const std::size_t avail = len - data_at;

    // Kept only when memtrimd reads it, its name is of a length HotSpot
    // writes, and there is room (a name seen again replaces its value).
    const bool keep = !name.empty() && name.size() <= kMaxPerfNameBytes && Wanted(name) &&
                      (out.entries.size() < kMaxPerfKeptEntries || out.entries.count(name) != 0);
    if (data_type == 'J' && vector_length == 0) {
      if (avail < 8) return Bad("long value outside the entry");
      if (keep) out.entries.insert_or_assign(std::string(name), I64(entry, data_at));
    } else if (data_type == 'B' && vector_length > 0) {
      const std::size_t vlen = static_cast<std::size_t>(vector_length);
      if (vlen > avail) return Bad("byte array outside the entry");
      std::string_view value = entry.substr(data_at, vlen);
      std::size_t end = value.find('\0');
      if (end != std::string_view::npos) value = value.substr(0, end);
      value = value.substr(0, kMaxPerfStringBytes);
      if (keep) out.entries.insert_or_assign(std::string(name), std::string(value));
    }
    // Other types (none in current JVMs) are skipped.
    off += len;
  }
  return out;
}

// sun.gc.generation.<n>.capacity       committed bytes of generation n
// sun.gc.generation.<n>.maxCapacity    its maximum
// sun.gc.generation.<n>.space.<m>.used used bytes of its space m
//
// committed and used are sums. The maximum is a sum only where the
// generations split the heap between them: Serial and Parallel name
// generation 0 "new", and there the maxima add up to -Xmx. G1 ("young",
// "old"), generational ZGC ("young", "old"), single-generation ZGC ("old")
// and Shenandoah ("Young" with 0, "Heap") give each generation the whole
// heap as its maximum (G1: 64 MiB + 64 MiB for -Xmx64m), so there it is the
// largest maxCapacity. Without a generation 0 name the sum is used.
std::optional<PerfHeap> HeapFromPerfData(const PerfData& data) {
  constexpr std::string_view kPrefix = "sun.gc.generation.";
  PerfHeap heap;
  bool found = false;
  uint64_t max_sum = 0;
  uint64_t max_largest = 0;
  for (auto it = data.entries.lower_bound(kPrefix);
       it != data.entries.end() && StartsWith(it->first, kPrefix); ++it) {
    const int64_t* value = std::get_if<int64_t>(&it->second);
    if (value == nullptr) continue;
    std::string_view rest = std::string_view(it->first).substr(kPrefix.size());
    if (!SkipIndex(rest)) continue;
    if (rest == ".capacity") {
      heap.committed_bytes = SatAdd(heap.committed_bytes, *value);
      found = true;
    } else if (rest == ".maxCapacity") {
      max_sum = SatAdd(max_sum, *value);
      if (*value > 0 && static_cast<uint64_t>(*value) > max_largest) {
        max_largest = static_cast<uint64_t>(*value);
      }
    } else if (StartsWith(rest, ".space.")) {
      rest.remove_prefix(7);
      if (SkipIndex(rest) && rest == ".used") heap.used_bytes = SatAdd(heap.used_bytes, *value);
    }
  }
  if (!found) return std::nullopt;
  auto gen0 = data.entries.find(std::string_view("sun.gc.generation.0.name"));
  const std::string* gen0_name =
      gen0 == data.entries.end() ? nullptr : std::get_if<std::string>(&gen0->second);
  auto any_name = data.entries.find(std::string_view("sun.gc.generation.1.name"));
  bool named = gen0_name != nullptr || any_name != data.entries.end();
  bool partitioned = !named || (gen0_name != nullptr && *gen0_name == "new");
  heap.max_bytes = partitioned ? max_sum : max_largest;
  return heap;
}

// sun.gc.collector.<n>.name         e.g. "G1 young collection pauses"
// sun.gc.collector.<n>.invocations  collections so far
// sun.gc.collector.<n>.time         their time, in ticks of sun.os.hrt.frequency
//
// The indices are not dense: ZGC on 17 has only collector 2, generational
// ZGC on 25 has 0 (minor) and 2 (major). A counter written while it is read
// may be torn; a negative value counts as 0.
std::optional<PerfGc> GcFromPerfData(const PerfData& data) {
  constexpr std::string_view kPrefix = "sun.gc.collector.";
  constexpr std::string_view kNoGc = "No GC";
  // Bounds what a damaged file can make us hold; HotSpot has at most 3.
  constexpr std::size_t kMaxCollectors = 16;
  constexpr std::size_t kMaxIndexDigits = 4;
  std::map<unsigned, PerfGcCollector> by_index;
  std::map<unsigned, int64_t> ticks;
  for (auto it = data.entries.lower_bound(kPrefix);
       it != data.entries.end() && StartsWith(it->first, kPrefix); ++it) {
    std::string_view rest = std::string_view(it->first).substr(kPrefix.size());
    std::string_view digits = rest;
    if (!SkipIndex(rest)) continue;
    digits = digits.substr(0, digits.size() - rest.size());
    if (digits.size() > kMaxIndexDigits) continue;
    unsigned n = 0;
    for (char c : digits) n = n * 10 + static_cast<unsigned>(c - '0');
    if (rest != ".name" && rest != ".invocations" && rest != ".time") continue;
    if (!by_index.count(n) && by_index.size() >= kMaxCollectors) continue;
    PerfGcCollector& c = by_index[n];
    const int64_t* value = std::get_if<int64_t>(&it->second);
    if (rest == ".name") {
      if (const std::string* s = std::get_if<std::string>(&it->second)) c.name = *s;
    } else if (rest == ".invocations" && value != nullptr) {
      c.invocations = *value > 0 ? static_cast<uint64_t>(*value) : 0;
    } else if (rest == ".time" && value != nullptr) {
      ticks[n] = *value;
    }
  }
  std::optional<std::string> cause = data.String("sun.gc.cause");
  std::optional<std::string> last_cause = data.String("sun.gc.lastCause");
  if (by_index.empty() && !cause && !last_cause) return std::nullopt;
  // Without a frequency the time cannot be converted: it stays 0.
  std::optional<int64_t> frequency = data.Long("sun.os.hrt.frequency");
  PerfGc gc;
  for (auto& [n, c] : by_index) {
    auto t = ticks.find(n);
    if (frequency && *frequency > 0 && t != ticks.end() && t->second > 0) {
      c.seconds = static_cast<double>(t->second) / static_cast<double>(*frequency);
    }
    gc.collectors.push_back(std::move(c));
  }
  gc.cause = cause.value_or("");
  gc.last_cause = last_cause.value_or("");
  // HotSpot moves the cause into lastCause when it changes, so while a
  // collection runs lastCause holds the "No GC" before it. With collections
  // back to back (a System.gc() storm) a reading is often taken then: the
  // collection running now is the latest one.
  if (gc.last_cause == kNoGc && !gc.cause.empty() && gc.cause != kNoGc) gc.last_cause = gc.cause;
  return gc;
}

double FullCollections(const PerfGc& gc) {
  // Remark and cleanup: the pauses of one G1 concurrent cycle.
  constexpr double kG1PausesPerConcurrentCycle = 2;
  double full = 0;
  bool named = false;
  uint64_t all = 0;
  for (const PerfGcCollector& c : gc.collectors) {
    all += c.invocations;
    if (c.name.find("full") != std::string::npos || c.name.find("major") != std::string::npos) {
      full += static_cast<double>(c.invocations);
      named = true;
    } else if (c.name == "G1 concurrent cycle pauses") {
      full += static_cast<double>(c.invocations) / kG1PausesPerConcurrentCycle;
    } else if (c.name.find("young") != std::string::npos ||
               c.name.find("minor") != std::string::npos) {
      named = true;
    }
  }
  return named ? full : static_cast<double>(all);
}

std::optional<GcRates> GcRatesBetween(const PerfGc& before, const PerfGc& after,
                                      double wall_seconds, double min_wall_seconds) {
  if (!(wall_seconds >= min_wall_seconds) || wall_seconds <= 0) return std::nullopt;
  uint64_t count_before = 0;
  uint64_t count_after = 0;
  double time_before = 0;
  double time_after = 0;
  for (const PerfGcCollector& c : before.collectors) {
    count_before += c.invocations;
    time_before += c.seconds;
  }
  for (const PerfGcCollector& c : after.collectors) {
    count_after += c.invocations;
    time_after += c.seconds;
  }
  // Counters only grow in one JVM: a decrease is a torn read or another JVM.
  if (count_after < count_before || time_after < time_before) return std::nullopt;
  const double full_before = FullCollections(before);
  const double full_after = FullCollections(after);
  if (full_after < full_before) return std::nullopt;
  GcRates r;
  r.per_second = static_cast<double>(count_after - count_before) / wall_seconds;
  r.full_per_second = (full_after - full_before) / wall_seconds;
  // Pauses do not overlap, so the share is at most 1; a torn counter could
  // say more.
  r.time_ratio = std::min(1.0, (time_after - time_before) / wall_seconds);
  return r;
}

}  // namespace memtrimd::jvm

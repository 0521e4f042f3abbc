// Fuzz target: hsperfdata files (jvm::ParsePerfData, HeapFromPerfData,
// GcFromPerfData, GcRatesBetween).
//
// Invariants: entry names are non-empty and hold no NUL, string values
// hold no NUL; the entries written back as a little-endian hsperfdata file
// (prologue, then one 'J' or 'B' entry each, as HotSpot lays them out)
// parse to the same entries; the heap figures do not depend on entry order
// (they are computed from the map) and are present exactly when a
// generation capacity counter is. GC counters: at most 16 collectors, none
// with negative or NaN figures, present when a collector or cause counter
// is; a reading against itself is a rate of 0.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "collectors/jvm/hsperfdata.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using memtrimd::jvm::PerfData;

void Put32(std::string& b, std::size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

void Put64(std::string& b, std::size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

std::string Format(const PerfData& d) {
  std::string out(32, '\0');
  out[0] = static_cast<char>(0xCA);
  out[1] = static_cast<char>(0xFE);
  out[2] = static_cast<char>(0xC0);
  out[3] = static_cast<char>(0xC0);
  out[4] = 1;  // little-endian
  out[5] = static_cast<char>(d.major);
  out[6] = static_cast<char>(d.minor);
  out[7] = d.accessible ? 1 : 0;
  Put32(out, 24, 32);  // entry_offset
  Put32(out, 28, static_cast<uint32_t>(d.entries.size()));
  for (const auto& [name, value] : d.entries) {
    // Header (20 bytes), NUL-terminated name, then the value, padded to 8.
    std::string data;
    int32_t vector_length = 0;
    char type = 'J';
    if (const int64_t* v = std::get_if<int64_t>(&value)) {
      data.assign(8, '\0');
      Put64(data, 0, static_cast<uint64_t>(*v));
    } else {
      type = 'B';
      data = std::get<std::string>(value) + '\0';
      vector_length = static_cast<int32_t>(data.size());
    }
    std::size_t name_offset = 20;
    std::size_t data_offset = (name_offset + name.size() + 1 + 7) / 8 * 8;
    std::size_t length = (data_offset + data.size() + 7) / 8 * 8;
    std::string entry(length, '\0');
    Put32(entry, 0, static_cast<uint32_t>(length));
    Put32(entry, 4, static_cast<uint32_t>(name_offset));
    Put32(entry, 8, static_cast<uint32_t>(vector_length));
    entry[12] = type;
    entry[13] = 0;
    entry[14] = 1;
    entry[15] = 1;
    Put32(entry, 16, static_cast<uint32_t>(data_offset));
    entry.replace(name_offset, name.size(), name);
    entry.replace(data_offset, data.size(), data);
    out += entry;
  }
  Put32(out, 8, static_cast<uint32_t>(out.size()));  // used
  return out;
}

// "sun.gc.generation.<n>.capacity"
bool IsCapacity(std::string_view name) {
  constexpr std::string_view kPrefix = "sun.gc.generation.";
  constexpr std::string_view kSuffix = ".capacity";
  if (name.size() <= kPrefix.size() + kSuffix.size()) return false;
  if (name.substr(0, kPrefix.size()) != kPrefix) return false;
  if (name.substr(name.size() - kSuffix.size()) != kSuffix) return false;
  std::string_view digits =
      name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using memtrimd::jvm::HeapFromPerfData;
  using memtrimd::jvm::ParsePerfData;
  auto perf = ParsePerfData(memtrimd::fuzz::AsText(data, size));
  if (!perf.ok()) return 0;
  bool has_capacity = false;
  for (const auto& [name, value] : perf->entries) {
    FUZZ_CHECK(!name.empty());
    FUZZ_CHECK(name.find('\0') == std::string::npos);
    if (const std::string* s = std::get_if<std::string>(&value)) {
      FUZZ_CHECK(s->find('\0') == std::string::npos);
    }
    FUZZ_CHECK(perf->Long(name).has_value() == std::holds_alternative<int64_t>(value));
    has_capacity = has_capacity || (std::holds_alternative<int64_t>(value) && IsCapacity(name));
  }
  auto heap = HeapFromPerfData(*perf);
  FUZZ_CHECK(heap.has_value() == has_capacity);

  auto gc = memtrimd::jvm::GcFromPerfData(*perf);
  if (perf->entries.count("sun.gc.cause") && perf->String("sun.gc.cause")) {
    FUZZ_CHECK(gc.has_value());
  }
  if (gc) {
    FUZZ_CHECK(gc->collectors.size() <= 16);
    for (const auto& c : gc->collectors) FUZZ_CHECK(c.seconds >= 0);
    auto same = memtrimd::jvm::GcRatesBetween(*gc, *gc, 1.0);
    FUZZ_CHECK(same.has_value() && same->per_second == 0 && same->time_ratio == 0);
    FUZZ_CHECK(!memtrimd::jvm::GcRatesBetween(*gc, *gc, 0.5).has_value());
  }

  auto again = ParsePerfData(Format(*perf));
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->major == perf->major && again->minor == perf->minor &&
             again->accessible == perf->accessible);
  FUZZ_CHECK(again->entries == perf->entries);
  auto heap_again = HeapFromPerfData(*again);
  FUZZ_CHECK(heap.has_value() == heap_again.has_value());
  if (heap) {
    FUZZ_CHECK(heap->committed_bytes == heap_again->committed_bytes &&
               heap->used_bytes == heap_again->used_bytes &&
               heap->max_bytes == heap_again->max_bytes);
  }
  return 0;
}

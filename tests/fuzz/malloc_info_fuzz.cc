// Fuzz target: glibc malloc_info(3) XML, from the JVM's
// System.native_heap_info and from the preload agent (jvm::ParseMallocInfo).
//
// Invariants: arena numbers are non-negative; the result written back as
// glibc's XML (one <heap> per arena, the summary after the last one; an
// arena's whole free pages as <size from="4144"> entries) parses to
// the same result.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/jvm/malloc_info.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using memtrimd::jvm::MallocArena;
using memtrimd::jvm::MallocInfo;

std::string N(uint64_t v) { return std::to_string(v); }

std::string Format(const MallocInfo& m) {
  std::string out = "<malloc version=\"1\">\n";
  for (const MallocArena& a : m.arenas) {
    out += "<heap nr=\"" + std::to_string(a.nr) + "\">\n<sizes>\n";
    // One chunk of at least a page + 48 bytes gives its size less 4128; a
    // value within 4128 of the maximum needs a second entry for the rest.
    constexpr uint64_t kLoss = 4128, kMax = ~uint64_t{0};
    uint64_t pages = a.bin_pages_bytes;
    while (pages != 0) {
      const uint64_t part = std::min(pages, kMax - kLoss);
      out += "  <size from=\"4144\" to=\"4144\" total=\"" + N(part + kLoss) + "\" count=\"1\"/>\n";
      pages -= part;
    }
    out += "  <unsorted from=\"32\" to=\"4000\" total=\"64\" count=\"2\"/>\n";
    out += "</sizes>\n";
    out += "<total type=\"fast\" count=\"0\" size=\"" + N(a.fast_bytes) + "\"/>\n";
    out += "<total type='rest' count='1' size='" + N(a.rest_bytes) + "'/>\n";
    out += "<system type=\"current\" size=\"" + N(a.system_current) + "\"/>\n";
    out += "<system type=\"max\" size=\"" + N(a.system_max) + "\"/>\n";
    if (a.subheaps) out += "<aspace type=\"subheaps\" size=\"" + N(*a.subheaps) + "\"/>\n";
    out += "<aspace type=\"total\" size=\"" + N(a.aspace_total) + "\"/>\n";
    out += "<aspace type=\"mprotect\" size=\"" + N(a.aspace_mprotect) + "\"/>\n";
    out += "</heap>\n";
  }
  out += "<total type=\"fast\" count=\"0\" size=\"" + N(m.total_fast_bytes) + "\"/>\n";
  out += "<total type=\"rest\" count=\"0\" size=\"" + N(m.total_rest_bytes) + "\"/>\n";
  out += "<total type=\"mmap\" count=\"" + N(m.total_mmap_count) + "\" size=\"" +
         N(m.total_mmap_bytes) + "\"/>\n";
  out += "<system type=\"current\" size=\"" + N(m.system_current) + "\"/>\n";
  out += "<system type=\"max\" size=\"" + N(m.system_max) + "\"/>\n";
  out += "<aspace type=\"total\" size=\"" + N(m.aspace_total) + "\"/>\n";
  out += "<aspace type=\"mprotect\" size=\"" + N(m.aspace_mprotect) + "\"/>\n";
  out += "</malloc>\n";
  return out;
}

bool Same(const MallocArena& a, const MallocArena& b) {
  return a.nr == b.nr && a.fast_bytes == b.fast_bytes && a.rest_bytes == b.rest_bytes &&
         a.system_current == b.system_current && a.system_max == b.system_max &&
         a.aspace_total == b.aspace_total && a.aspace_mprotect == b.aspace_mprotect &&
         a.subheaps == b.subheaps && a.bin_pages_bytes == b.bin_pages_bytes;
}

bool Same(const MallocInfo& a, const MallocInfo& b) {
  if (a.arenas.size() != b.arenas.size()) return false;
  for (std::size_t i = 0; i < a.arenas.size(); ++i) {
    if (!Same(a.arenas[i], b.arenas[i])) return false;
  }
  return a.total_fast_bytes == b.total_fast_bytes && a.total_rest_bytes == b.total_rest_bytes &&
         a.total_mmap_bytes == b.total_mmap_bytes && a.total_mmap_count == b.total_mmap_count &&
         a.system_current == b.system_current && a.system_max == b.system_max &&
         a.aspace_total == b.aspace_total && a.aspace_mprotect == b.aspace_mprotect;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using memtrimd::jvm::ParseMallocInfo;
  auto info = ParseMallocInfo(memtrimd::fuzz::AsText(data, size));
  if (!info.ok()) return 0;
  for (const MallocArena& a : info->arenas) FUZZ_CHECK(a.nr >= 0);
  auto again = ParseMallocInfo(Format(*info));
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(Same(*again, *info));
  return 0;
}

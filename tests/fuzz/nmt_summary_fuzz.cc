// Fuzz target: `VM.native_memory summary` (jvm::ParseNmtSummary).
//
// Invariants: "not enabled" carries no numbers; every category can be
// found by its name; the summary written back in JDK 17's scale=B layout
// parses to the same summary (totals, categories in order, and each
// category's malloc/mmap/arena details).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "collectors/jvm/nmt_summary.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using memtrimd::jvm::NmtCategory;
using memtrimd::jvm::NmtSummary;

std::string Num(const std::optional<uint64_t>& v) { return v ? std::to_string(*v) : ""; }

std::string Format(const NmtSummary& s) {
  if (!s.enabled) return "Native memory tracking is not enabled\n";
  std::string out = "\nNative Memory Tracking:\n\n";
  out += "Total: reserved=" + std::to_string(s.total_reserved) +
         ", committed=" + std::to_string(s.total_committed) + "\n";
  if (s.total_malloc_bytes) out += "       malloc: " + Num(s.total_malloc_bytes) + " #12\n";
  if (s.total_mmap_committed) {
    out += "       mmap:   reserved=1, committed=" + Num(s.total_mmap_committed) + "\n";
  }
  for (const NmtCategory& c : s.categories) {
    out += "\n-" + std::string(17, ' ') + c.name + " (reserved=" + std::to_string(c.reserved) +
           ", committed=" + std::to_string(c.committed) + ")\n";
    // A count without bytes comes from "(malloc=<not a number> #N)".
    if (c.malloc_bytes || c.malloc_count) {
      out += "                            (malloc=" + Num(c.malloc_bytes);
      if (c.malloc_count) out += " #" + Num(c.malloc_count);
      out += ")\n";
    }
    if (c.mmap_reserved || c.mmap_committed) {
      out += "                            (mmap: ";
      if (c.mmap_reserved) out += "reserved=" + Num(c.mmap_reserved);
      if (c.mmap_reserved && c.mmap_committed) out += ", ";
      if (c.mmap_committed) out += "committed=" + Num(c.mmap_committed);
      out += ")\n";
    }
    if (c.arena_bytes) out += "                            (arena=" + Num(c.arena_bytes) + " #3)\n";
    out += " \n";
  }
  return out;
}

bool Same(const NmtCategory& a, const NmtCategory& b) {
  return a.name == b.name && a.reserved == b.reserved && a.committed == b.committed &&
         a.malloc_bytes == b.malloc_bytes && a.malloc_count == b.malloc_count &&
         a.mmap_reserved == b.mmap_reserved && a.mmap_committed == b.mmap_committed &&
         a.arena_bytes == b.arena_bytes;
}

bool Same(const NmtSummary& a, const NmtSummary& b) {
  if (a.enabled != b.enabled || a.total_reserved != b.total_reserved ||
      a.total_committed != b.total_committed || a.total_malloc_bytes != b.total_malloc_bytes ||
      a.total_mmap_committed != b.total_mmap_committed ||
      a.categories.size() != b.categories.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.categories.size(); ++i) {
    if (!Same(a.categories[i], b.categories[i])) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto nmt = memtrimd::jvm::ParseNmtSummary(memtrimd::fuzz::AsText(data, size));
  if (!nmt.ok()) return 0;
  const NmtSummary& s = *nmt;
  if (!s.enabled) {
    FUZZ_CHECK(s.categories.empty() && s.total_reserved == 0 && s.total_committed == 0);
  }
  for (const NmtCategory& c : s.categories) {
    FUZZ_CHECK(!c.name.empty());
    const NmtCategory* found = s.Find(c.name);
    FUZZ_CHECK(found != nullptr && found->name == c.name);
  }
  auto again = memtrimd::jvm::ParseNmtSummary(Format(s));
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(Same(*again, s));
  return 0;
}

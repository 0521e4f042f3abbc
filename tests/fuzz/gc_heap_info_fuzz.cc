// Fuzz target: `GC.heap_info` for every collector's layout
// (jvm::ParseGcHeapInfo).
//
// Invariants: an address range has both ends and start <= end; a heap with
// a range and a reserved size, written back as JDK 25's G1 line ("total
// reserved R, committed C, used U [0xS, 0xE)"), and a heap without a range
// or reserved size, written back as ZGC's line, parse to the same numbers.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/jvm/jvm_text.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using memtrimd::jvm::HeapInfo;

bool Same(const HeapInfo& a, const HeapInfo& b) {
  return a.committed_bytes == b.committed_bytes && a.used_bytes == b.used_bytes &&
         a.reserved_bytes == b.reserved_bytes && a.start == b.start && a.end == b.end;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using memtrimd::jvm::ParseGcHeapInfo;
  auto heap = ParseGcHeapInfo(memtrimd::fuzz::AsText(data, size));
  if (!heap.ok()) return 0;
  const HeapInfo& h = *heap;
  FUZZ_CHECK(h.start.has_value() == h.end.has_value());
  if (h.start) FUZZ_CHECK(*h.start <= *h.end);

  std::string text;
  if (h.start && h.reserved_bytes) {
    text = "garbage-first heap   total reserved " + std::to_string(*h.reserved_bytes) +
           "B, committed " + std::to_string(h.committed_bytes) + "B, used " +
           std::to_string(h.used_bytes) + "B [0x" + memtrimd::fuzz::Hex(*h.start) + ", 0x" +
           memtrimd::fuzz::Hex(*h.end) + ")\n region size 1024K, 5 young (5120K)\n";
  } else if (!h.start && !h.reserved_bytes) {
    text = " ZHeap           used " + std::to_string(h.used_bytes) + "B, capacity " +
           std::to_string(h.committed_bytes) + "B, max capacity " +
           std::to_string(h.committed_bytes) + "B\n";
  } else {
    return 0;
  }
  auto again = ParseGcHeapInfo(text);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(Same(*again, h));
  return 0;
}

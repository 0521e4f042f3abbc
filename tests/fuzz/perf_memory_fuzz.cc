// Fuzz target: the walk to a JVM's perf memory (jvm::FindStaticFields,
// LocatePerfMemory, ReadPerfMemory) over a memory image made of the input,
// with the exported globals at its start, as libjvm.so's would be.
//
// Invariants: no read outside the image (MemoryImage refuses it, and the
// walk must end with an error instead); a field found lies at an address
// the table gave; a location read back parses as hsperfdata or fails, and
// is never larger than kMaxPerfMemoryBytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/jvm/perf_memory.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memtrimd::jvm;
  constexpr uint64_t kBase = 0x10000;
  const std::string_view bytes = memtrimd::fuzz::AsText(data, size);
  MemoryImage memory(kBase, bytes);
  VmStructsExports e{kBase, kBase + 8, kBase + 16, kBase + 24, kBase + 32};
  constexpr std::string_view kFields[] = {"_prologue", "_capacity"};
  auto fields = FindStaticFields(memory, e, "PerfMemory", kFields);
  if (fields.ok()) FUZZ_CHECK(fields->size() == 2);
  auto where = LocatePerfMemory(memory, e);
  if (!where.ok()) return 0;
  FUZZ_CHECK(fields.ok() && (*fields)[0] && (*fields)[1]);
  FUZZ_CHECK(where->start != 0 && where->capacity >= 32);
  auto perf = ReadPerfMemory(memory, *where);
  if (perf.ok()) FUZZ_CHECK(perf->entries.size() <= kMaxPerfMemoryBytes / 20);
  return 0;
}

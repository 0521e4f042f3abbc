// Fuzz target: the JVM answer parsers (NMT summary, VM.version, VM.flags,
// VM.system_properties, GC.heap_info, System.trim_native_heap, malloc_info
// XML, hsperfdata). They must never crash on any input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "collectors/jvm/hsperfdata.h"
#include "collectors/jvm/jvm_text.h"
#include "collectors/jvm/malloc_info.h"
#include "collectors/jvm/nmt_summary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memtrimd::jvm;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto nmt = ParseNmtSummary(text);
  if (nmt.ok()) (void)nmt->Find("Other");
  (void)ParseVmVersion(text);
  (void)ParseVersionString(text);
  (void)ParseVmFlags(text);
  (void)ParseSystemProperties(text);
  (void)ParseGcHeapInfo(text);
  (void)ParseTrimOutput(text);
  (void)ParseJvmSize(text);
  (void)ParseMallocInfo(text);
  auto perf = ParsePerfData(text);
  if (perf.ok()) {
    (void)HeapFromPerfData(*perf);
    (void)perf->Long("sun.rt.createVmBeginTime");
  }
  return 0;
}

// glibc's malloc statistics in a sample (collectors/sample.h), as the JVM
// collector or the agent collector read them.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "collectors/jvm/malloc_info.h"

namespace memtrimd {

// Which collector read the statistics: each collector carries only its own
// over between its runs, and after a trim the same one is asked again.
enum class MallocSource { kJvm, kAgent };

// The collector's name: "jvm" or "agent".
inline std::string_view MallocSourceName(MallocSource s) {
  return s == MallocSource::kAgent ? "agent" : "jvm";
}

// glibc's malloc_info, from the JVM (System.native_heap_info, JDK 21+) or
// from the preload agent: one parser, the same metrics.
struct MallocStats {
  jvm::MallocInfo info;
  MallocSource source = MallocSource::kJvm;
  std::chrono::system_clock::time_point read_at{};  // shown
  // Ordered against the last trim on this clock (TargetSample::
  // last_trim_steady): a step of the wall clock cannot misorder the two.
  std::chrono::steady_clock::time_point read_steady{};
  // The target's RSS right after the read (0: not read), to tell whether the
  // statistics and a smaps read are of one moment (the RSS account).
  uint64_t rss_bytes = 0;
};

}  // namespace memtrimd

#include "daemon/analysis/advice.h"

#include "collectors/common/text.h"
#include "daemon/analysis/findings.h"

namespace memtrimd {

std::vector<Advice> AdviseJvm(const TargetSample& s) {
  std::vector<Advice> out;
  if (!s.jvm || !s.jvm->attachable || !s.jvm->version) return out;
  if (s.jvm->settings.count("jdk.nio.maxCachedBufferSize") == 0) {
    std::string text =
        "set -Djdk.nio.maxCachedBufferSize=262144: it is unset, so every thread that reads or "
        "writes a heap buffer through a channel keeps a temporary direct buffer as large as its "
        "largest read, for as long as the thread lives";
    if (auto counts = TempBuffersCountAgainstLimit(s)) {
      text += *counts ? " (on this JDK inside MaxDirectMemorySize)"
                      : " (on this JDK outside MaxDirectMemorySize, inside the container's memory)";
    }
    out.push_back({"nio_cache_unbounded",
                   text + "; nio_cache_unbounded says whether the cache threatens this JVM now"});
  }
  if (auto nmt = s.jvm->settings.find("NativeMemoryTracking");
      nmt != s.jvm->settings.end() && nmt->second == "off") {
    out.push_back({"nmt_off",
                   "start the JVM with -XX:NativeMemoryTracking=summary (it cannot be switched on "
                   "later): with Native Memory Tracking off, native memory cannot be split into "
                   "the JVM's own categories and the memory outside them (JNI, native "
                   "libraries), which is where an RSS that outgrows the heap usually is"});
  }
  if (auto trim = s.jvm->settings.find("TrimNativeHeapInterval"); trim != s.jvm->settings.end()) {
    if (auto ms = text::ParseUint(trim->second); ms && *ms > 0) {
      out.push_back({"jvm_trims_itself",
                     "the JVM trims its own native heap every " + trim->second +
                         " ms (-XX:TrimNativeHeapInterval): memtrimd does not trim it too (skip "
                         "reason jvm_trims_itself) and does not see what those trims give back"});
    }
  }
  return out;
}

}  // namespace memtrimd

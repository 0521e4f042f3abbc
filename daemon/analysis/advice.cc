#include "daemon/analysis/advice.h"

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
  return out;
}

}  // namespace memtrimd

#include "daemon/analysis/direct_callers.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

namespace memtrimd {
namespace {

// The JDK methods that allocate direct memory: DirectByteBuffer.<init>
// (ByteBuffer.allocateDirect; JDK 17's temporary buffers too) and
// Unsafe.allocateMemory (JDK 25's temporary buffers, FFM, Unsafe users).
bool AllocatesDirect(std::string_view method) {
  return method == "java.nio.DirectByteBuffer.<init>" ||
         method == "jdk.internal.misc.Unsafe.allocateMemory" ||
         method == "jdk.internal.misc.Unsafe.allocateMemory0" ||
         method == "sun.misc.Unsafe.allocateMemory";
}

// The temporary buffer cache's allocators (IOUtil's reads and writes
// through a heap buffer, the aligned one for direct I/O).
bool FromTemporaryCache(std::string_view method) {
  return method == "sun.nio.ch.Util.getTemporaryDirectBuffer" ||
         method == "sun.nio.ch.Util.getTemporaryAlignedDirectBuffer";
}

// The kind of direct memory a stack holds; none when it holds none.
std::optional<DirectKind> KindOf(const agent::SiteStack& stack, const agent::SiteProfile& profile) {
  bool direct = false, cache = false;
  for (uint64_t a : stack.addresses) {
    if (!symbols::IsJavaFrame(a)) continue;
    const symbols::Frame* f = agent::FrameOf(a, profile);
    if (f == nullptr) continue;
    direct = direct || AllocatesDirect(f->short_name);
    cache = cache || FromTemporaryCache(f->short_name);
  }
  if (!direct) return std::nullopt;
  return cache ? DirectKind::kTemporaryCache : DirectKind::kDirectBuffer;
}

}  // namespace

std::string_view DirectKindKey(DirectKind kind) {
  return kind == DirectKind::kTemporaryCache ? "temporary_buffer_cache" : "direct_buffers";
}

std::vector<DirectCaller> DirectCallersOf(const agent::SiteProfile& profile) {
  std::map<std::pair<DirectKind, std::string_view>, DirectCaller> by_caller;
  for (const agent::SiteStack& stack : profile.stacks) {
    if (stack.values.live_bytes == 0) continue;
    const std::optional<DirectKind> kind = KindOf(stack, profile);
    if (!kind) continue;
    const symbols::Frame* caller = agent::NamingJavaFrame(stack.addresses, profile);
    if (caller == nullptr) continue;  // KindOf found a Java frame: never
    DirectCaller& c = by_caller[{*kind, caller->short_name}];
    c.kind = *kind;
    c.method = std::string(caller->short_name);
    c.live_bytes += stack.values.live_bytes;
    ++c.stacks;
  }
  std::vector<DirectCaller> out;
  out.reserve(by_caller.size());
  for (auto& [key, c] : by_caller) out.push_back(std::move(c));
  std::stable_sort(out.begin(), out.end(), [](const DirectCaller& a, const DirectCaller& b) {
    if (a.kind != b.kind) return a.kind == DirectKind::kTemporaryCache;
    return a.live_bytes > b.live_bytes;
  });
  return out;
}

}  // namespace memtrimd

// The Java callers holding a JVM's direct memory, read from its sampled
// allocation stacks: what NMT Other and the direct buffer pool cannot say
// (they count bytes, not who asked for them). A stack holds direct memory
// when a Java frame in it is java.nio.DirectByteBuffer.<init> or
// Unsafe.allocateMemory (direct buffers, the temporary buffer cache, FFM
// and Unsafe memory: NMT Other); it is the temporary buffer cache when
// sun.nio.ch.Util.getTemporaryDirectBuffer is among them (a thread's
// channel I/O through a heap buffer, kept in that thread's cache). Each is
// named by the method its site is named by: the first Java frame outside
// the JDK.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/agent/client/site_profile.h"

namespace memtrimd {

enum class DirectKind {
  kTemporaryCache,  // through sun.nio.ch.Util.getTemporaryDirectBuffer
  kDirectBuffer,    // any other: ByteBuffer.allocateDirect, Unsafe, FFM
};

// "temporary_buffer_cache" or "direct_buffers": a data attribute's value.
std::string_view DirectKindKey(DirectKind kind);

struct DirectCaller {
  DirectKind kind = DirectKind::kDirectBuffer;
  std::string method;  // "com.acme.Uploads.compressAll"
  uint64_t live_bytes = 0;
  std::size_t stacks = 0;
};

// The callers of the profile's kept stacks that hold live direct memory,
// the temporary buffer cache first, each kind largest first (ties: name).
std::vector<DirectCaller> DirectCallersOf(const agent::SiteProfile& profile);

}  // namespace memtrimd

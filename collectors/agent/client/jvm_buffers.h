// The agent's "jvm_buffers" answer (collectors/agent/in_target/agent_jvm.c): the JVM's
// BufferPoolMXBean figures for the direct and mapped pools, and the
// per-thread temporary direct buffer cache summed over threads.
#pragma once

#include <string_view>

#include "collectors/common/status.h"
#include "collectors/jvm/jvm_figures.h"

namespace memtrimd::agent {

// Parses the "key=value\n" body. Pure. The six pool keys (direct_count,
// direct_capacity, direct_used, mapped_count, mapped_capacity, mapped_used)
// are required; temp_cache_bytes and temp_cache_buffers are optional but come
// together (the agent leaves both out when it could not walk the threads).
// Unknown keys are ignored (newer agents may add some); a repeated or
// malformed known key, or a body that does not end in '\n' (cut short), is
// kParseError. read_at is left for the caller.
Result<JvmBuffers> ParseJvmBuffers(std::string_view body);

}  // namespace memtrimd::agent

// Fuzz target: the preload agent's "jvm_buffers" body (agent::ParseJvmBuffers).
//
// Invariants: an accepted body ends in a newline (the agent's framing: a body
// without one was cut short); the two temp_cache values are both there or
// both absent; the values written back in the agent's own layout, with an
// unknown key added (as a newer agent may send), parse to the same values;
// the same text without its last newline is refused.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/agent/client/jvm_buffers.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace agent = memtrimd::agent;
  using std::to_string;
  std::string_view body = memtrimd::fuzz::AsText(data, size);

  auto b = agent::ParseJvmBuffers(body);
  if (!b.ok()) return 0;
  FUZZ_CHECK(!body.empty() && body.back() == '\n');
  FUZZ_CHECK(b->temp_cache_bytes.has_value() == b->temp_cache_buffers.has_value());
  std::string text = "direct_count=" + to_string(b->direct.count) +
                     "\ndirect_capacity=" + to_string(b->direct.total_capacity) +
                     "\ndirect_used=" + to_string(b->direct.memory_used) +
                     "\nmapped_count=" + to_string(b->mapped.count) +
                     "\nfuture_key=x\nmapped_capacity=" + to_string(b->mapped.total_capacity) +
                     "\nmapped_used=" + to_string(b->mapped.memory_used) + "\n";
  if (b->temp_cache_bytes) {
    text += "temp_cache_bytes=" + to_string(*b->temp_cache_bytes) +
            "\ntemp_cache_buffers=" + to_string(*b->temp_cache_buffers) + "\n";
  }
  auto again = agent::ParseJvmBuffers(text);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->direct.count == b->direct.count &&
             again->direct.total_capacity == b->direct.total_capacity &&
             again->direct.memory_used == b->direct.memory_used &&
             again->mapped.count == b->mapped.count &&
             again->mapped.total_capacity == b->mapped.total_capacity &&
             again->mapped.memory_used == b->mapped.memory_used &&
             again->temp_cache_bytes == b->temp_cache_bytes &&
             again->temp_cache_buffers == b->temp_cache_buffers);
  FUZZ_CHECK(!agent::ParseJvmBuffers(text.substr(0, text.size() - 1)).ok());
  return 0;
}

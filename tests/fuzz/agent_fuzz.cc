// Fuzz target: the parsers of the preload agent's answers (trim and
// mallinfo2 bodies). They must never crash on any input, and what they
// accept must end in a newline (the agent's own framing).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "collectors/agent/agent_client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memtrimd::agent;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto trim = ParseAgentTrim(text);
  auto info = ParseMallinfo2(text);
  if ((trim.ok() || info.ok()) && text.back() != '\n') std::abort();
  if (trim.ok() && (trim->duration.count() < 0 || trim->result < 0)) std::abort();
  return 0;
}

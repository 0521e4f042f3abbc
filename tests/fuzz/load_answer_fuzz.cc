// Fuzz target: what the JVM's answer to the attach operation "load" means
// (jvm::ParseLoadAnswer).
//
// Invariants: the outcome's text is one non-empty line that is not longer
// than the answer's first lines allow; "loaded" only for an answer that
// holds "return code: 0"; the same answer always means the same.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/jvm/agent_load.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memtrimd::jvm;
  std::string_view bytes = memtrimd::fuzz::AsText(data, size);
  for (int status : {0, -1}) {
    AttachResponse r{status, std::string(bytes)};
    AgentLoadOutcome o = ParseLoadAnswer(r, "/tmp/d/libmemtrimd_agent.so");
    FUZZ_CHECK(!o.text.empty());
    FUZZ_CHECK(o.text.find('\n') == std::string::npos);
    FUZZ_CHECK(o.text.size() <= bytes.size() + 256);
    if (o.Loaded()) FUZZ_CHECK(bytes.find("return code: 0") != std::string_view::npos);
    AgentLoadOutcome again = ParseLoadAnswer(r, "/tmp/d/libmemtrimd_agent.so");
    FUZZ_CHECK(again.result == o.result && again.text == o.text);
  }
  return 0;
}

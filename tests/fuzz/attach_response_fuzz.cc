// Fuzz target: the HotSpot attach protocol's response
// (jvm::ParseAttachResponse): "<decimal status>\n<output>".
//
// Invariants: the status is within +-1000000; the output is exactly what
// follows the first newline; status and output written back parse to the
// same response.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/jvm/attach_protocol.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using memtrimd::jvm::ParseAttachResponse;
  std::string_view bytes = memtrimd::fuzz::AsText(data, size);
  auto r = ParseAttachResponse(bytes);
  if (!r.ok()) return 0;
  FUZZ_CHECK(r->status >= -1000000 && r->status <= 1000000);
  std::size_t nl = bytes.find('\n');
  if (nl == std::string_view::npos) {
    FUZZ_CHECK(r->output.empty());
  } else {
    FUZZ_CHECK(r->output == bytes.substr(nl + 1));
  }
  auto again = ParseAttachResponse(std::to_string(r->status) + "\n" + r->output);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->status == r->status && again->output == r->output);
  return 0;
}

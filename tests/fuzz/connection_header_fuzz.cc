// Fuzz target: the Connection header of a request, input from the network
// (KeepsConnection in daemon/http_server).
//
// Invariants: only a header holding "keep-alive" (any case) keeps the
// connection, whatever the HTTP version; a "keep-alive" option put first or
// last, or among commas and blanks, always keeps it; glued into a longer
// word it does not; without a header only HTTP/1.1 keeps it.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>

#include "daemon/web/http_server.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using memtrimd::KeepsConnection;
  std::string header(memtrimd::fuzz::AsText(data, size));
  for (const char* version : {"1.1", "1.0"}) {
    if (KeepsConnection(header, version)) {
      std::string lower;
      for (char c : header) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      FUZZ_CHECK(lower.find("keep-alive") != std::string::npos);
    }
    FUZZ_CHECK(KeepsConnection("keep-alive, " + header, version));
    FUZZ_CHECK(KeepsConnection(header + ",Keep-Alive", version));
    FUZZ_CHECK(KeepsConnection(header + " \t, KEEP-ALIVE ,", version));
    if (header.find_first_of("kK") == std::string::npos) {
      FUZZ_CHECK(!KeepsConnection("x" + header + "keep-alivex", version));
    }
  }
  // The version is only read without a header.
  FUZZ_CHECK(KeepsConnection(std::nullopt, header) == (header == "1.1"));
  return 0;
}

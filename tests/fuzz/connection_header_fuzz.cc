// Fuzz target: the Connection header of a request, input from the network
// (AsksToClose in daemon/http_server).
//
// Invariants: only a header holding "close" (any case) asks to close; a
// "close" option put first or last, or alone among commas and blanks,
// always does; a word that merely contains "close" does not.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>

#include "daemon/http_server.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using memtrimd::AsksToClose;
  std::string header(memtrimd::fuzz::AsText(data, size));
  if (AsksToClose(header)) {
    std::string lower;
    for (char c : header) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    FUZZ_CHECK(lower.find("close") != std::string::npos);
  }
  FUZZ_CHECK(AsksToClose("close, " + header));
  FUZZ_CHECK(AsksToClose(header + ",Close"));
  FUZZ_CHECK(AsksToClose(header + " \t, CLOSE ,"));
  // Glued to a token character on both sides, "close" is part of a word.
  if (header.find_first_of("cC") == std::string::npos) {
    FUZZ_CHECK(!AsksToClose("x" + header + "closex"));
  }
  return 0;
}

// Fuzz target: the Accept-Encoding header of a /metrics request, input from
// the network (AcceptsGzip in daemon/gzip).
//
// Invariants: only a "gzip" (any case) or "*" coding can accept; the first
// gzip item decides, else the first "*" item, so a header that starts with
// "gzip" or "gzip;q=0.5" accepts and one that starts with "gzip;q=0"
// refuses, whatever follows, and a "*;q=0" first is overridden by a gzip
// item after it.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>

#include "daemon/exposition/gzip.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using memtrimd::AcceptsGzip;
  std::string_view header = memtrimd::fuzz::AsText(data, size);
  bool accepts = AcceptsGzip(header);
  if (accepts) {
    std::string lower;
    for (char c : header) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    FUZZ_CHECK(lower.find("gzip") != std::string::npos || lower.find('*') != std::string::npos);
  }
  FUZZ_CHECK(AcceptsGzip("gzip, " + std::string(header)));
  FUZZ_CHECK(AcceptsGzip("GZip;q=0.5," + std::string(header)));
  FUZZ_CHECK(!AcceptsGzip("gzip;q=0, " + std::string(header)));
  FUZZ_CHECK(AcceptsGzip("*;q=0, gzip, " + std::string(header)));
  // Without a gzip item of its own, a gzip item appended decides.
  if (header.find_first_of("gG") == std::string_view::npos) {
    FUZZ_CHECK(AcceptsGzip(std::string(header) + ", gzip"));
  }
  return 0;
}

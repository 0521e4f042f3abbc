// Fuzz target: the command line (input split at NUL bytes into argv), the
// duration and size parsers, and Accept-Encoding negotiation.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/flags.h"
#include "daemon/gzip.h"
#include "daemon/units.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memtrimd;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)ParseDuration(text);
  (void)ParseByteSize(text);
  (void)AcceptsGzip(text);
  std::vector<std::string> args{"memtrimd"};
  std::string cur;
  for (char c : text) {
    if (c == '\0') {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) args.push_back(cur);
  // --help/--version only print; keep the run quiet and short.
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  (void)ParseCommandLine(static_cast<int>(argv.size()), argv.data());
  return 0;
}

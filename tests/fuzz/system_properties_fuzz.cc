// Fuzz target: `VM.system_properties` (jvm::ParseSystemProperties), the
// java.util.Properties format.
//
// Invariants: it never fails (documented); the map written back with
// Properties.store-style escaping parses to the same map (keys and values
// are bytes: \uXXXX was decoded to UTF-8 on the way in and UTF-8 is kept
// as is on the way back).
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/jvm/jvm_text.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

// Escapes what the parser would otherwise read as structure: the
// backslash, line ends, blanks, and in keys the separators and comment
// starters.
std::string Escape(const std::string& s, bool key) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\f':
        out += "\\f";
        break;
      case ' ':
        out += "\\ ";
        break;
      case '=':
      case ':':
      case '#':
      case '!':
        if (key) out += '\\';
        out += c;
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using memtrimd::jvm::ParseSystemProperties;
  auto props = ParseSystemProperties(memtrimd::fuzz::AsText(data, size));
  FUZZ_CHECK(props.ok());
  std::string text = "#Fri Nov 29 22:34:00 UTC 2026\n";
  for (const auto& [key, value] : *props) {
    text += Escape(key, true) + "=" + Escape(value, false) + "\n";
  }
  auto again = ParseSystemProperties(text);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(*again == *props);
  return 0;
}

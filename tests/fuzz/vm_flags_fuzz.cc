// Fuzz target: `VM.flags` (jvm::ParseVmFlags).
//
// Invariants: a success holds at least one flag; names are non-empty and
// names and values hold no blank (space, tab, CR, LF); the flags written back ("-XX:+Name" for
// true,
// "-XX:-Name" for false, "-XX:Name=Value" otherwise) parse to the same map.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/jvm/jvm_text.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using memtrimd::jvm::ParseVmFlags;
  auto flags = ParseVmFlags(memtrimd::fuzz::AsText(data, size));
  if (!flags.ok()) return 0;
  FUZZ_CHECK(!flags->empty());
  std::string text;
  for (const auto& [name, value] : *flags) {
    FUZZ_CHECK(!name.empty());
    FUZZ_CHECK(name.find_first_of(" \t\r\n") == std::string::npos);
    FUZZ_CHECK(value.find_first_of(" \t\r\n") == std::string::npos);
    // A name with '=' can only come from the +/- form.
    if (value == "true") {
      text += "-XX:+" + name + " ";
    } else if (value == "false") {
      text += "-XX:-" + name + " ";
    } else {
      FUZZ_CHECK(name.find('=') == std::string::npos);
      text += "-XX:" + name + "=" + value + " ";
    }
  }
  text += "\n";
  auto again = ParseVmFlags(text);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(*again == *flags);
  return 0;
}

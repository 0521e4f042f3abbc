// Fuzz target: `VM.version` (jvm::ParseVmVersion) and version strings
// (jvm::ParseVersionString).
//
// Invariants: numbers are non-negative; `full` is one non-empty word (no
// space, tab, CR or LF);
// the version line written back ("<vm_name> version <full> ...", plus a
// "JDK" line) gives the same name and full version; the numbers written back as a version string
// ("F.I.U", or "1.F.0_U" in the legacy scheme) give the same numbers.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/common/text.h"
#include "collectors/jvm/jvm_text.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using memtrimd::jvm::JvmVersion;
using memtrimd::jvm::ParseVersionString;

void CheckNumbers(const JvmVersion& v) {
  FUZZ_CHECK(v.feature >= 0 && v.interim >= 0 && v.update >= 0);
  // ParseVersionString reads "1.x" as the legacy scheme, where interim is 0.
  std::string text = v.feature == 1 ? "1.1.0_" + std::to_string(v.update)
                                    : std::to_string(v.feature) + "." + std::to_string(v.interim) +
                                          "." + std::to_string(v.update) + "+7-LTS";
  if (v.feature == 1) FUZZ_CHECK(v.interim == 0);
  auto again = ParseVersionString(text);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->feature == v.feature && again->interim == v.interim &&
             again->update == v.update);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = memtrimd::fuzz::AsText(data, size);

  auto plain = ParseVersionString(text);
  if (plain.ok()) {
    FUZZ_CHECK(plain->full == memtrimd::text::Trim(text));
    CheckNumbers(*plain);
  }

  auto v = memtrimd::jvm::ParseVmVersion(text);
  if (!v.ok()) return 0;
  FUZZ_CHECK(!v->full.empty());
  FUZZ_CHECK(v->full.find_first_of(" \t\r\n") == std::string::npos);
  CheckNumbers(*v);
  // With a "JDK" line: the numbers may have come from one, so `full` need
  // not start with a number.
  auto again =
      memtrimd::jvm::ParseVmVersion(v->vm_name + " version " + v->full + " (build)\nJDK 17.0.15\n");
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->vm_name == v->vm_name && again->full == v->full);
  return 0;
}

// Fuzz target: C++ names demangled within bounds (symbols::Demangle,
// ShortFunctionName).
//
// Invariants: a name that is not "_Z...", or is longer than
// kMaxMangledBytes, comes back unchanged; a demangled name is at most
// kMaxDemangledBytes and holds no NUL; the short name is a part of the
// demangled one, no longer than it, and the same again when shortened
// once more only if it has no parameter list left.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/symbols/demangle.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using memtrimd::symbols::Demangle;
  using memtrimd::symbols::kMaxDemangledBytes;
  using memtrimd::symbols::kMaxMangledBytes;
  using memtrimd::symbols::ShortFunctionName;
  const std::string_view name = memtrimd::fuzz::AsText(data, size);
  const std::string demangled = Demangle(name);
  if (!name.starts_with("_Z") || name.size() > kMaxMangledBytes) FUZZ_CHECK(demangled == name);
  if (demangled != name) {
    FUZZ_CHECK(!demangled.empty() && demangled.size() <= kMaxDemangledBytes);
    FUZZ_CHECK(demangled.find('\0') == std::string::npos);
  }
  // Any text, demangled or not.
  for (std::string_view text : {std::string_view(demangled), name}) {
    const std::string shorter = ShortFunctionName(text);
    FUZZ_CHECK(shorter.size() <= text.size());
    FUZZ_CHECK(text.find(shorter) != std::string_view::npos);
  }
  return 0;
}

// Fuzz target: an ELF file's build id, loads and functions
// (elf::ReadElfFunctions, ReadElfIdentity, ElfFunctions::Find).
//
// Invariants: every read is inside the image and at most 64 KiB, and all
// together within max_bytes; functions are sorted, of size > 0, their
// names non-empty slices of the pool; Find answers an address with a
// function that covers it, and finds each function's first byte (itself
// or one at the same place); the identity alone has the same build id and
// loads; the build id is lower-case hex.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/elf/elf_symbols.h"
#include "tests/fuzz/checked_elf_reader.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using CheckedReader = memtrimd::fuzz::CheckedElfReader;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using memtrimd::elf::ElfFunction;
  using memtrimd::elf::ReadElfFunctions;
  using memtrimd::elf::ReadElfIdentity;
  std::string_view bytes = memtrimd::fuzz::AsText(data, size);
  const std::size_t cap = 4 * size + 4096;
  CheckedReader reader(bytes, cap);
  auto elf = ReadElfFunctions(reader, cap);
  if (!elf.ok()) {
    FUZZ_CHECK(elf.status().message().find('\n') == std::string::npos);
    return 0;
  }
  FUZZ_CHECK(elf->build_id.find_first_not_of("0123456789abcdef") == std::string::npos);
  FUZZ_CHECK(elf->build_id.size() % 2 == 0);
  for (std::size_t i = 0; i < elf->functions.size(); ++i) {
    const ElfFunction& f = elf->functions[i];
    FUZZ_CHECK(f.size > 0 && f.name_size > 0);
    FUZZ_CHECK(uint64_t{f.name_offset} + f.name_size <= elf->names.size());
    if (i > 0) FUZZ_CHECK(elf->functions[i - 1].value <= f.value);
    const ElfFunction* at = elf->Find(f.value);
    FUZZ_CHECK(at != nullptr && at->value <= f.value && f.value - at->value < at->size);
    const ElfFunction* inside = elf->Find(f.value + f.size - 1);
    if (inside != nullptr) {
      FUZZ_CHECK(inside->value <= f.value + f.size - 1);
      FUZZ_CHECK(f.value + f.size - 1 - inside->value < inside->size);
    }
  }
  CheckedReader again(bytes, cap);
  auto identity = ReadElfIdentity(again, cap);
  FUZZ_CHECK(identity.ok());
  FUZZ_CHECK(identity->build_id == elf->build_id);
  FUZZ_CHECK(identity->loads.size() == elf->loads.size());
  FUZZ_CHECK(identity->functions.empty());
  return 0;
}

// Fuzz target: ELF symbol tables (elf::DefinedSymbols,
// AllocatorFromSymbols).
//
// Invariants: every read is inside the image, at most 64 KiB, and all reads
// together stay within max_bytes; the answer is a subset of the wanted
// names, in their order, each once; the chunk size changes nothing; the
// bytes one run read are exactly enough (that budget gives the same answer,
// one byte less is kTooLarge); and an accepted image defines exactly the
// names a plain whole-table reading (below) finds.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/elf/elf_symbols.h"
#include "tests/fuzz/checked_elf_reader.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using memtrimd::Result;
using Names = std::vector<std::string>;

constexpr std::string_view kWanted[] = {
    "mallctl",   "je_mallctl", "MallocExtension_GetNumericProperty",
    "tc_malloc", "mi_malloc",  "main",
    "malloc",    "free",       "_start"};

using CheckedReader = memtrimd::fuzz::CheckedElfReader;

uint64_t Get(std::string_view b, uint64_t at, int size) {
  uint64_t v = 0;
  for (int i = size - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b[at + i]);
  return v;
}

bool Inside(uint64_t offset, uint64_t len, uint64_t size) {
  return offset <= size && len <= size - offset;
}

// The plain reading: whole tables, names looked up by st_name. nullopt
// where the image is not one DefinedSymbols accepts.
std::optional<Names> Reference(std::string_view b) {
  if (b.size() < 64 ||
      b.substr(0, 4) !=
          "\x7f"
          "ELF" ||
      b[4] != 2 || b[5] != 1) {
    return std::nullopt;
  }
  uint64_t shoff = Get(b, 40, 8);
  uint64_t shnum = Get(b, 60, 2);
  std::vector<bool> found(std::size(kWanted), false);
  if (shoff != 0) {
    if (Get(b, 58, 2) != 64 || !Inside(shoff, 64, b.size())) return std::nullopt;
    if (shnum == 0) shnum = Get(b, shoff + 32, 8);
    if (shnum > (b.size() - shoff) / 64) return std::nullopt;
    for (uint64_t i = 0; i < shnum; ++i) {
      uint64_t h = shoff + i * 64;
      uint64_t type = Get(b, h + 4, 4);
      if (type != 2 && type != 11) continue;
      uint64_t off = Get(b, h + 24, 8);
      uint64_t size = Get(b, h + 32, 8);
      uint64_t link = Get(b, h + 40, 4);
      if (Get(b, h + 56, 8) != 24 || size % 24 != 0 || !Inside(off, size, b.size())) {
        return std::nullopt;
      }
      if (link == 0 || link >= shnum || Get(b, shoff + link * 64 + 4, 4) != 3) return std::nullopt;
      uint64_t str_off = Get(b, shoff + link * 64 + 24, 8);
      uint64_t str_size = Get(b, shoff + link * 64 + 32, 8);
      if (!Inside(str_off, str_size, b.size())) return std::nullopt;
      if (str_size > 0 && b[str_off + str_size - 1] != '\0') return std::nullopt;
      std::string_view strtab = b.substr(str_off, str_size);
      for (uint64_t s = off; s < off + size; s += 24) {
        uint64_t name = Get(b, s, 4);
        uint8_t sym_type = static_cast<uint8_t>(b[s + 4]) & 0xf;
        if (name == 0 || name >= str_size || Get(b, s + 6, 2) == 0) continue;
        if (sym_type != 1 && sym_type != 2) continue;
        std::string_view text = strtab.substr(name);
        text = text.substr(0, text.find('\0'));
        for (std::size_t w = 0; w < std::size(kWanted); ++w) {
          if (text == kWanted[w]) found[w] = true;
        }
      }
    }
  }
  Names out;
  for (std::size_t w = 0; w < std::size(kWanted); ++w) {
    if (found[w]) out.emplace_back(kWanted[w]);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using memtrimd::ErrorCode;
  using memtrimd::elf::AllocatorFromSymbols;
  using memtrimd::elf::DefinedSymbols;
  using memtrimd::elf::detail::DefinedSymbolsChunked;
  std::string_view bytes = memtrimd::fuzz::AsText(data, size);
  const std::size_t cap = 4 * size + 4096;
  CheckedReader reader(bytes, cap);
  auto names = DefinedSymbols(reader, kWanted, cap);
  if (!names.ok()) {
    FUZZ_CHECK(names.status().message().find('\n') == std::string::npos);
  } else {
    std::size_t next = 0;  // a subset of kWanted, in its order, each once
    for (const std::string& n : *names) {
      while (next < std::size(kWanted) && kWanted[next] != n) ++next;
      FUZZ_CHECK(next < std::size(kWanted));
      ++next;
    }
    (void)AllocatorFromSymbols(*names);
  }

  for (std::size_t chunk : {61, 8}) {
    CheckedReader again(bytes, cap);
    auto chunked = DefinedSymbolsChunked(again, kWanted, cap, chunk);
    FUZZ_CHECK(chunked.ok() == names.ok());
    FUZZ_CHECK(chunked.status().code() == names.status().code());
    if (names.ok()) FUZZ_CHECK(*chunked == *names);
  }

  if (names.ok()) {
    CheckedReader exact(bytes, reader.total());
    auto at_cap = DefinedSymbols(exact, kWanted, reader.total());
    FUZZ_CHECK(at_cap.ok() && *at_cap == *names);
    if (reader.total() > 0) {
      CheckedReader less(bytes, reader.total() - 1);
      auto over = DefinedSymbols(less, kWanted, reader.total() - 1);
      FUZZ_CHECK(!over.ok() && over.status().code() == ErrorCode::kTooLarge);
    }
    auto plain = Reference(bytes);
    FUZZ_CHECK(plain.has_value());
    FUZZ_CHECK(*plain == *names);
  }
  return 0;
}

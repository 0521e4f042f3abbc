// Which allocator is linked statically into a target's executable, told
// from the executable's own symbol tables. When jemalloc, tcmalloc or
// mimalloc is linked in (a static archive, or `gcc -static`), /proc/<pid>/maps
// shows no allocator library; the allocator's public API, defined in the
// executable, still does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/allocator.h"
#include "collectors/common/status.h"
#include "collectors/common/target.h"

namespace memtrimd::elf {

// Where the ELF bytes come from: a file (StaticAllocator) or memory (tests,
// the fuzz target). The parser asks only for ranges inside size(), so a
// reader needs no bounds logic of its own beyond a short read.
class ElfReader {
 public:
  virtual ~ElfReader() = default;
  virtual uint64_t size() const = 0;
  // Fills out[0, len) with the bytes at `offset`. Called only with
  // offset + len <= size().
  virtual Status Read(uint64_t offset, std::size_t len, char* out) const = 0;
};

// An ELF image already in memory.
class ElfBytes : public ElfReader {
 public:
  explicit ElfBytes(std::string_view bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  Status Read(uint64_t offset, std::size_t len, char* out) const override;

 private:
  std::string_view bytes_;
};

// Pure: which of `wanted` the image defines as a FUNC or OBJECT symbol
// (st_shndx != SHN_UNDEF) in a .dynsym or .symtab section, in the order of
// `wanted`, each once. A name the executable only imports (undefined) does
// not count: a dynamically linked allocator is told from maps instead.
//
// Reads only the ELF header, the section headers, the symbol tables and
// their string tables, in chunks of at most 64 KiB, and never more than
// `max_bytes` in total (kTooLarge beyond). Errors: kInvalidArgument when the
// image is not a 64-bit little-endian ELF file (a 32-bit or big-endian
// program is not malformed, just not read here); kParseError when a header,
// offset, size, link or name index points outside the file or its table.
// An image without section headers (or without symbol tables) defines
// nothing.
Result<std::vector<std::string>> DefinedSymbols(const ElfReader& read,
                                                std::span<const std::string_view> wanted,
                                                std::size_t max_bytes);

// Pure: st_value of each of `wanted` as the image's .dynsym defines it (a
// FUNC or OBJECT symbol, not undefined), in the order of `wanted`; nullopt
// for a name it does not export. For a shared object the value is the
// symbol's address relative to where the object is loaded. Reads and
// fails as DefinedSymbols does, .dynsym and its string table only.
Result<std::vector<std::optional<uint64_t>>> ExportedSymbolValues(
    const ElfReader& read, std::span<const std::string_view> wanted, std::size_t max_bytes);

// ExportedSymbolValues of an open file (read with pread, at most 16 MiB of
// symbol tables); errors name `path`.
Result<std::vector<std::optional<uint64_t>>> ExportedSymbolValuesOfFile(
    int fd, const std::string& path, std::span<const std::string_view> wanted);

// One function of a symbol table: [value, value + size) in the image's
// virtual addresses. The name is `names[name_offset, + name_size)` of the
// ElfFunctions that holds it (one pool, not a string per function: a large
// program has a hundred thousand).
struct ElfFunction {
  uint64_t value = 0;
  uint64_t size = 0;
  uint32_t name_offset = 0;
  uint32_t name_size = 0;
};

// A PT_LOAD segment: file bytes [offset, offset + file_size) are mapped at
// virtual address vaddr. A file offset (what /proc/<pid>/maps gives) turns
// into a symbol's address through these.
struct ElfLoad {
  uint64_t offset = 0;
  uint64_t vaddr = 0;
  uint64_t file_size = 0;
};

// What symbolisation needs of one ELF file.
struct ElfFunctions {
  enum class Source : uint8_t { kNone, kSymtab, kDynsym };
  std::string build_id;  // NT_GNU_BUILD_ID in lower-case hex; "" when none
  std::vector<ElfLoad> loads;
  Source source = Source::kNone;
  bool from_debug_file = false;  // the functions are a debug file's (symbols/target_elf.h)
  // Why no debug file gave the functions of a file without .symtab, when
  // one was looked for (symbols/target_elf.h); "" otherwise.
  std::string debug_file_missing;
  std::vector<ElfFunction> functions;  // sorted by value, then by size (larger first)
  std::string names;

  std::string_view name(const ElfFunction& f) const {
    return std::string_view(names).substr(f.name_offset, f.name_size);
  }
  // The function whose [value, value + size) holds `vaddr`: the nearest
  // preceding one that covers it (a symbol of size 0 covers nothing);
  // nullptr when none does.
  const ElfFunction* Find(uint64_t vaddr) const;
  // The virtual address a file offset is loaded at; nullopt when no PT_LOAD
  // segment holds it.
  std::optional<uint64_t> VaddrOfOffset(uint64_t file_offset) const;
  // Bytes held (for a cache's size cap).
  std::size_t MemoryBytes() const;
};

// Pure: the build id (PT_NOTE segments, else SHT_NOTE sections) and
// PT_LOAD segments of an image, without its symbols. Reads the headers and
// notes only, within `max_bytes`; errors as DefinedSymbols.
Result<ElfFunctions> ReadElfIdentity(const ElfReader& read, std::size_t max_bytes);

// Pure: ReadElfIdentity plus every defined FUNC (and GNU_IFUNC) symbol of
// size > 0, from .symtab when the image has one (a superset), else from
// .dynsym (what a stripped file keeps). Reads as DefinedSymbols does,
// never more than `max_bytes` in total; the string table is read whole.
Result<ElfFunctions> ReadElfFunctions(const ElfReader& read, std::size_t max_bytes);

// ReadElfFunctions (or ReadElfIdentity, without symbols) of an open regular
// file, read with pread; errors name `path`.
Result<ElfFunctions> ReadElfFunctionsOfFile(int fd, const std::string& path, bool with_symbols,
                                            std::size_t max_bytes);

namespace detail {
// DefinedSymbols with a chosen chunk size (>= 1), so tests can put chunk
// boundaries inside names and symbols.
Result<std::vector<std::string>> DefinedSymbolsChunked(const ElfReader& read,
                                                       std::span<const std::string_view> wanted,
                                                       std::size_t max_bytes,
                                                       std::size_t chunk_bytes);
}  // namespace detail

// The symbol names StaticAllocator looks for (the public API of each
// allocator, as AllocatorFromSymbols reads them).
std::span<const std::string_view> AllocatorApiSymbols();

// The allocator whose API the defined names show: "mallctl" or "je_mallctl"
// -> jemalloc; "MallocExtension_GetNumericProperty" or "tc_malloc" ->
// tcmalloc; "mi_malloc" -> mimalloc; else nullopt. Should one executable
// define two of them, the first in that order wins.
std::optional<Allocator> AllocatorFromSymbols(std::span<const std::string> defined);

// The allocator linked statically into the target's executable
// (<t.proc_dir>/exe), or nullopt when its symbols show none. Reads at most
// 16 MiB of tables with pread: a local file, not the target, so no deadline.
// A stripped executable (strip --strip-all) keeps only .dynsym, which holds
// the allocator's API only when it was linked with -rdynamic (or the API is
// otherwise exported): without it, a static allocator is not found.
Result<std::optional<Allocator>> StaticAllocator(const Target& t);

}  // namespace memtrimd::elf

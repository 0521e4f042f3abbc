#include "collectors/elf/elf_symbols.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "collectors/common/unique_fd.h"

namespace memtrimd::elf {
namespace {

// Sizes and codes of the 64-bit ELF format (elf(5)); spelled out rather
// than taken from <elf.h> so the parser reads the same bytes on any host.
constexpr std::size_t kEhdrSize = 64;
constexpr std::size_t kShdrSize = 64;
constexpr std::size_t kSymSize = 24;
constexpr uint8_t kClass64 = 2;
constexpr uint8_t kDataLsb = 1;
constexpr uint32_t kShtSymtab = 2;
constexpr uint32_t kShtStrtab = 3;
constexpr uint32_t kShtDynsym = 11;
constexpr uint8_t kSttObject = 1;
constexpr uint8_t kSttFunc = 2;
constexpr uint16_t kShnUndef = 0;
constexpr uint32_t kShtNote = 7;
constexpr uint8_t kSttGnuIfunc = 10;
constexpr std::size_t kPhdrSize = 56;
constexpr uint32_t kPtLoad = 1;
constexpr uint32_t kPtNote = 4;
constexpr uint32_t kNtGnuBuildId = 3;
// A note section or segment larger than this holds more than build ids and
// properties: it is not read for one.
constexpr uint64_t kMaxNoteBytes = 64 * 1024;
// Program headers a linked file has: about a dozen.
constexpr uint64_t kMaxProgramHeaders = 4096;
constexpr std::size_t kDefaultChunk = 64 * 1024;
// A linked program has one .dynsym and one .symtab. More than this many
// symbol tables is not a program memtrimd watches, and the list of them is
// held in memory.
constexpr std::size_t kMaxSymbolTables = 16;
// Where one wanted name occurs in a string table (tail sharing lets
// "mallctl" sit inside "je_mallctl" too): a real table holds a name a few
// times. The cap bounds the offsets held for a crafted one.
constexpr std::size_t kMaxOccurrences = 4096;

uint16_t Le16(const char* p) {
  return static_cast<uint16_t>(static_cast<uint8_t>(p[0]) | (static_cast<uint8_t>(p[1]) << 8));
}
uint32_t Le32(const char* p) {
  return static_cast<uint32_t>(Le16(p)) | (static_cast<uint32_t>(Le16(p + 2)) << 16);
}
uint64_t Le64(const char* p) {
  return static_cast<uint64_t>(Le32(p)) | (static_cast<uint64_t>(Le32(p + 4)) << 32);
}

Status Malformed(const std::string& why) { return Status(ErrorCode::kParseError, "ELF: " + why); }

// offset + len inside a file of `size` bytes, without overflow.
bool Inside(uint64_t offset, uint64_t len, uint64_t size) {
  return offset <= size && len <= size - offset;
}

// Every read goes through here: it keeps the total under the budget and
// refuses a range outside the file (the callers check first, with a
// better message; this is the net under them).
class Budget {
 public:
  Budget(const ElfReader& reader, std::size_t max_bytes) : reader_(reader), left_(max_bytes) {}

  Status Read(uint64_t offset, std::size_t len, char* out) {
    if (!Inside(offset, len, reader_.size())) {
      return Malformed("a read of " + std::to_string(len) + " bytes at " + std::to_string(offset) +
                       " is outside the file");
    }
    if (len > left_) {
      return Status(ErrorCode::kTooLarge, "ELF: the symbol tables are larger than the cap of " +
                                              std::to_string(spent_ + left_) + " bytes");
    }
    left_ -= len;
    spent_ += len;
    return reader_.Read(offset, len, out);
  }

 private:
  const ElfReader& reader_;
  std::size_t left_;
  std::size_t spent_ = 0;
};

struct Section {
  uint32_t type = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t link = 0;
  uint64_t addralign = 0;
  uint64_t entsize = 0;
};

Section ParseSection(const char* p) {
  Section s;
  s.type = Le32(p + 4);
  s.offset = Le64(p + 24);
  s.size = Le64(p + 32);
  s.link = Le32(p + 40);
  s.addralign = Le64(p + 48);
  s.entsize = Le64(p + 56);
  return s;
}

// A wanted name as it sits in a string table: followed by its NUL.
struct Needle {
  std::size_t wanted_index = 0;
  std::string text;
  std::vector<uint64_t> offsets;  // sorted: found scanning forward
  bool found = false;
  uint64_t value = 0;  // st_value of the symbol that defines it
};

// Records where each needle occurs in the string table, reading it in
// chunks. Every name ends at a NUL, so only the bytes before each NUL are
// compared (one memchr pass; faster than searching for each name, whose
// first letters are common in C++ names). A name may straddle two chunks:
// the last bytes of one chunk (as many as the longest name) are kept in
// front of the next.
Status FindNames(Budget& budget, const Section& strtab, std::size_t chunk,
                 std::vector<Needle>& needles) {
  for (Needle& n : needles) n.offsets.clear();
  if (strtab.size == 0) return Status::Ok();
  std::size_t longest = 0;  // without its NUL
  for (const Needle& n : needles) longest = std::max(longest, n.text.size() - 1);
  std::string buf;
  std::size_t carried = 0;
  for (uint64_t pos = 0; pos < strtab.size;) {
    std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(chunk, strtab.size - pos));
    buf.resize(carried + n);
    Status st = budget.Read(strtab.offset + pos, n, buf.data() + carried);
    if (!st.ok()) return st;
    uint64_t base = pos - carried;  // table offset of buf[0]
    // NULs in the carried bytes were handled with the last chunk.
    for (const char* nul = static_cast<const char*>(std::memchr(buf.data() + carried, '\0', n));
         nul != nullptr;
         nul = static_cast<const char*>(std::memchr(
             nul + 1, '\0', static_cast<std::size_t>(buf.data() + buf.size() - nul - 1)))) {
      std::size_t end = static_cast<std::size_t>(nul - buf.data());
      for (Needle& needle : needles) {
        if (needle.found) continue;  // in an earlier table already
        std::size_t len = needle.text.size() - 1;
        if (end < len || std::memcmp(buf.data() + end - len, needle.text.data(), len) != 0) {
          continue;
        }
        if (needle.offsets.size() == kMaxOccurrences) {
          return Status(ErrorCode::kTooLarge, "ELF: a string table holds '" +
                                                  needle.text.substr(0, len) + "' more than " +
                                                  std::to_string(kMaxOccurrences) + " times");
        }
        needle.offsets.push_back(base + end - len);
      }
    }
    pos += n;
    if (pos == strtab.size && buf.back() != '\0') {
      // elf(5): a string table ends in NUL, so every name in it ends.
      return Malformed("a string table does not end in NUL");
    }
    std::size_t keep = std::min(buf.size(), longest);
    buf.erase(0, buf.size() - keep);
    carried = keep;
  }
  return Status::Ok();
}

// Marks the needles a defined FUNC or OBJECT symbol of the table names.
Status ScanSymbols(Budget& budget, const Section& symtab, uint64_t strtab_size, std::size_t chunk,
                   std::vector<Needle>& needles) {
  std::size_t per_read = std::max<std::size_t>(1, chunk / kSymSize) * kSymSize;
  std::string buf;
  for (uint64_t pos = 0; pos < symtab.size;) {
    std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(per_read, symtab.size - pos));
    buf.resize(n);
    Status st = budget.Read(symtab.offset + pos, n, buf.data());
    if (!st.ok()) return st;
    for (std::size_t at = 0; at < n; at += kSymSize) {
      const char* sym = buf.data() + at;
      uint32_t name = Le32(sym);
      uint8_t type = static_cast<uint8_t>(sym[4]) & 0xf;
      uint16_t shndx = Le16(sym + 6);
      // 0 is "no name"; any other index must land inside the table.
      if (name != 0 && name >= strtab_size) {
        return Malformed("symbol " + std::to_string((pos + at) / kSymSize) + " has its name at " +
                         std::to_string(name) + ", past its string table of " +
                         std::to_string(strtab_size) + " bytes");
      }
      if ((type != kSttFunc && type != kSttObject) || shndx == kShnUndef) continue;
      for (Needle& needle : needles) {
        if (!needle.found &&
            std::binary_search(needle.offsets.begin(), needle.offsets.end(), uint64_t{name})) {
          needle.found = true;
          needle.value = Le64(sym + 8);
        }
      }
    }
    pos += n;
  }
  return Status::Ok();
}

}  // namespace

Status ElfBytes::Read(uint64_t offset, std::size_t len, char* out) const {
  if (!Inside(offset, len, bytes_.size())) {
    return Status(ErrorCode::kParseError, "ELF: read outside the image");
  }
  std::memcpy(out, bytes_.data() + offset, len);
  return Status::Ok();
}

namespace {

// The ELF header, checked: a 64-bit little-endian ELF file.
Status ReadHeader(Budget& budget, uint64_t file_size, std::array<char, kEhdrSize>& ehdr) {
  std::size_t head = static_cast<std::size_t>(std::min<uint64_t>(file_size, kEhdrSize));
  if (Status st = budget.Read(0, head, ehdr.data()); !st.ok()) return st;
  if (head < 4 || std::memcmp(ehdr.data(),
                              "\x7f"
                              "ELF",
                              4) != 0) {
    return Status(ErrorCode::kInvalidArgument, "not an ELF file");
  }
  if (head < kEhdrSize) {
    return Malformed("cut short: " + std::to_string(head) + " bytes, the header alone is " +
                     std::to_string(kEhdrSize));
  }
  // The symbol table layout is the same for every 64-bit little-endian
  // machine (x86-64, aarch64, ...), so e_machine is not checked.
  if (static_cast<uint8_t>(ehdr[4]) != kClass64) {
    return Status(ErrorCode::kInvalidArgument, "ELF class " +
                                                   std::to_string(static_cast<uint8_t>(ehdr[4])) +
                                                   " is not 64-bit: only 64-bit ELF is read");
  }
  if (static_cast<uint8_t>(ehdr[5]) != kDataLsb) {
    return Status(ErrorCode::kInvalidArgument,
                  "ELF data encoding " + std::to_string(static_cast<uint8_t>(ehdr[5])) +
                      " is not little-endian: only little-endian ELF is read");
  }
  return Status::Ok();
}

// How many section headers there are at e_shoff (not 0), checked to fit.
Result<uint64_t> SectionCount(Budget& budget, uint64_t file_size,
                              const std::array<char, kEhdrSize>& ehdr) {
  const uint64_t shoff = Le64(ehdr.data() + 40);
  const uint16_t shentsize = Le16(ehdr.data() + 58);
  uint64_t shnum = Le16(ehdr.data() + 60);
  if (shentsize != kShdrSize) {
    return Malformed("section header size " + std::to_string(shentsize) + ", not " +
                     std::to_string(kShdrSize));
  }
  if (!Inside(shoff, kShdrSize, file_size)) {
    return Malformed("section headers at " + std::to_string(shoff) + " are past the end (" +
                     std::to_string(file_size) + " bytes)");
  }
  if (shnum == 0) {
    // Extended numbering (elf(5)): 65280 or more sections, the count is
    // section 0's sh_size.
    std::array<char, kShdrSize> shdr{};
    if (Status st = budget.Read(shoff, kShdrSize, shdr.data()); !st.ok()) return st;
    shnum = Le64(shdr.data() + 32);
  }
  if (shnum > (file_size - shoff) / kShdrSize) {
    return Malformed(std::to_string(shnum) + " section headers at " + std::to_string(shoff) +
                     " do not fit in the file (" + std::to_string(file_size) + " bytes)");
  }
  return shnum;
}

// Calls `fn` with each section header in order, read in chunks.
template <typename Fn>
Status ForEachSection(Budget& budget, uint64_t shoff, uint64_t shnum, std::size_t chunk, Fn&& fn) {
  std::string headers;
  const uint64_t per_read = std::max<std::size_t>(1, chunk / kShdrSize);
  for (uint64_t i = 0; i < shnum;) {
    uint64_t count = std::min(per_read, shnum - i);
    headers.resize(static_cast<std::size_t>(count * kShdrSize));
    if (Status st = budget.Read(shoff + i * kShdrSize, headers.size(), headers.data()); !st.ok()) {
      return st;
    }
    for (uint64_t k = 0; k < count; ++k) {
      if (Status st = fn(ParseSection(headers.data() + k * kShdrSize)); !st.ok()) return st;
    }
    i += count;
  }
  return Status::Ok();
}

// A symbol table's shape checked, and the string table its sh_link names.
Result<Section> StringTableOf(Budget& budget, uint64_t file_size, uint64_t shoff, uint64_t shnum,
                              const Section& symtab) {
  if (symtab.entsize != kSymSize) {
    return Malformed("symbol size " + std::to_string(symtab.entsize) + ", not " +
                     std::to_string(kSymSize));
  }
  if (symtab.size % kSymSize != 0 || !Inside(symtab.offset, symtab.size, file_size)) {
    return Malformed("a symbol table of " + std::to_string(symtab.size) + " bytes at " +
                     std::to_string(symtab.offset) + " is not whole symbols inside the file");
  }
  if (symtab.link == 0 || symtab.link >= shnum) {
    return Malformed("a symbol table links section " + std::to_string(symtab.link) + " of " +
                     std::to_string(shnum));
  }
  std::array<char, kShdrSize> shdr{};
  if (Status st = budget.Read(shoff + symtab.link * kShdrSize, kShdrSize, shdr.data()); !st.ok()) {
    return st;
  }
  Section strtab = ParseSection(shdr.data());
  if (strtab.type != kShtStrtab) {
    return Malformed("a symbol table's names are in section " + std::to_string(symtab.link) +
                     ", which is not a string table");
  }
  if (!Inside(strtab.offset, strtab.size, file_size)) {
    return Malformed("a string table of " + std::to_string(strtab.size) + " bytes at " +
                     std::to_string(strtab.offset) + " is outside the file");
  }
  return strtab;
}

// The needles (one per distinct wanted name) marked with the symbol tables'
// definitions: every table, or .dynsym alone (what the image exports).
Result<std::vector<Needle>> FindDefinitions(const ElfReader& read,
                                            std::span<const std::string_view> wanted,
                                            std::size_t max_bytes, std::size_t chunk_bytes,
                                            bool dynsym_only) {
  std::size_t chunk = std::max<std::size_t>(1, chunk_bytes);
  Budget budget(read, max_bytes);
  const uint64_t file_size = read.size();

  std::array<char, kEhdrSize> ehdr{};
  if (Status st = ReadHeader(budget, file_size, ehdr); !st.ok()) return st;

  std::vector<Needle> needles;
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    // A symbol name is non-empty and has no NUL; such a "name" never matches.
    if (wanted[i].empty() || wanted[i].find('\0') != std::string_view::npos) continue;
    bool repeated = false;
    for (const Needle& n : needles) repeated = repeated || wanted[n.wanted_index] == wanted[i];
    if (repeated) continue;
    needles.push_back(Needle{i, std::string(wanted[i]) + '\0', {}, false});
  }

  const uint64_t shoff = Le64(ehdr.data() + 40);
  if (shoff == 0 || needles.empty()) return needles;  // no section headers: no symbol tables
  Result<uint64_t> count = SectionCount(budget, file_size, ehdr);
  if (!count.ok()) return count.status();
  const uint64_t shnum = *count;

  // Symbol tables first (one pass over the headers, in chunks), then each
  // one's string table by sh_link.
  std::vector<Section> tables;
  Status listed = ForEachSection(budget, shoff, shnum, chunk, [&](const Section& s) {
    if (s.type != kShtDynsym && (dynsym_only || s.type != kShtSymtab)) return Status::Ok();
    if (tables.size() == kMaxSymbolTables) {
      return Malformed("more than " + std::to_string(kMaxSymbolTables) + " symbol tables");
    }
    tables.push_back(s);
    return Status::Ok();
  });
  if (!listed.ok()) return listed;

  for (const Section& symtab : tables) {
    Result<Section> linked = StringTableOf(budget, file_size, shoff, shnum, symtab);
    if (!linked.ok()) return linked.status();
    const Section& strtab = *linked;
    if (Status st = FindNames(budget, strtab, chunk, needles); !st.ok()) return st;
    bool any = false;
    for (const Needle& n : needles) any = any || (!n.found && !n.offsets.empty());
    // None of the names still looked for is in this string table: no
    // symbol can name one, so the (larger) symbol table is not read.
    if (!any) continue;
    if (Status st = ScanSymbols(budget, symtab, strtab.size, chunk, needles); !st.ok()) return st;
  }
  return needles;
}

}  // namespace

namespace detail {

Result<std::vector<std::string>> DefinedSymbolsChunked(const ElfReader& read,
                                                       std::span<const std::string_view> wanted,
                                                       std::size_t max_bytes,
                                                       std::size_t chunk_bytes) {
  Result<std::vector<Needle>> needles =
      FindDefinitions(read, wanted, max_bytes, chunk_bytes, false);
  if (!needles.ok()) return needles.status();
  std::vector<std::string> out;
  for (const Needle& n : *needles) {
    if (n.found) out.emplace_back(wanted[n.wanted_index]);
  }
  return out;
}

}  // namespace detail

namespace {

// The NT_GNU_BUILD_ID descriptor of a note area, in hex; "" when absent.
// Names and descriptors are padded to the area's alignment (4, or 8 where
// the linker aligned it so, as for .note.gnu.property).
std::string BuildIdOfNotes(std::string_view notes, uint64_t align) {
  const std::size_t pad = align == 8 ? 8 : 4;
  auto up = [pad](uint64_t n) { return (n + pad - 1) / pad * pad; };
  while (notes.size() >= 12) {
    const uint64_t namesz = Le32(notes.data());
    const uint64_t descsz = Le32(notes.data() + 4);
    const uint32_t type = Le32(notes.data() + 8);
    notes.remove_prefix(12);
    if (up(namesz) > notes.size()) return "";
    std::string_view name = notes.substr(0, namesz);
    notes.remove_prefix(up(namesz));
    if (descsz > notes.size()) return "";
    std::string_view desc = notes.substr(0, descsz);
    notes.remove_prefix(std::min<uint64_t>(up(descsz), notes.size()));
    // GNU build ids are 8 to 20 bytes (uuid, md5, sha1); 64 bounds any.
    if (type == kNtGnuBuildId && name == std::string_view("GNU\0", 4) && !desc.empty() &&
        desc.size() <= 64) {
      static constexpr char kHex[] = "0123456789abcdef";
      std::string hex;
      for (char c : desc) {
        hex += kHex[static_cast<uint8_t>(c) >> 4];
        hex += kHex[static_cast<uint8_t>(c) & 0xf];
      }
      return hex;
    }
  }
  return "";
}

// Reads a note area and returns its build id ("" for none); a note area
// past the file or larger than kMaxNoteBytes is skipped, not an error (the
// symbols are still worth having).
Result<std::string> NoteBuildId(Budget& budget, uint64_t file_size, uint64_t offset, uint64_t size,
                                uint64_t align) {
  if (size == 0 || size > kMaxNoteBytes || !Inside(offset, size, file_size)) return std::string();
  std::string notes(static_cast<std::size_t>(size), '\0');
  if (Status st = budget.Read(offset, notes.size(), notes.data()); !st.ok()) return st;
  return BuildIdOfNotes(notes, align);
}

// The identity (build id, loads) and, when `with_symbols`, the functions.
Result<ElfFunctions> ReadFunctionsImpl(const ElfReader& read, std::size_t max_bytes,
                                       bool with_symbols) {
  Budget budget(read, max_bytes);
  const uint64_t file_size = read.size();
  std::array<char, kEhdrSize> ehdr{};
  if (Status st = ReadHeader(budget, file_size, ehdr); !st.ok()) return st;
  ElfFunctions out;

  // Program headers: the loads, and PT_NOTE (where the loader and perf find
  // the build id).
  const uint64_t phoff = Le64(ehdr.data() + 32);
  const uint16_t phentsize = Le16(ehdr.data() + 54);
  const uint64_t phnum = Le16(ehdr.data() + 56);
  if (phoff != 0 && phnum != 0) {
    if (phentsize != kPhdrSize) {
      return Malformed("program header size " + std::to_string(phentsize) + ", not " +
                       std::to_string(kPhdrSize));
    }
    if (phnum > kMaxProgramHeaders || !Inside(phoff, phnum * kPhdrSize, file_size)) {
      return Malformed(std::to_string(phnum) + " program headers at " + std::to_string(phoff) +
                       " do not fit in the file (" + std::to_string(file_size) + " bytes)");
    }
    std::string phdrs(static_cast<std::size_t>(phnum * kPhdrSize), '\0');
    if (Status st = budget.Read(phoff, phdrs.size(), phdrs.data()); !st.ok()) return st;
    for (uint64_t i = 0; i < phnum; ++i) {
      const char* p = phdrs.data() + i * kPhdrSize;
      const uint32_t type = Le32(p);
      const uint64_t offset = Le64(p + 8);
      const uint64_t vaddr = Le64(p + 16);
      const uint64_t filesz = Le64(p + 32);
      const uint64_t align = Le64(p + 48);
      if (type == kPtLoad && filesz > 0) out.loads.push_back(ElfLoad{offset, vaddr, filesz});
      if (type == kPtNote && out.build_id.empty()) {
        Result<std::string> id = NoteBuildId(budget, file_size, offset, filesz, align);
        if (!id.ok()) return id.status();
        out.build_id = std::move(id).value();
      }
    }
  }

  const uint64_t shoff = Le64(ehdr.data() + 40);
  if (shoff == 0 || (!with_symbols && !out.build_id.empty())) return out;
  Result<uint64_t> count = SectionCount(budget, file_size, ehdr);
  if (!count.ok()) return count.status();
  const uint64_t shnum = *count;
  std::optional<Section> symtab;
  std::optional<Section> dynsym;
  std::vector<Section> notes;
  Status listed = ForEachSection(budget, shoff, shnum, kDefaultChunk, [&](const Section& s) {
    if (s.type == kShtSymtab && !symtab) symtab = s;
    if (s.type == kShtDynsym && !dynsym) dynsym = s;
    if (s.type == kShtNote && notes.size() < kMaxSymbolTables) notes.push_back(s);
    return Status::Ok();
  });
  if (!listed.ok()) return listed;
  // A file without program headers (a relocatable object, or a debug file
  // whose segments were dropped) still names its build id in a section.
  for (const Section& n : notes) {
    if (!out.build_id.empty()) break;
    Result<std::string> id = NoteBuildId(budget, file_size, n.offset, n.size, n.addralign);
    if (!id.ok()) return id.status();
    out.build_id = std::move(id).value();
  }
  if (!with_symbols) return out;
  const std::optional<Section>& table = symtab ? symtab : dynsym;
  if (!table) return out;
  Result<Section> linked = StringTableOf(budget, file_size, shoff, shnum, *table);
  if (!linked.ok()) return linked.status();
  const Section strtab = *linked;
  if (strtab.size > UINT32_MAX) return Malformed("a string table larger than 4 GiB");
  // The string table whole: names are offsets into it, so a crafted table
  // whose symbols all share one long name costs its size once.
  out.names.resize(static_cast<std::size_t>(strtab.size));
  for (uint64_t pos = 0; pos < strtab.size;) {
    std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(kDefaultChunk, strtab.size - pos));
    if (Status st = budget.Read(strtab.offset + pos, n, out.names.data() + pos); !st.ok()) {
      return st;
    }
    pos += n;
  }
  if (!out.names.empty() && out.names.back() != '\0') {
    return Malformed("a string table does not end in NUL");
  }
  out.source = symtab ? ElfFunctions::Source::kSymtab : ElfFunctions::Source::kDynsym;
  std::string buf;
  const std::size_t per_read = kDefaultChunk / kSymSize * kSymSize;
  for (uint64_t pos = 0; pos < table->size;) {
    std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(per_read, table->size - pos));
    buf.resize(n);
    if (Status st = budget.Read(table->offset + pos, n, buf.data()); !st.ok()) return st;
    for (std::size_t at = 0; at < n; at += kSymSize) {
      const char* sym = buf.data() + at;
      const uint32_t name = Le32(sym);
      const uint8_t type = static_cast<uint8_t>(sym[4]) & 0xf;
      const uint16_t shndx = Le16(sym + 6);
      const uint64_t value = Le64(sym + 8);
      const uint64_t size = Le64(sym + 16);
      if (name != 0 && name >= strtab.size) {
        return Malformed("symbol " + std::to_string((pos + at) / kSymSize) + " has its name at " +
                         std::to_string(name) + ", past its string table of " +
                         std::to_string(strtab.size) + " bytes");
      }
      if ((type != kSttFunc && type != kSttGnuIfunc) || shndx == kShnUndef || size == 0 ||
          name == 0 || value > UINT64_MAX - size) {
        continue;
      }
      const std::size_t len = std::strlen(out.names.c_str() + name);
      if (len == 0) continue;
      out.functions.push_back(ElfFunction{value, size, name, static_cast<uint32_t>(len)});
    }
    pos += n;
  }
  // By address; at one address the larger first, so that the walk back from
  // an address meets the innermost; aliases of one function (malloc and
  // __libc_malloc) in a fixed order, the name with fewer leading
  // underscores met first: the public one.
  auto underscores = [&](const ElfFunction& f) {
    std::string_view n = out.name(f);
    return n.find_first_not_of('_');
  };
  std::sort(out.functions.begin(), out.functions.end(),
            [&](const ElfFunction& a, const ElfFunction& b) {
              if (a.value != b.value) return a.value < b.value;
              if (a.size != b.size) return a.size > b.size;
              std::size_t ua = underscores(a), ub = underscores(b);
              if (ua != ub) return ua > ub;
              return out.name(a) > out.name(b);
            });
  return out;
}

// How far Find walks back past functions that do not cover the address:
// nested or overlapping symbols are a handful at most.
constexpr std::size_t kMaxWalkBack = 16;

}  // namespace

const ElfFunction* ElfFunctions::Find(uint64_t vaddr) const {
  auto it = std::upper_bound(functions.begin(), functions.end(), vaddr,
                             [](uint64_t v, const ElfFunction& f) { return v < f.value; });
  for (std::size_t walked = 0; it != functions.begin() && walked < kMaxWalkBack; ++walked) {
    --it;
    if (vaddr - it->value < it->size) return &*it;
  }
  return nullptr;
}

std::optional<uint64_t> ElfFunctions::VaddrOfOffset(uint64_t file_offset) const {
  for (const ElfLoad& l : loads) {
    if (file_offset >= l.offset && file_offset - l.offset < l.file_size) {
      return l.vaddr + (file_offset - l.offset);
    }
  }
  return std::nullopt;
}

std::size_t ElfFunctions::MemoryBytes() const {
  return sizeof(*this) + build_id.capacity() + names.capacity() + debug_file_missing.capacity() +
         loads.capacity() * sizeof(ElfLoad) + functions.capacity() * sizeof(ElfFunction);
}

Result<ElfFunctions> ReadElfIdentity(const ElfReader& read, std::size_t max_bytes) {
  return ReadFunctionsImpl(read, max_bytes, false);
}

Result<ElfFunctions> ReadElfFunctions(const ElfReader& read, std::size_t max_bytes) {
  return ReadFunctionsImpl(read, max_bytes, true);
}

Result<std::vector<std::optional<uint64_t>>> ExportedSymbolValues(
    const ElfReader& read, std::span<const std::string_view> wanted, std::size_t max_bytes) {
  Result<std::vector<Needle>> needles =
      FindDefinitions(read, wanted, max_bytes, kDefaultChunk, true);
  if (!needles.ok()) return needles.status();
  std::vector<std::optional<uint64_t>> out(wanted.size());
  for (const Needle& n : *needles) {
    if (!n.found) continue;
    for (std::size_t i = 0; i < wanted.size(); ++i) {
      if (wanted[i] == wanted[n.wanted_index]) out[i] = n.value;
    }
  }
  return out;
}

Result<std::vector<std::string>> DefinedSymbols(const ElfReader& read,
                                                std::span<const std::string_view> wanted,
                                                std::size_t max_bytes) {
  return detail::DefinedSymbolsChunked(read, wanted, max_bytes, kDefaultChunk);
}

std::span<const std::string_view> AllocatorApiSymbols() {
  static constexpr std::array<std::string_view, 5> kNames = {
      "mallctl", "je_mallctl", "MallocExtension_GetNumericProperty", "tc_malloc", "mi_malloc"};
  return kNames;
}

std::optional<Allocator> AllocatorFromSymbols(std::span<const std::string> defined) {
  auto has = [&](std::string_view name) {
    return std::find(defined.begin(), defined.end(), name) != defined.end();
  };
  // je_mallctl: jemalloc built with its je_ prefix (as Redis links it).
  if (has("mallctl") || has("je_mallctl")) return Allocator::kJemalloc;
  // tc_malloc is what gperftools' malloc is an alias of; the
  // MallocExtension C API is in tcmalloc_minimal too.
  if (has("MallocExtension_GetNumericProperty") || has("tc_malloc")) return Allocator::kTcmalloc;
  if (has("mi_malloc")) return Allocator::kMimalloc;
  return std::nullopt;
}

namespace {

// The executable through its /proc link: a local file, read with pread.
class FileReader : public ElfReader {
 public:
  FileReader(int fd, uint64_t size, std::string path)
      : fd_(fd), size_(size), path_(std::move(path)) {}
  uint64_t size() const override { return size_; }
  Status Read(uint64_t offset, std::size_t len, char* out) const override {
    std::size_t done = 0;
    while (done < len) {
      ssize_t got = ::pread(fd_, out + done, len - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return Status::FromErrno(errno, "read " + path_);
      // Shorter than fstat said: the file was replaced or cut while read.
      if (got == 0) return Status(ErrorCode::kParseError, path_ + " ended early");
      done += static_cast<std::size_t>(got);
    }
    return Status::Ok();
  }

 private:
  int fd_;
  uint64_t size_;
  std::string path_;
};

// The symbol tables of a large unstripped program (10 MB of code) are a
// few MiB; beyond this the executable is not read.
constexpr std::size_t kMaxTableBytes = 16 * 1024 * 1024;

}  // namespace

Result<std::vector<std::optional<uint64_t>>> ExportedSymbolValuesOfFile(
    int fd, const std::string& path, std::span<const std::string_view> wanted) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Status::FromErrno(errno, "stat " + path);
  if (!S_ISREG(st.st_mode)) {
    return Status(ErrorCode::kInvalidArgument, path + " is not a regular file");
  }
  FileReader reader(fd, static_cast<uint64_t>(st.st_size), path);
  auto values = ExportedSymbolValues(reader, wanted, kMaxTableBytes);
  if (!values.ok()) return values.status().WithContext(path + ": ");
  return values;
}

Result<ElfFunctions> ReadElfFunctionsOfFile(int fd, const std::string& path, bool with_symbols,
                                            std::size_t max_bytes) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Status::FromErrno(errno, "stat " + path);
  if (!S_ISREG(st.st_mode)) {
    return Status(ErrorCode::kInvalidArgument, path + " is not a regular file");
  }
  FileReader reader(fd, static_cast<uint64_t>(st.st_size), path);
  auto read =
      with_symbols ? ReadElfFunctions(reader, max_bytes) : ReadElfIdentity(reader, max_bytes);
  if (!read.ok()) return read.status().WithContext(path + ": ");
  return read;
}

Result<std::optional<Allocator>> StaticAllocator(const Target& t) {
  const std::string path = t.proc_dir + "/exe";
  // Not O_NOFOLLOW: exe is the kernel's link to the executable (it opens
  // the file the process runs even when its path was deleted or replaced).
  const UniqueFd owned(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  const int fd = owned.get();
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Status::FromErrno(errno, "stat " + path);
  if (!S_ISREG(st.st_mode)) {
    return Status(ErrorCode::kInvalidArgument, path + " is not a regular file");
  }
  FileReader reader(fd, static_cast<uint64_t>(st.st_size), path);
  auto names = DefinedSymbols(reader, AllocatorApiSymbols(), kMaxTableBytes);
  if (!names.ok()) {
    return names.status().WithContext(path + ": ");
  }
  return AllocatorFromSymbols(*names);
}

}  // namespace memtrimd::elf

#include "collectors/procfs/elf_symbols.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

namespace memtrimd::procfs {
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
  uint64_t entsize = 0;
};

Section ParseSection(const char* p) {
  Section s;
  s.type = Le32(p + 4);
  s.offset = Le64(p + 24);
  s.size = Le64(p + 32);
  s.link = Le32(p + 40);
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
  const uint16_t shentsize = Le16(ehdr.data() + 58);
  uint64_t shnum = Le16(ehdr.data() + 60);
  if (shoff == 0 || needles.empty()) return needles;  // no section headers: no symbol tables
  if (shentsize != kShdrSize) {
    return Malformed("section header size " + std::to_string(shentsize) + ", not " +
                     std::to_string(kShdrSize));
  }
  if (!Inside(shoff, kShdrSize, file_size)) {
    return Malformed("section headers at " + std::to_string(shoff) + " are past the end (" +
                     std::to_string(file_size) + " bytes)");
  }
  std::array<char, kShdrSize> shdr{};
  if (shnum == 0) {
    // Extended numbering (elf(5)): 65280 or more sections, the count is
    // section 0's sh_size.
    if (Status st = budget.Read(shoff, kShdrSize, shdr.data()); !st.ok()) return st;
    shnum = Le64(shdr.data() + 32);
  }
  if (shnum > (file_size - shoff) / kShdrSize) {
    return Malformed(std::to_string(shnum) + " section headers at " + std::to_string(shoff) +
                     " do not fit in the file (" + std::to_string(file_size) + " bytes)");
  }

  // Symbol tables first (one pass over the headers, in chunks), then each
  // one's string table by sh_link.
  std::vector<Section> tables;
  std::string headers;
  const uint64_t per_read = std::max<std::size_t>(1, chunk / kShdrSize);
  for (uint64_t i = 0; i < shnum;) {
    uint64_t count = std::min(per_read, shnum - i);
    headers.resize(static_cast<std::size_t>(count * kShdrSize));
    if (Status st = budget.Read(shoff + i * kShdrSize, headers.size(), headers.data()); !st.ok()) {
      return st;
    }
    for (uint64_t k = 0; k < count; ++k) {
      Section s = ParseSection(headers.data() + k * kShdrSize);
      if (s.type != kShtDynsym && (dynsym_only || s.type != kShtSymtab)) continue;
      if (tables.size() == kMaxSymbolTables) {
        return Malformed("more than " + std::to_string(kMaxSymbolTables) + " symbol tables");
      }
      tables.push_back(s);
    }
    i += count;
  }

  for (const Section& symtab : tables) {
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
    if (Status st = budget.Read(shoff + symtab.link * kShdrSize, kShdrSize, shdr.data());
        !st.ok()) {
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
  if (!values.ok()) return Status(values.status().code(), path + ": " + values.status().message());
  return values;
}

Result<std::optional<Allocator>> StaticAllocator(const Target& t) {
  const std::string path = t.proc_dir + "/exe";
  // Not O_NOFOLLOW: exe is the kernel's link to the executable (it opens
  // the file the process runs even when its path was deleted or replaced).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Status::FromErrno(errno, "stat " + path);
  if (!S_ISREG(st.st_mode)) {
    return Status(ErrorCode::kInvalidArgument, path + " is not a regular file");
  }
  FileReader reader(fd, static_cast<uint64_t>(st.st_size), path);
  auto names = DefinedSymbols(reader, AllocatorApiSymbols(), kMaxTableBytes);
  if (!names.ok()) {
    return Status(names.status().code(), path + ": " + names.status().message());
  }
  return AllocatorFromSymbols(*names);
}

}  // namespace memtrimd::procfs

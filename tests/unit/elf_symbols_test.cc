// DefinedSymbols / StaticAllocator against real executables: probe.c
// (tests/elf_probes) with jemalloc and tcmalloc linked in or shared, plain
// glibc, stripped copies, the packaged allocator libraries, a live process;
// and every header field bounds-checked on a real file with one field
// broken at a time.
#include "collectors/elf/elf_symbols.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/unit/fixtures.h"

extern char** environ;

namespace memtrimd::elf {
namespace {

using Names = std::vector<std::string>;

constexpr std::size_t kCap = 16 * 1024 * 1024;

std::string Probe(const std::string& name) { return std::string(ELF_PROBE_DIR) + "/" + name; }

std::string Bytes(const std::string& path) { return test::ReadWhole(path); }

Result<Names> Defined(const std::string& bytes, std::vector<std::string_view> wanted,
                      std::size_t cap = kCap) {
  ElfBytes image(bytes);
  return DefinedSymbols(image, wanted, cap);
}

Result<Names> AllocatorNamesIn(const std::string& path) {
  std::string bytes = Bytes(path);
  ElfBytes image(bytes);
  return DefinedSymbols(image, AllocatorApiSymbols(), kCap);
}

// A /proc/<pid>-like directory whose exe links to `path`, removed at the end.
class ExeLink {
 public:
  explicit ExeLink(const std::string& path) {
    char dir[] = "/tmp/elf_symbols_test.XXXXXX";
    EXPECT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    std::filesystem::create_symlink(path, dir_ + "/exe");
  }
  ~ExeLink() { std::filesystem::remove_all(dir_); }
  Target target() const {
    Target t;
    t.proc_dir = dir_;
    return t;
  }

 private:
  std::string dir_;
};

std::optional<Allocator> StaticAllocatorOf(const std::string& path) {
  ExeLink link(path);
  auto a = StaticAllocator(link.target());
  EXPECT_TRUE(a.ok()) << a.status().message();
  return a.ok() ? *a : std::optional<Allocator>(Allocator::kUnknown);
}

TEST(ElfSymbols, JemallocLinkedStatically) {
  for (const char* name : {"elf_probe_jemalloc_static", "elf_probe_jemalloc_static_rdynamic"}) {
    auto names = AllocatorNamesIn(Probe(name));
    ASSERT_TRUE(names.ok()) << name << ": " << names.status().message();
    EXPECT_EQ(*names, Names{"mallctl"}) << name;
    EXPECT_EQ(StaticAllocatorOf(Probe(name)), Allocator::kJemalloc) << name;
  }
}

// strip --strip-all drops .symtab: -rdynamic put the API in .dynsym too, so
// it is still found; without -rdynamic nothing shows it (the documented
// limitation).
TEST(ElfSymbols, StrippedStaticJemallocFoundOnlyWithRdynamic) {
  auto exported = AllocatorNamesIn(Probe("elf_probe_jemalloc_static_rdynamic.stripped"));
  ASSERT_TRUE(exported.ok()) << exported.status().message();
  EXPECT_EQ(*exported, Names{"mallctl"});
  EXPECT_EQ(StaticAllocatorOf(Probe("elf_probe_jemalloc_static_rdynamic.stripped")),
            Allocator::kJemalloc);

  auto hidden = AllocatorNamesIn(Probe("elf_probe_jemalloc_static.stripped"));
  ASSERT_TRUE(hidden.ok()) << hidden.status().message();
  EXPECT_EQ(*hidden, Names{});
  EXPECT_EQ(StaticAllocatorOf(Probe("elf_probe_jemalloc_static.stripped")), std::nullopt);
}

TEST(ElfSymbols, PlainGlibcProgramHasNone) {
  auto names = AllocatorNamesIn(Probe("elf_probe_glibc"));
  ASSERT_TRUE(names.ok()) << names.status().message();
  EXPECT_EQ(*names, Names{});
  EXPECT_EQ(StaticAllocatorOf(Probe("elf_probe_glibc")), std::nullopt);
}

// Linked with -ltcmalloc_minimal (a shared library): the executable imports
// the API (the names are in its .dynsym, undefined); that is maps' business,
// not a static allocator.
TEST(ElfSymbols, SharedTcmallocIsOnlyImported) {
  std::string bytes = Bytes(Probe("elf_probe_tcmalloc_shared"));
  ASSERT_NE(bytes.find(std::string("MallocExtension_GetNumericProperty") + '\0'),
            std::string::npos);
  ASSERT_NE(bytes.find(std::string("tc_malloc") + '\0'), std::string::npos);
  auto names = Defined(bytes, {AllocatorApiSymbols().begin(), AllocatorApiSymbols().end()});
  ASSERT_TRUE(names.ok()) << names.status().message();
  EXPECT_EQ(*names, Names{});
  EXPECT_EQ(StaticAllocatorOf(Probe("elf_probe_tcmalloc_shared")), std::nullopt);
}

TEST(ElfSymbols, TcmallocInStaticProgram) {
  auto names = AllocatorNamesIn(Probe("elf_probe_tcmalloc_static"));
  ASSERT_TRUE(names.ok()) << names.status().message();
  EXPECT_EQ(*names, (Names{"MallocExtension_GetNumericProperty", "tc_malloc"}));
  EXPECT_EQ(StaticAllocatorOf(Probe("elf_probe_tcmalloc_static")), Allocator::kTcmalloc);
}

// The packaged shared objects define their API in .dynsym.
TEST(ElfSymbols, PackagedAllocatorLibraries) {
  auto je = AllocatorNamesIn(ELF_JEMALLOC_SO);
  ASSERT_TRUE(je.ok()) << je.status().message();
  EXPECT_EQ(*je, Names{"mallctl"});
  EXPECT_EQ(AllocatorFromSymbols(*je), Allocator::kJemalloc);

  auto tc = AllocatorNamesIn(ELF_TCMALLOC_SO);
  ASSERT_TRUE(tc.ok()) << tc.status().message();
  EXPECT_EQ(*tc, (Names{"MallocExtension_GetNumericProperty", "tc_malloc"}));
  EXPECT_EQ(AllocatorFromSymbols(*tc), Allocator::kTcmalloc);

  auto mi = AllocatorNamesIn(ELF_MIMALLOC_SO);
  ASSERT_TRUE(mi.ok()) << mi.status().message();
  EXPECT_EQ(*mi, Names{"mi_malloc"});
  EXPECT_EQ(AllocatorFromSymbols(*mi), Allocator::kMimalloc);
}

// The recorded files under tests/fixtures/elf (the fuzz seeds; README.md
// there says how each was made).
TEST(ElfSymbols, RecordedFixtures) {
  for (const char* name : {"elf/glibc_plain", "elf/tcmalloc_shared"}) {
    auto names = AllocatorNamesIn(test::FixturePath(name));
    ASSERT_TRUE(names.ok()) << name << ": " << names.status().message();
    EXPECT_EQ(*names, Names{}) << name;
  }
  // Only .symtab holds bytes there (.dynsym is SHT_NOBITS).
  auto debug = AllocatorNamesIn(test::FixturePath("elf/jemalloc_static_rdynamic.debug"));
  ASSERT_TRUE(debug.ok()) << debug.status().message();
  EXPECT_EQ(*debug, Names{"mallctl"});
}

// A live process through the real /proc/<pid>/exe: the stripped -rdynamic
// static-jemalloc probe, waiting on its stdin.
TEST(ElfSymbols, LiveProcessThroughProcExe) {
  int in[2];
  int out[2];
  ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  std::string path = Probe("elf_probe_jemalloc_static_rdynamic.stripped");
  std::string wait_flag = "--wait";
  char* argv[] = {path.data(), wait_flag.data(), nullptr};
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, path.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(out[1]);
  ASSERT_EQ(rc, 0) << std::strerror(rc);
  // Ends the probe by its pid however the test leaves.
  struct Reaper {
    pid_t pid;
    int stdin_fd;
    int stdout_fd;
    ~Reaper() {
      ::close(stdin_fd);
      ::close(stdout_fd);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } reaper{pid, in[1], out[0]};

  // Its first line says main ran: exe is the probe, no longer this binary.
  std::string line;
  char c = 0;
  while (::read(out[0], &c, 1) == 1 && c != '\n') line += c;
  ASSERT_EQ(line.rfind("allocated ", 0), 0u) << line;

  Target t;
  t.pid = pid;
  t.proc_dir = "/proc/" + std::to_string(pid);
  auto a = StaticAllocator(t);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(*a, Allocator::kJemalloc);
}

TEST(ElfSymbols, ThisTestProgramHasNone) {
  Target self;
  self.proc_dir = "/proc/self";
  auto a = StaticAllocator(self);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(*a, std::nullopt);
}

TEST(ElfSymbols, MissingExecutableIsNotFound) {
  Target gone;
  gone.proc_dir = "/proc/no-such-pid";
  auto a = StaticAllocator(gone);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), ErrorCode::kNotFound);
}

TEST(ElfSymbols, AllocatorFromSymbols) {
  EXPECT_EQ(AllocatorFromSymbols(Names{"mallctl"}), Allocator::kJemalloc);
  EXPECT_EQ(AllocatorFromSymbols(Names{"je_mallctl"}), Allocator::kJemalloc);
  EXPECT_EQ(AllocatorFromSymbols(Names{"MallocExtension_GetNumericProperty"}),
            Allocator::kTcmalloc);
  EXPECT_EQ(AllocatorFromSymbols(Names{"tc_malloc"}), Allocator::kTcmalloc);
  EXPECT_EQ(AllocatorFromSymbols(Names{"mi_malloc"}), Allocator::kMimalloc);
  EXPECT_EQ(AllocatorFromSymbols(Names{}), std::nullopt);
  EXPECT_EQ(AllocatorFromSymbols(Names{"malloc", "free"}), std::nullopt);
  EXPECT_EQ(AllocatorFromSymbols(Names{"mi_malloc", "tc_malloc", "mallctl"}), Allocator::kJemalloc);
}

// --- what is read, and how much ----------------------------------------------

// Counts what the parser reads, and fails the test on a read outside the file.
class CountingReader : public ElfReader {
 public:
  explicit CountingReader(const std::string& bytes) : image_(bytes) {}
  uint64_t size() const override { return image_.size(); }
  Status Read(uint64_t offset, std::size_t len, char* out) const override {
    EXPECT_LE(offset, size());
    EXPECT_LE(len, size() - offset);
    EXPECT_LE(len, 64u * 1024u);
    total_ += len;
    ++reads_;
    return image_.Read(offset, len, out);
  }
  std::size_t total() const { return total_; }

 private:
  ElfBytes image_;
  mutable std::size_t total_ = 0;
  mutable std::size_t reads_ = 0;
};

TEST(ElfSymbols, ReadsOnlyTheTablesWithinTheCap) {
  std::string bytes = Bytes(Probe("elf_probe_jemalloc_static"));
  CountingReader reader(bytes);
  auto names = DefinedSymbols(reader, AllocatorApiSymbols(), kCap);
  ASSERT_TRUE(names.ok()) << names.status().message();
  EXPECT_EQ(*names, Names{"mallctl"});
  // Header, section headers, .dynsym/.dynstr, .symtab/.strtab: well under
  // the file (code and data are never read).
  EXPECT_LT(reader.total(), bytes.size() / 4);

  CountingReader exact(bytes);
  auto at_cap = DefinedSymbols(exact, AllocatorApiSymbols(), reader.total());
  ASSERT_TRUE(at_cap.ok()) << at_cap.status().message();
  EXPECT_EQ(*at_cap, Names{"mallctl"});

  CountingReader short_by_one(bytes);
  auto over = DefinedSymbols(short_by_one, AllocatorApiSymbols(), reader.total() - 1);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), ErrorCode::kTooLarge);
  EXPECT_LE(short_by_one.total(), reader.total() - 1);
}

// Chunk boundaries inside names and symbols change nothing.
TEST(ElfSymbols, ChunkSizeDoesNotMatter) {
  for (const char* name : {"elf_probe_jemalloc_static", "elf_probe_tcmalloc_static",
                           "elf_probe_jemalloc_static_rdynamic.stripped"}) {
    std::string bytes = Bytes(Probe(name));
    ElfBytes image(bytes);
    auto whole = DefinedSymbols(image, AllocatorApiSymbols(), kCap);
    ASSERT_TRUE(whole.ok()) << whole.status().message();
    for (std::size_t chunk : {1, 5, 24, 25, 64, 1000}) {
      auto chunked = detail::DefinedSymbolsChunked(image, AllocatorApiSymbols(), kCap, chunk);
      ASSERT_TRUE(chunked.ok()) << name << " chunk " << chunk << ": " << chunked.status().message();
      EXPECT_EQ(*chunked, *whole) << name << " chunk " << chunk;
    }
  }
}

TEST(ElfSymbols, WantedOrderEachOnceAndImportsIgnored) {
  // The glibc probe defines main (.symtab) and imports malloc (.dynsym).
  std::string bytes = Bytes(Probe("elf_probe_glibc"));
  auto names = Defined(bytes, {"nope", "malloc", "main", "", "main"});
  ASSERT_TRUE(names.ok()) << names.status().message();
  EXPECT_EQ(*names, Names{"main"});
}

// --- one field broken at a time ------------------------------------------------

uint64_t Get(const std::string& b, std::size_t at, int size) {
  uint64_t v = 0;
  for (int i = size - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b[at + i]);
  return v;
}

void Put(std::string& b, std::size_t at, int size, uint64_t v) {
  for (int i = 0; i < size; ++i) b[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

class ElfFields : public ::testing::Test {
 protected:
  void SetUp() override {
    good_ = Bytes(Probe("elf_probe_glibc"));
    shoff_ = Get(good_, 40, 8);
    shnum_ = Get(good_, 60, 2);
    for (uint64_t i = 0; i < shnum_; ++i) {
      std::size_t at = static_cast<std::size_t>(shoff_ + i * 64);
      if (Get(good_, at + 4, 4) == 2) symtab_ = at;  // SHT_SYMTAB: the one holding main
    }
    ASSERT_NE(symtab_, 0u);
    strtab_ = static_cast<std::size_t>(shoff_ + Get(good_, symtab_ + 40, 4) * 64);
  }

  static Result<Names> Parse(const std::string& bytes) {
    return Defined(bytes, {"main", "malloc"});
  }

  void ExpectError(const std::string& bytes, ErrorCode code, const char* what) {
    auto r = Parse(bytes);
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.status().code(), code) << what << ": " << r.status().message();
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
  }

  std::string good_;
  uint64_t shoff_ = 0;
  uint64_t shnum_ = 0;
  std::size_t symtab_ = 0;  // file offset of .symtab's section header
  std::size_t strtab_ = 0;  // of .strtab's
};

TEST_F(ElfFields, TheUnbrokenFileParses) {
  auto r = Parse(good_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, Names{"main"});
}

TEST_F(ElfFields, NotA64BitLittleEndianElf) {
  ExpectError("", ErrorCode::kInvalidArgument, "empty");
  ExpectError("#!/bin/sh\necho hi\n", ErrorCode::kInvalidArgument, "a script");
  std::string b32 = good_;
  b32[4] = 1;  // ELFCLASS32
  ExpectError(b32, ErrorCode::kInvalidArgument, "32-bit");
  std::string be = good_;
  be[5] = 2;  // ELFDATA2MSB
  ExpectError(be, ErrorCode::kInvalidArgument, "big-endian");
}

TEST_F(ElfFields, HeaderAndSectionHeaders) {
  ExpectError(good_.substr(0, 40), ErrorCode::kParseError, "cut inside the ELF header");
  ExpectError(good_.substr(0, static_cast<std::size_t>(shoff_) + 100), ErrorCode::kParseError,
              "cut inside the section headers");
  std::string b = good_;
  Put(b, 40, 8, good_.size());
  ExpectError(b, ErrorCode::kParseError, "e_shoff at the end");
  Put(b, 40, 8, ~uint64_t{0} - 10);
  ExpectError(b, ErrorCode::kParseError, "e_shoff near 2^64");
  b = good_;
  Put(b, 58, 2, 40);
  ExpectError(b, ErrorCode::kParseError, "e_shentsize 40");
  b = good_;
  Put(b, 60, 2, 0xfeff);
  ExpectError(b, ErrorCode::kParseError, "e_shnum past the file");
}

TEST_F(ElfFields, ExtendedSectionNumberingAndNoSections) {
  std::string b = good_;
  Put(b, 60, 2, 0);                                          // e_shnum 0: ...
  Put(b, static_cast<std::size_t>(shoff_) + 32, 8, shnum_);  // ... count in section 0's sh_size
  auto r = Parse(b);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, Names{"main"});
  Put(b, static_cast<std::size_t>(shoff_) + 32, 8, ~uint64_t{0} / 2);
  ExpectError(b, ErrorCode::kParseError, "extended count past the file");

  b = good_;
  Put(b, 40, 8, 0);  // no section headers at all
  auto none = Parse(b);
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_EQ(*none, Names{});
}

TEST_F(ElfFields, SymbolTableFields) {
  std::string b = good_;
  Put(b, symtab_ + 40, 4, shnum_);
  ExpectError(b, ErrorCode::kParseError, "sh_link past the sections");
  b = good_;
  Put(b, symtab_ + 40, 4, (symtab_ - shoff_) / 64);
  ExpectError(b, ErrorCode::kParseError, "sh_link to itself (not a string table)");
  b = good_;
  Put(b, symtab_ + 56, 8, 16);
  ExpectError(b, ErrorCode::kParseError, "sh_entsize 16");
  b = good_;
  Put(b, symtab_ + 32, 8, Get(good_, symtab_ + 32, 8) + 12);
  ExpectError(b, ErrorCode::kParseError, "half a symbol");
  b = good_;
  Put(b, symtab_ + 32, 8, good_.size() * 24);
  ExpectError(b, ErrorCode::kParseError, "sh_size past the file");
  b = good_;
  Put(b, symtab_ + 24, 8, ~uint64_t{0} - 23);
  ExpectError(b, ErrorCode::kParseError, "sh_offset + sh_size overflows");
}

TEST_F(ElfFields, StringTableFields) {
  std::string b = good_;
  Put(b, strtab_ + 24, 8, good_.size());
  ExpectError(b, ErrorCode::kParseError, "string table at the end of the file");
  b = good_;
  Put(b, strtab_ + 32, 8, Get(good_, strtab_ + 32, 8) - 1);
  ExpectError(b, ErrorCode::kParseError, "string table without its final NUL");
  b = good_;
  // The first named symbol's st_name one past the table.
  std::size_t sym = static_cast<std::size_t>(Get(good_, symtab_ + 24, 8)) + 24;
  Put(b, sym, 4, Get(good_, strtab_ + 32, 8));
  ExpectError(b, ErrorCode::kParseError, "st_name past the string table");
}

TEST_F(ElfFields, TheCapIsTooLarge) {
  auto r = Defined(good_, {"main"}, 100);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kTooLarge);
}

// Linkers share tails of strings: a symbol named "mallctl" may point into
// "je_mallctl". Built by hand: one string table, one symbol pointing there.
TEST(ElfSymbols, NameInsideALongerString) {
  std::string strtab = std::string("\0je_mallctl\0", 12);
  std::string symtab(48, '\0');  // the null symbol, then one
  Put(symtab, 24, 4, 4);         // st_name: "mallctl"
  symtab[24 + 4] = 0x12;         // GLOBAL FUNC
  Put(symtab, 24 + 6, 2, 1);     // st_shndx: defined
  std::string elf(64, '\0');
  std::memcpy(elf.data(),
              "\x7f"
              "ELF\x02\x01\x01",
              7);
  std::size_t str_at = elf.size();
  elf += strtab;
  elf.resize((elf.size() + 7) / 8 * 8, '\0');
  std::size_t sym_at = elf.size();
  elf += symtab;
  std::size_t sh_at = elf.size();
  std::string shdrs(3 * 64, '\0');
  Put(shdrs, 64 + 4, 4, 3);  // [1] SHT_STRTAB
  Put(shdrs, 64 + 24, 8, str_at);
  Put(shdrs, 64 + 32, 8, strtab.size());
  Put(shdrs, 128 + 4, 4, 2);  // [2] SHT_SYMTAB, names in [1]
  Put(shdrs, 128 + 24, 8, sym_at);
  Put(shdrs, 128 + 32, 8, symtab.size());
  Put(shdrs, 128 + 40, 4, 1);
  Put(shdrs, 128 + 56, 8, 24);
  elf += shdrs;
  Put(elf, 40, 8, sh_at);
  Put(elf, 58, 2, 64);
  Put(elf, 60, 2, 3);
  auto r = Defined(elf, {"je_mallctl", "mallctl", "ctl"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, Names{"mallctl"});
  // An undefined symbol (st_shndx 0) and a section symbol do not count.
  std::string undefined = elf;
  Put(undefined, sym_at + 24 + 6, 2, 0);
  EXPECT_EQ(*Defined(undefined, {"mallctl"}), Names{});
  std::string section = elf;
  section[sym_at + 24 + 4] = 0x03;  // LOCAL SECTION
  EXPECT_EQ(*Defined(section, {"mallctl"}), Names{});
  std::string object = elf;
  object[sym_at + 24 + 4] = 0x11;  // GLOBAL OBJECT
  EXPECT_EQ(*Defined(object, {"mallctl"}), Names{"mallctl"});
}

}  // namespace
}  // namespace memtrimd::elf

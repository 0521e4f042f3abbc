// Symbolisation's pure parts: maps texts recorded from real processes
// (tests/fixtures/symbols), the function tables of real ELF files (the
// recorded glibc_plain, and tests/elf_probes' stripped program), Symbolize
// over a recorded maps text, and the cache's size cap. Names checked
// against a live program's own addresses: SymbolizeTest (integration).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/target_fs_ids.h"
#include "collectors/elf/elf_symbols.h"
#include "collectors/procfs/maps.h"
#include "collectors/symbols/symbolize.h"
#include "collectors/symbols/target_elf.h"
#include "tests/unit/fixtures.h"

namespace memtrimd::symbols {
namespace {

using elf::ElfFunctions;
using procfs::FindMapping;
using procfs::MapsEntry;
using procfs::ParseMaps;

constexpr std::size_t kCap = 16u << 20;

TEST(MapsText, ParsesARecordedProgramsMaps) {
  auto maps = ParseMaps(test::ReadFixture("symbols/cat.maps"));
  ASSERT_TRUE(maps.ok()) << maps.status().message();
  ASSERT_EQ(maps->size(), 38u);
  const MapsEntry& text = (*maps)[1];  // 563e2e150000-563e2e155000 r-xp 00002000 fe:00 247134
  EXPECT_EQ(text.start, 0x563e2e150000u);
  EXPECT_EQ(text.end, 0x563e2e155000u);
  EXPECT_EQ(text.offset, 0x2000u);
  EXPECT_EQ(text.dev_major, 0xfeu);
  EXPECT_EQ(text.dev_minor, 0u);
  EXPECT_EQ(text.inode, 247134u);
  EXPECT_TRUE(text.executable);
  EXPECT_EQ(text.path, "/usr/bin/cat");
  EXPECT_TRUE(text.IsFile());
  EXPECT_FALSE((*maps)[0].executable);
  EXPECT_EQ((*maps)[5].path, "[heap]");
  EXPECT_FALSE((*maps)[5].IsFile());
  EXPECT_EQ((*maps)[6].path, "");  // anonymous, its line ends in spaces
  EXPECT_EQ((*maps)[6].inode, 0u);
}

TEST(MapsText, JvmCodeCacheIsAnonymousExecutable) {
  auto maps = ParseMaps(test::ReadFixture("symbols/jdk17.maps"));
  ASSERT_TRUE(maps.ok()) << maps.status().message();
  EXPECT_EQ(maps->size(), 199u);
  int code = 0;
  for (const MapsEntry& m : *maps) {
    if (m.executable && m.inode == 0 && m.path.empty()) ++code;
  }
  EXPECT_EQ(code, 3);  // the code heaps: rwxp, no file
  const MapsEntry* jvm = FindMapping(*maps, 0x7f2f90e51000u + 0x1234);
  ASSERT_NE(jvm, nullptr);
  EXPECT_EQ(jvm->path, "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so");
  EXPECT_EQ(jvm->offset, 0x251000u);
}

TEST(MapsText, FindMappingBoundaries) {
  auto maps = ParseMaps(test::ReadFixture("symbols/cat.maps"));
  ASSERT_TRUE(maps.ok());
  EXPECT_EQ(FindMapping(*maps, 0x563e2e150000u), &(*maps)[1]);
  EXPECT_EQ(FindMapping(*maps, 0x563e2e154fffu), &(*maps)[1]);
  EXPECT_EQ(FindMapping(*maps, 0x563e2e155000u), &(*maps)[2]);
  EXPECT_EQ(FindMapping(*maps, 0x563e2e15a000u), nullptr);  // between cat and [heap]
  EXPECT_EQ(FindMapping(*maps, 0x1000u), nullptr);
  EXPECT_EQ(FindMapping({}, 0x1000u), nullptr);
}

TEST(MapsText, DeletedFileAndBadLines) {
  std::string text = test::ReadFixture("symbols/cat.maps");
  std::string first = text.substr(0, text.find('\n'));
  std::string second =
      text.substr(first.size() + 1, text.find('\n', first.size() + 1) - first.size() - 1);
  auto deleted = ParseMaps(first + " (deleted)\n");
  ASSERT_TRUE(deleted.ok());
  EXPECT_TRUE((*deleted)[0].deleted);
  EXPECT_EQ((*deleted)[0].path, "/usr/bin/cat");
  // Out of order: the kernel never writes it, and FindMapping needs order.
  auto swapped = ParseMaps(second + "\n" + first + "\n");
  EXPECT_EQ(swapped.status().code(), ErrorCode::kParseError);
  for (std::size_t cut : {5u, 14u, 25u, 40u}) {
    auto bad = ParseMaps(first.substr(0, cut) + "\n");
    EXPECT_EQ(bad.status().code(), ErrorCode::kParseError) << first.substr(0, cut);
  }
  auto empty = ParseMaps("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

// The kernel prints a newline in a mapped file's name as "\012" (and
// nothing else of a name escaped): the path is the file's name again, so
// that a neighbour's file "a\012b" is not taken for the mapped "a<newline>b".
TEST(MapsText, NewlineEscapeInAPathIsDecoded) {
  const std::string head = "7f0000000000-7f0000001000 r-xp 00000000 fd:01 42        ";
  auto maps = ParseMaps(head + "/tmp/x/lib\\012evil.so (deleted)\n" +
                        "7f0000001000-7f0000002000 r--p 00000000 fd:01 43   /a\\012\\012b\\01\n" +
                        "7f0000002000-7f0000003000 r--p 00000000 fd:01 44   /back\\slash \\0123\n");
  ASSERT_TRUE(maps.ok()) << maps.status().message();
  ASSERT_EQ(maps->size(), 3u);
  EXPECT_EQ((*maps)[0].path, "/tmp/x/lib\nevil.so");
  EXPECT_TRUE((*maps)[0].deleted);
  EXPECT_EQ((*maps)[1].path, "/a\n\nb\\01");  // a cut escape stays as printed
  EXPECT_EQ((*maps)[2].path, "/back\\slash \n3");
}

// A debug file is opened with the target's filesystem ids: the fourth
// field of Uid: and Gid:, and every group.
TEST(TargetFsIds, ParsedFromStatus) {
  auto ids = ParseFsIds(
      "Name:\tx\nUid:\t1000\t1001\t1002\t1003\nGid:\t20\t21\t22\t23\n"
      "Groups:\t4 27 1000 \n");
  ASSERT_TRUE(ids.ok()) << ids.status().message();
  EXPECT_EQ(ids->fsuid, 1003u);
  EXPECT_EQ(ids->fsgid, 23u);
  EXPECT_EQ(ids->groups, (std::vector<gid_t>{4, 27, 1000}));
  auto none = ParseFsIds("Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\n");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->groups.empty());
  EXPECT_FALSE(ParseFsIds("Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n").ok());
  EXPECT_FALSE(ParseFsIds("Uid:\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\n").ok());
  EXPECT_FALSE(ParseFsIds("Uid:\t0\t0\tx\t0\nGid:\t0\t0\t0\t0\nGroups:\n").ok());
}

// glibc_plain: `nm -S` gives main at 0x10a0, size 0x9e; `readelf -n` its
// build id (tests/fixtures/elf/README.md says how it was made).
TEST(ElfFunctionsTest, SymtabOfARecordedProgram) {
  std::string bytes = test::ReadFixture("elf/glibc_plain");
  elf::ElfBytes image(bytes);
  auto elf = elf::ReadElfFunctions(image, kCap);
  ASSERT_TRUE(elf.ok()) << elf.status().message();
  EXPECT_EQ(elf->build_id, "1732c270e9779969db9614ee0f6eb7f79c247e18");
  EXPECT_EQ(elf->source, ElfFunctions::Source::kSymtab);
  ASSERT_EQ(elf->loads.size(), 4u);
  EXPECT_EQ(elf->VaddrOfOffset(0x1010), 0x1010u);
  EXPECT_EQ(elf->VaddrOfOffset(0x2dd8), 0x3dd8u);  // the data segment: vaddr != offset
  EXPECT_EQ(elf->VaddrOfOffset(0x100000), std::nullopt);
  for (uint64_t at : {0x10a0u, 0x10a0u + 0x9du}) {
    const elf::ElfFunction* f = elf->Find(at);
    ASSERT_NE(f, nullptr) << at;
    EXPECT_EQ(elf->name(*f), "main");
  }
  const elf::ElfFunction* after = elf->Find(0x10a0 + 0x9e);
  EXPECT_TRUE(after == nullptr || elf->name(*after) != "main");
  EXPECT_EQ(elf->Find(0x10), nullptr);  // the ELF header: no function

  auto identity = elf::ReadElfIdentity(image, kCap);
  ASSERT_TRUE(identity.ok());
  EXPECT_EQ(identity->build_id, elf->build_id);
  EXPECT_TRUE(identity->functions.empty());
  EXPECT_EQ(identity->source, ElfFunctions::Source::kNone);

  // A cap too small for the headers is refused, not read in part.
  std::size_t small = 64;
  auto over = elf::ReadElfFunctions(image, small);
  EXPECT_EQ(over.status().code(), ErrorCode::kTooLarge);
}

// A stripped program keeps .dynsym: with -rdynamic its functions are there,
// at the values the exported-symbol reader (another path) gives.
TEST(ElfFunctionsTest, StrippedProgramFallsBackToDynsym) {
  std::string bytes =
      test::ReadWhole(std::string(ELF_PROBE_DIR) + "/elf_probe_jemalloc_static_rdynamic.stripped");
  elf::ElfBytes image(bytes);
  auto elf = elf::ReadElfFunctions(image, kCap);
  ASSERT_TRUE(elf.ok()) << elf.status().message();
  EXPECT_EQ(elf->source, ElfFunctions::Source::kDynsym);
  EXPECT_EQ(elf->build_id.size(), 40u);
  const std::string_view wanted[] = {"mallctl", "main"};
  auto values = elf::ExportedSymbolValues(image, wanted, kCap);
  ASSERT_TRUE(values.ok());
  for (std::size_t i = 0; i < std::size(wanted); ++i) {
    ASSERT_TRUE((*values)[i].has_value()) << wanted[i];
    const elf::ElfFunction* f = elf->Find(*(*values)[i] + 1);
    ASSERT_NE(f, nullptr) << wanted[i];
    EXPECT_EQ(elf->name(*f), wanted[i]);
  }
}

TEST(ElfFunctionsTest, NotElf) {
  elf::ElfBytes image("#!/bin/sh\n");
  EXPECT_EQ(elf::ReadElfFunctions(image, kCap).status().code(), ErrorCode::kInvalidArgument);
}

// Serves glibc_plain for every file mapping, and counts the asks.
class OneFileSource : public ElfSource {
 public:
  explicit OneFileSource(std::shared_ptr<const ElfFunctions> elf) : elf_(std::move(elf)) {}
  Result<std::shared_ptr<const ElfFunctions>> Functions(const MapsEntry& m) override {
    ++asked[m.path];
    if (!elf_) return Status(ErrorCode::kNotFound, "none");
    return elf_;
  }
  std::map<std::string, int> asked;

 private:
  std::shared_ptr<const ElfFunctions> elf_;
};

TEST(Symbolize, FramesOverRecordedMaps) {
  auto maps = ParseMaps(test::ReadFixture("symbols/jdk17.maps"));
  ASSERT_TRUE(maps.ok());
  std::string bytes = test::ReadFixture("elf/glibc_plain");
  elf::ElfBytes image(bytes);
  auto elf = elf::ReadElfFunctions(image, kCap);
  ASSERT_TRUE(elf.ok());
  OneFileSource source(std::make_shared<const ElfFunctions>(std::move(elf).value()));
  // libjvm's r-xp mapping starts at file offset 0x251000; glibc_plain
  // stands in for the file (its main at 0x10a0 is reached through an
  // offset its loads map): the arithmetic, not the name, is under test.
  const uint64_t jvm_text = 0x7f2f90e51000u;
  const std::vector<uint64_t> addresses = {
      0x7f2f75400000u + 0x40,     // the code cache: anonymous
      jvm_text + 0x10,            // libjvm: offset 0x251010, outside glibc_plain's loads
      0x7f2f90c00000u + 0x10a5,   // libjvm's first mapping, offset 0x10a5: "main"
      0x10,                       // no mapping
      0x7f2f90c00000u + 0x10a6};  // the same mapping again
  Symbolization s = Symbolize(addresses, *maps, source);
  ASSERT_EQ(s.frames.size(), addresses.size());
  EXPECT_EQ(s.frames[0].kind, FrameKind::kAnon);
  EXPECT_EQ(s.frames[0].function, "[anon]");
  EXPECT_EQ(s.frames[0].file, -1);
  EXPECT_EQ(s.frames[1].kind, FrameKind::kUnknown);
  EXPECT_EQ(s.frames[1].function, "[unknown]");
  EXPECT_EQ(s.frames[1].file_offset, 0x251010u);
  EXPECT_EQ(s.frames[2].kind, FrameKind::kFunction);
  EXPECT_EQ(s.frames[2].function, "main");
  EXPECT_EQ(s.frames[2].elf_address, 0x10a5u);
  EXPECT_EQ(s.frames[3].function, "[unknown]");
  EXPECT_EQ(s.frames[3].file, -1);
  EXPECT_EQ(s.frames[4].file, s.frames[2].file);
  // Two mappings of libjvm: two pprof mappings, one ask for the file.
  ASSERT_EQ(s.files.size(), 2u);
  EXPECT_EQ(s.files[static_cast<std::size_t>(s.frames[1].file)].start, jvm_text);
  EXPECT_EQ(s.files[0].build_id, "1732c270e9779969db9614ee0f6eb7f79c247e18");
  EXPECT_EQ(source.asked["/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"], 1);
  // One name however many frames lie in its function, and copies share it.
  EXPECT_EQ(s.frames[4].function, "main");
  EXPECT_EQ(s.frames[4].function.data(), s.frames[2].function.data());
  ASSERT_TRUE(s.names);
  EXPECT_EQ(s.names->size(), 1u);
  Symbolization copy = s;
  s = Symbolization{};
  EXPECT_EQ(copy.frames[2].function, "main");

  OneFileSource unreadable(nullptr);
  Symbolization none = Symbolize(addresses, *maps, unreadable);
  EXPECT_EQ(none.frames[2].function, "[unknown]");
  EXPECT_EQ(none.frames[2].file_offset, 0x10a5u);
  EXPECT_FALSE(none.files[0].symbols);
}

TEST(SymbolCacheTest, DropsTheLeastRecentlyUsedBeyondItsCap) {
  auto one = std::make_shared<const ElfFunctions>();
  const std::size_t each = one->MemoryBytes();
  SymbolCache cache(2 * each);
  SymbolCache::Key a{1, 0, 10, "aa"}, b{1, 0, 11, "bb"}, c{1, 0, 12, "cc"};
  cache.Put(a, one);
  cache.Put(b, std::make_shared<const ElfFunctions>());
  EXPECT_EQ(cache.entries(), 2u);
  EXPECT_EQ(cache.Get(a), one);  // a is now the most recent
  cache.Put(c, std::make_shared<const ElfFunctions>());
  EXPECT_EQ(cache.entries(), 2u);
  EXPECT_LE(cache.bytes(), 2 * each);
  EXPECT_NE(cache.Get(a), nullptr);
  EXPECT_EQ(cache.Get(b), nullptr);
  EXPECT_NE(cache.Get(c), nullptr);
  // Same device and inode, another build id: another file.
  EXPECT_EQ(cache.Get(SymbolCache::Key{1, 0, 10, "ab"}), nullptr);
  SymbolCache tiny(each - 1);
  tiny.Put(a, one);
  EXPECT_EQ(tiny.entries(), 0u);
}

}  // namespace
}  // namespace memtrimd::symbols

namespace memtrimd::symbols {
namespace {

TEST(CapFunctionName, LongNamesAreCutWithAMarker) {
  EXPECT_EQ(CapFunctionName("main"), "main");
  const std::string exact(kMaxFunctionNameBytes, 'a');
  EXPECT_EQ(CapFunctionName(exact), exact);
  const std::string cut = CapFunctionName(std::string(16384, 'a'));
  EXPECT_EQ(cut, std::string(kMaxFunctionNameBytes, 'a') + std::string(kCutMarker));
  // Never inside a UTF-8 character: "é" is two bytes across the cap.
  const std::string accents = std::string(kMaxFunctionNameBytes - 1, 'a') + "\xc3\xa9tail";
  EXPECT_EQ(CapFunctionName(accents),
            std::string(kMaxFunctionNameBytes - 1, 'a') + std::string(kCutMarker));
}

}  // namespace
}  // namespace memtrimd::symbols

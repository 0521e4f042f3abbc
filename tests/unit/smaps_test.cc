#include "collectors/procfs/smaps.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace memtrimd::procfs {
namespace {

std::string ReadFixture(const std::string& rel) {
  std::ifstream in(std::string(MEMTRIMD_FIXTURES) + "/" + rel, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open fixture " << rel;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What the test itself reads from smaps text, without the parser under test:
// a header is a line whose first token starts with a hex digit and contains
// '-'; field lines are "Key: N kB".
struct Reference {
  struct Header {
    uint64_t start = 0;
    uint64_t end = 0;
    std::string perms;
    uint64_t inode = 0;
    std::string name;
    uint64_t rss = 0;
    uint64_t anonymous = 0;
    uint64_t swap = 0;
    uint64_t shared = 0;
  };
  std::vector<Header> headers;
  uint64_t rss_sum = 0;
};

Reference ReadReference(const std::string& text) {
  Reference ref;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string first;
    if (!(fields >> first)) continue;
    if (std::isxdigit(static_cast<unsigned char>(first[0])) &&
        first.find('-') != std::string::npos) {
      Reference::Header h;
      std::size_t dash = first.find('-');
      h.start = std::stoull(first.substr(0, dash), nullptr, 16);
      h.end = std::stoull(first.substr(dash + 1), nullptr, 16);
      std::string offset, dev;
      fields >> h.perms >> offset >> dev >> h.inode;
      std::string word;
      while (fields >> word) h.name += (h.name.empty() ? "" : " ") + word;
      ref.headers.push_back(h);
      continue;
    }
    uint64_t kb = 0;
    if (!(fields >> kb) || ref.headers.empty()) continue;
    Reference::Header& h = ref.headers.back();
    if (first == "Rss:") {
      h.rss = kb * 1024;
      ref.rss_sum += kb * 1024;
    } else if (first == "Anonymous:") {
      h.anonymous = kb * 1024;
    } else if (first == "Swap:") {
      h.swap = kb * 1024;
    } else if (first == "Shared_Clean:" || first == "Shared_Dirty:") {
      h.shared += kb * 1024;
    }
  }
  return ref;
}

uint8_t PermBits(const std::string& p) {
  uint8_t bits = 0;
  if (p[0] == 'r') bits |= kRead;
  if (p[1] == 'w') bits |= kWrite;
  if (p[2] == 'x') bits |= kExec;
  if (p[3] == 's') bits |= kShared;
  return bits;
}

MappingKind KindOf(const std::string& name) {
  if (name.empty()) return MappingKind::kAnonymous;
  if (name == "[heap]") return MappingKind::kHeap;
  if (name == "[stack]") return MappingKind::kStack;
  if (name.front() == '[') return MappingKind::kSpecial;
  return MappingKind::kFile;
}

std::string Header(const std::string& range, const std::string& perms, uint64_t inode,
                   const std::string& name) {
  std::string dev = inode == 0 ? "00:00" : "fe:00";
  std::string h = range + " " + perms + " 00000000 " + dev + " " + std::to_string(inode);
  h += name.empty() ? " " : "                          " + name;
  return h;
}

// One mapping with the field lines the parser reads (and some it skips).
std::string Block(const std::string& range, const std::string& perms, uint64_t inode,
                  const std::string& name, uint64_t rss_kb) {
  return Header(range, perms, inode, name) +
         "\n"
         "Size:                  8 kB\n"
         "KernelPageSize:        4 kB\n"
         "Rss:                 " +
         std::to_string(rss_kb) +
         " kB\n"
         "Pss:                   4 kB\n"
         "Shared_Clean:          1 kB\n"
         "Shared_Dirty:          2 kB\n"
         "Anonymous:             3 kB\n"
         "Swap:                  5 kB\n"
         "THPeligible:           0\n"
         "VmFlags: rd wr mr mw me ac sd \n";
}

void ExpectSameMappings(const std::vector<Mapping>& a, const std::vector<Mapping>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE("mapping " + std::to_string(i));
    EXPECT_EQ(a[i].start, b[i].start);
    EXPECT_EQ(a[i].end, b[i].end);
    EXPECT_EQ(a[i].inode, b[i].inode);
    EXPECT_EQ(a[i].perms, b[i].perms);
    EXPECT_EQ(a[i].kind, b[i].kind);
    EXPECT_EQ(a[i].glibc_arena_name, b[i].glibc_arena_name);
    EXPECT_EQ(a[i].rss, b[i].rss);
    EXPECT_EQ(a[i].anonymous, b[i].anonymous);
    EXPECT_EQ(a[i].swap, b[i].swap);
    EXPECT_EQ(a[i].shared, b[i].shared);
  }
}

class SmapsFixture : public testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { text_ = ReadFixture(std::string("proc/") + GetParam() + "/smaps"); }
  std::string text_;
};

TEST_P(SmapsFixture, CountAndRssMatchTheText) {
  Reference ref = ReadReference(text_);
  ASSERT_FALSE(ref.headers.empty());
  Result<std::vector<Mapping>> maps = ParseSmaps(text_);
  ASSERT_TRUE(maps.ok()) << maps.status().message();
  EXPECT_EQ(maps->size(), ref.headers.size());
  uint64_t rss = 0;
  for (const Mapping& m : *maps) rss += m.rss;
  EXPECT_EQ(rss, ref.rss_sum);
  EXPECT_GT(rss, 0u);
}

TEST_P(SmapsFixture, EveryMappingMatchesTheText) {
  Reference ref = ReadReference(text_);
  Result<std::vector<Mapping>> maps = ParseSmaps(text_);
  ASSERT_TRUE(maps.ok()) << maps.status().message();
  ASSERT_EQ(maps->size(), ref.headers.size());
  for (std::size_t i = 0; i < maps->size(); ++i) {
    const Mapping& m = (*maps)[i];
    const Reference::Header& h = ref.headers[i];
    SCOPED_TRACE("mapping " + std::to_string(i) + ": " + h.perms + " " + h.name);
    EXPECT_EQ(m.start, h.start);
    EXPECT_EQ(m.end, h.end);
    EXPECT_EQ(m.size(), h.end - h.start);
    EXPECT_EQ(m.inode, h.inode);
    EXPECT_EQ(m.perms, PermBits(h.perms));
    EXPECT_EQ(m.kind, KindOf(h.name));
    EXPECT_FALSE(m.glibc_arena_name);  // glibc 2.36 does not name its mappings
    EXPECT_EQ(m.rss, h.rss);
    EXPECT_EQ(m.anonymous, h.anonymous);
    EXPECT_EQ(m.swap, h.swap);
    EXPECT_EQ(m.shared, h.shared);
  }
}

TEST_P(SmapsFixture, KindsOfWellKnownMappings) {
  Reference ref = ReadReference(text_);
  Result<std::vector<Mapping>> maps = ParseSmaps(text_);
  ASSERT_TRUE(maps.ok()) << maps.status().message();
  ASSERT_EQ(maps->size(), ref.headers.size());
  int heaps = 0, files = 0, anon = 0, stacks = 0;
  for (std::size_t i = 0; i < maps->size(); ++i) {
    const Mapping& m = (*maps)[i];
    const std::string& name = ref.headers[i].name;
    if (name == "[heap]") {
      ++heaps;
      EXPECT_EQ(m.kind, MappingKind::kHeap);
      EXPECT_EQ(m.perms, kRead | kWrite);
      EXPECT_FALSE(m.IsAnonymous());
    } else if (!name.empty() && name.front() == '/') {
      ++files;
      EXPECT_EQ(m.kind, MappingKind::kFile) << name;
      EXPECT_NE(m.inode, 0u) << name;
      EXPECT_FALSE(m.IsAnonymous()) << name;
    } else if (name.empty()) {
      ++anon;
      EXPECT_EQ(m.kind, MappingKind::kAnonymous);
      EXPECT_EQ(m.inode, 0u);
      EXPECT_TRUE(m.IsAnonymous());
    } else if (name == "[stack]") {
      ++stacks;
      EXPECT_EQ(m.kind, MappingKind::kStack);
    } else {
      EXPECT_EQ(m.kind, MappingKind::kSpecial) << name;
    }
  }
  EXPECT_EQ(heaps, 1);
  EXPECT_EQ(stacks, 1);
  EXPECT_GT(files, 0);
  EXPECT_GT(anon, 0);
}

TEST_P(SmapsFixture, FeedingLineByLineMatchesParseSmaps) {
  Result<std::vector<Mapping>> whole = ParseSmaps(text_);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  SmapsParser parser;
  std::istringstream in(text_);
  std::string line;
  while (std::getline(in, line)) parser.Feed(line);
  Result<std::vector<Mapping>> fed = parser.Finish();
  ASSERT_TRUE(fed.ok()) << fed.status().message();
  ExpectSameMappings(*fed, *whole);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SmapsFixture, testing::Values("fragmenter", "jvm17", "sleep"));

TEST(ParseSmaps, SleepFixtureSpotChecks) {
  Result<std::vector<Mapping>> maps = ParseSmaps(ReadFixture("proc/sleep/smaps"));
  ASSERT_TRUE(maps.ok()) << maps.status().message();
  ASSERT_EQ(maps->size(), 37u);
  const Mapping& first = maps->front();
  EXPECT_EQ(first.start, 0x55c05736e000u);
  EXPECT_EQ(first.end, 0x55c057370000u);
  EXPECT_EQ(first.inode, 248056u);
  EXPECT_EQ(first.perms, kRead);
  EXPECT_EQ(first.kind, MappingKind::kFile);
  EXPECT_EQ(first.rss, 8u * 1024);
  const Mapping& heap = (*maps)[5];
  EXPECT_EQ(heap.start, 0x55c0910bb000u);
  EXPECT_EQ(heap.kind, MappingKind::kHeap);
  const Mapping& vsyscall = maps->back();
  EXPECT_EQ(vsyscall.start, 0xffffffffff600000u);
  EXPECT_EQ(vsyscall.perms, kExec);
  EXPECT_EQ(vsyscall.kind, MappingKind::kSpecial);
}

TEST(ParseSmaps, PermissionBits) {
  std::string text = Header("1000-2000", "r-xp", 7, "/bin/x") + "\n" +
                     Header("2000-3000", "rw-s", 8, "/dev/shm/y") + "\n" +
                     Header("3000-4000", "---p", 0, "") + "\n" +
                     Header("4000-5000", "rwxp", 0, "") + "\n" +
                     Header("5000-6000", "r--s", 9, "/z") + "\n";
  Result<std::vector<Mapping>> maps = ParseSmaps(text);
  ASSERT_TRUE(maps.ok()) << maps.status().message();
  ASSERT_EQ(maps->size(), 5u);
  EXPECT_EQ((*maps)[0].perms, kRead | kExec);
  EXPECT_EQ((*maps)[1].perms, kRead | kWrite | kShared);
  EXPECT_EQ((*maps)[2].perms, 0);
  EXPECT_EQ((*maps)[3].perms, kRead | kWrite | kExec);
  EXPECT_EQ((*maps)[4].perms, kRead | kShared);
}

TEST(ParseSmaps, FieldValuesOfOneBlock) {
  Result<std::vector<Mapping>> maps =
      ParseSmaps(Block("7f0000000000-7f0000021000", "rw-p", 0, "", 132));
  ASSERT_TRUE(maps.ok()) << maps.status().message();
  ASSERT_EQ(maps->size(), 1u);
  const Mapping& m = maps->front();
  EXPECT_EQ(m.start, 0x7f0000000000u);
  EXPECT_EQ(m.end, 0x7f0000021000u);
  EXPECT_EQ(m.size(), 0x21000u);
  EXPECT_EQ(m.rss, 132u * 1024);
  EXPECT_EQ(m.shared, 3u * 1024);  // Shared_Clean + Shared_Dirty
  EXPECT_EQ(m.anonymous, 3u * 1024);
  EXPECT_EQ(m.swap, 5u * 1024);
  EXPECT_EQ(m.kind, MappingKind::kAnonymous);
  EXPECT_TRUE(m.IsAnonymous());
}

TEST(ParseSmaps, GlibcArenaName) {
  std::string text =
      Block("7f1234000000-7f1235000000", "rw-p", 0, "[anon: glibc: malloc arena]", 64) +
      Block("7f1235000000-7f1238000000", "---p", 0, "[anon: glibc: malloc arena]", 0) +
      Block("7f1238000000-7f1238001000", "rw-p", 0, "[anon: glibc: malloc]", 4) +
      Block("7f1238001000-7f1238002000", "rw-p", 0, "[anon:some other name]", 4);
  Result<std::vector<Mapping>> maps = ParseSmaps(text);
  ASSERT_TRUE(maps.ok()) << maps.status().message();
  ASSERT_EQ(maps->size(), 4u);
  EXPECT_TRUE((*maps)[0].glibc_arena_name);
  EXPECT_EQ((*maps)[0].kind, MappingKind::kAnonymous);
  EXPECT_TRUE((*maps)[0].IsAnonymous());
  EXPECT_EQ((*maps)[0].rss, 64u * 1024);
  EXPECT_TRUE((*maps)[1].glibc_arena_name);
  EXPECT_FALSE((*maps)[2].glibc_arena_name);  // glibc's mmap'd chunks, not an arena
  EXPECT_EQ((*maps)[2].kind, MappingKind::kAnonymous);
  EXPECT_FALSE((*maps)[3].glibc_arena_name);
  EXPECT_EQ((*maps)[3].kind, MappingKind::kAnonymous);
}

TEST(ParseSmaps, PathsWithSpacesAndDeletedFiles) {
  std::string text = Header("1000-2000", "r--p", 5, "/opt/my app/lib x.so") + "\n" +
                     Header("2000-3000", "rw-s", 6, "/memfd:jit (deleted)") + "\n" +
                     Header("3000-4000", "r--p", 7, "/srv/gone (deleted)") + "\n" +
                     Header("4000-5000", "rw-p", 0, "[stack:123]") + "\n" +
                     Header("5000-6000", "r--p", 0, "[vvar]") + "\n";
  Result<std::vector<Mapping>> maps = ParseSmaps(text);
  ASSERT_TRUE(maps.ok()) << maps.status().message();
  ASSERT_EQ(maps->size(), 5u);
  EXPECT_EQ((*maps)[0].kind, MappingKind::kFile);
  EXPECT_EQ((*maps)[1].kind, MappingKind::kFile);
  EXPECT_EQ((*maps)[2].kind, MappingKind::kFile);
  EXPECT_EQ((*maps)[3].kind, MappingKind::kStack);
  EXPECT_EQ((*maps)[4].kind, MappingKind::kSpecial);
}

TEST(ParseSmaps, EmptyTextGivesNoMappings) {
  Result<std::vector<Mapping>> maps = ParseSmaps("");
  ASSERT_TRUE(maps.ok()) << maps.status().message();
  EXPECT_TRUE(maps->empty());
}

TEST(ParseSmaps, LastLineWithoutNewline) {
  Result<std::vector<Mapping>> maps =
      ParseSmaps(Header("1000-3000", "rw-p", 0, "") + "\nRss: 8 kB");
  ASSERT_TRUE(maps.ok()) << maps.status().message();
  ASSERT_EQ(maps->size(), 1u);
  EXPECT_EQ(maps->front().rss, 8u * 1024);
}

TEST(ParseSmaps, MalformedHeaderReportsItsLine) {
  std::string text = Block("1000-2000", "rw-p", 0, "", 4);  // lines 1-11
  text += "3000-2zzz rw-p 00000000 00:00 0\n";              // line 12
  Result<std::vector<Mapping>> maps = ParseSmaps(text);
  ASSERT_FALSE(maps.ok());
  EXPECT_EQ(maps.status().code(), ErrorCode::kParseError);
  EXPECT_NE(maps.status().message().find("line 12"), std::string::npos) << maps.status().message();
}

TEST(ParseSmaps, OtherMalformedHeaders) {
  const char* bad[] = {
      "2000-1000 rw-p 00000000 00:00 0",  // end before start
      "1000 rw-p 00000000 00:00 0",       // no range
      "1000-2000 rw- 00000000 00:00 0",   // three permission characters
      "1000-2000 rw-p 00000000 00:00",    // no inode
      "1000-2000 rw-p 00000000 00:00 x",  // bad inode
      "1000-2000",                        // nothing else
  };
  for (const char* line : bad) {
    Result<std::vector<Mapping>> maps = ParseSmaps(std::string(line) + "\n");
    ASSERT_FALSE(maps.ok()) << line;
    EXPECT_NE(maps.status().message().find("line 1"), std::string::npos)
        << line << ": " << maps.status().message();
  }
}

TEST(ParseSmaps, MalformedFieldValueIsAnError) {
  Result<std::vector<Mapping>> maps =
      ParseSmaps(Header("1000-2000", "rw-p", 0, "") + "\nSize: 4 kB\nRss: lots kB\n");
  ASSERT_FALSE(maps.ok());
  EXPECT_NE(maps.status().message().find("line 3"), std::string::npos) << maps.status().message();
}

TEST(ParseSmaps, FieldBeforeAnyHeaderIsAnError) {
  Result<std::vector<Mapping>> maps =
      ParseSmaps("Rss:                   4 kB\n" + Header("1000-2000", "rw-p", 0, "") + "\n");
  ASSERT_FALSE(maps.ok());
  EXPECT_EQ(maps.status().code(), ErrorCode::kParseError);
  EXPECT_NE(maps.status().message().find("line 1"), std::string::npos) << maps.status().message();
}

TEST(SmapsParser, FinishLeavesTheParserReusable) {
  SmapsParser parser;
  parser.Feed(Header("1000-2000", "rw-p", 0, ""));
  parser.Feed("Rss: 4 kB");
  parser.Feed("zzzz");                             // not hex: "field" without ':' is skipped
  parser.Feed("1000-0fff rw-p 00000000 00:00 0");  // malformed: line 4
  parser.Feed(Header("3000-4000", "rw-p", 0, ""));
  Result<std::vector<Mapping>> first = parser.Finish();
  ASSERT_FALSE(first.ok());
  EXPECT_NE(first.status().message().find("line 4"), std::string::npos) << first.status().message();

  // The error, the mappings and the line count are gone.
  parser.Feed(Header("5000-6000", "r--p", 3, "/lib/a.so"));
  parser.Feed("Rss: 8 kB");
  Result<std::vector<Mapping>> second = parser.Finish();
  ASSERT_TRUE(second.ok()) << second.status().message();
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ(second->front().start, 0x5000u);
  EXPECT_EQ(second->front().rss, 8u * 1024);

  parser.Feed(Header("7000-8000", "r--p", 3, "/lib/a.so"));
  parser.Feed("Rss: bad kB");  // line 2 of this read
  Result<std::vector<Mapping>> third = parser.Finish();
  ASSERT_FALSE(third.ok());
  EXPECT_NE(third.status().message().find("line 2"), std::string::npos) << third.status().message();

  Result<std::vector<Mapping>> empty = parser.Finish();
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_TRUE(empty->empty());
}

TEST(SmapsParser, ResetReusesStorage) {
  std::string text = ReadFixture("proc/jvm17/smaps");
  SmapsParser parser;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) parser.Feed(line);
  Result<std::vector<Mapping>> big = parser.Finish();
  ASSERT_TRUE(big.ok()) << big.status().message();
  ASSERT_GT(big->size(), 100u);
  std::vector<Mapping> storage = std::move(big).value();
  const Mapping* buffer = storage.data();
  const std::size_t capacity = storage.capacity();

  parser.Reset(std::move(storage));
  parser.Feed(Header("1000-2000", "rw-p", 0, ""));
  parser.Feed("Rss: 4 kB");
  Result<std::vector<Mapping>> small = parser.Finish();
  ASSERT_TRUE(small.ok()) << small.status().message();
  ASSERT_EQ(small->size(), 1u);  // the old mappings were cleared
  EXPECT_EQ(small->front().start, 0x1000u);
  EXPECT_EQ(small->front().rss, 4u * 1024);
  EXPECT_EQ(small->data(), buffer);
  EXPECT_EQ(small->capacity(), capacity);
}

TEST(SmapsParser, ResetClearsAnErrorAndLineCount) {
  SmapsParser parser;
  parser.Feed("Rss: 4 kB");  // error on line 1
  parser.Reset({});
  parser.Feed(Header("1000-2000", "rw-p", 0, ""));
  parser.Feed("Rss: oops kB");  // line 2 after the reset
  Result<std::vector<Mapping>> r = parser.Finish();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 2"), std::string::npos) << r.status().message();

  parser.Feed(Header("1000-2000", "rw-p", 0, ""));
  parser.Reset(std::vector<Mapping>(3));  // stale contents are dropped
  Result<std::vector<Mapping>> cleared = parser.Finish();
  ASSERT_TRUE(cleared.ok()) << cleared.status().message();
  EXPECT_TRUE(cleared->empty());
}

}  // namespace
}  // namespace memtrimd::procfs

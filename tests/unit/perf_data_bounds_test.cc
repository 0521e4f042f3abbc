// What an hsperfdata file can make memtrimd hold, and how a target's file
// is opened. ParsePerfData keeps only the counters memtrimd reads, within
// fixed caps (hsperfdata.h); ReadTargetPerfFile opens the file inside the
// target's root without following a symlink and checks its directory's and
// its own owner, type and size on every read (perf_file.h). The reads here
// go through this process's own /proc/self/root, a real one.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "collectors/jvm/hsperfdata.h"
#include "collectors/jvm/perf_file.h"
#include "tests/support/perf_image.h"
#include "tests/unit/fixtures.h"

namespace memtrimd::jvm {
namespace {

// An hsperfdata image as HotSpot lays it out.
std::string Image(const std::vector<std::pair<std::string, PerfValue>>& entries) {
  std::vector<test::PerfImageEntry> in(entries.begin(), entries.end());
  return test::PerfImage(in);
}

// Bytes the parsed structure holds in its names and values.
std::size_t HeldBytes(const PerfData& d) {
  std::size_t n = 0;
  for (const auto& [name, value] : d.entries) {
    n += name.size() + 8;
    if (const std::string* s = std::get_if<std::string>(&value)) n += s->size();
  }
  return n;
}

TEST(PerfDataBounds, KeepsTheCountersMemtrimdReadsWithTheirValues) {
  auto p = ParsePerfData(Image({{"sun.os.hrt.frequency", int64_t{1000000000}},
                                {"sun.gc.cause", std::string("No GC")},
                                {"sun.gc.generation.0.capacity", int64_t{0x0102030405060708}},
                                {"sun.rt.javaCommand", std::string("Main")},
                                {"java.property.java.version", std::string("17")}}));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->Long("sun.os.hrt.frequency"), 1000000000);
  EXPECT_EQ(p->String("sun.gc.cause"), "No GC");
  EXPECT_EQ(p->Long("sun.gc.generation.0.capacity"), 0x0102030405060708);
  EXPECT_EQ(p->entries.size(), 3u);
}

// Attack 3: a 4 MiB file of ~150k minimal entries (one shared, hard-linked,
// by many fake JVMs) made every parse build a map of all of them, 15 MiB.
// Here 131,071 entries of 32 bytes, the smallest this layout makes.
TEST(PerfDataBounds, FourMiBOfMinimalEntriesIsRefusedAtThePrologue) {
  std::vector<std::pair<std::string, PerfValue>> entries(131071, {"e", int64_t{1}});
  std::string file = Image(entries);
  ASSERT_EQ(file.size(), 4u << 20);
  auto p = ParsePerfData(file);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("more than 4096 entries"), std::string::npos)
      << p.status().message();
}

TEST(PerfDataBounds, ManyWantedNamesKeepAtMostTheCap) {
  // 4096 entries, each a name memtrimd reads, with long string values: the
  // most a file the prologue check lets through can ask for.
  std::vector<std::pair<std::string, PerfValue>> entries;
  for (std::size_t i = 0; i < kMaxPerfEntries; ++i) {
    entries.emplace_back("sun.gc.collector." + std::to_string(i) + ".name", std::string(1000, 'x'));
  }
  const std::string file = Image(entries);
  ASSERT_GT(file.size(), 4u << 20);
  auto p = ParsePerfData(file);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->entries.size(), kMaxPerfKeptEntries);
  for (const auto& [name, value] : p->entries) {
    EXPECT_EQ(std::get<std::string>(value).size(), kMaxPerfStringBytes) << name;
  }
  EXPECT_LE(HeldBytes(*p), kMaxPerfKeptEntries * (kMaxPerfNameBytes + 8 + kMaxPerfStringBytes));
  auto gc = GcFromPerfData(*p);
  ASSERT_TRUE(gc.has_value());
  EXPECT_EQ(gc->collectors.size(), 16u);
}

TEST(PerfDataBounds, LongNamesAreSkipped) {
  const std::string name = "sun.gc.generation.0" + std::string(200, '0') + ".capacity";
  auto p = ParsePerfData(Image({{name, int64_t{5}}, {"sun.gc.cause", std::string("No GC")}}));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->entries.count(name), 0u);
  EXPECT_EQ(p->entries.size(), 1u);
}

TEST(PerfDataBounds, RecordedFilesKeepFewEntries) {
  for (const char* jdk : {"17", "25"}) {
    for (const char* gc : {"g1", "parallel", "serial", "shenandoah", "z"}) {
      SCOPED_TRACE(std::string(jdk) + " " + gc);
      auto p = ParsePerfData(
          test::ReadFixture("jvm/" + std::string(jdk) + "/hsperfdata_" + gc + ".bin"));
      ASSERT_TRUE(p.ok()) << p.status().message();
      EXPECT_LE(p->entries.size(), 70u);
      EXPECT_LT(HeldBytes(*p), 8u << 10);
    }
  }
}

// --- ReadTargetPerfFile ------------------------------------------------------------

class PerfFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/perf_file_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    dir_ = base_ + "/hsperfdata_me";
    ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
    bytes_ = test::ReadFixture("jvm/17/hsperfdata_g1.bin");
    Write(dir_ + "/42", bytes_);
    target_.pid = ::getpid();
    target_.nspid = 42;
    target_.uid = ::geteuid();
    target_.proc_dir = "/proc/self";
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(base_, ec);
  }
  static void Write(const std::string& path, const std::string& bytes) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0) << path;
    ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    ::close(fd);
  }
  Result<PerfData> Read(const std::string& path) { return ReadTargetPerfFile(target_, path); }

  std::string base_, dir_, bytes_;
  Target target_;
};

TEST_F(PerfFileTest, ReadsTheTargetsOwnFile) {
  auto p = Read(dir_ + "/42");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE(HeapFromPerfData(*p).has_value());
}

// Attack 9: the user swaps its hsperfdata_<user> directory for a symlink to
// another user's (root's) after memtrimd found the file; only the last
// component was opened with O_NOFOLLOW.
TEST_F(PerfFileTest, SymlinkedDirectoryIsNotFollowed) {
  const std::string other = base_ + "/hsperfdata_other";
  ASSERT_EQ(::rename(dir_.c_str(), other.c_str()), 0);
  ASSERT_EQ(::symlink(other.c_str(), dir_.c_str()), 0);
  auto p = Read(dir_ + "/42");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("open the directory"), std::string::npos)
      << p.status().message();
}

TEST_F(PerfFileTest, SymlinkedFileIsNotFollowed) {
  ASSERT_EQ(::rename((dir_ + "/42").c_str(), (dir_ + "/43").c_str()), 0);
  ASSERT_EQ(::symlink("43", (dir_ + "/42").c_str()), 0);
  EXPECT_FALSE(Read(dir_ + "/42").ok());
}

TEST_F(PerfFileTest, AnotherUidsFileOrDirectoryIsRefused) {
  target_.uid = ::geteuid() + 1;  // the file and directory are ours, not the target's
  auto p = Read(dir_ + "/42");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("not the JVM's uid"), std::string::npos)
      << p.status().message();
}

TEST_F(PerfFileTest, FifoIsRefusedWithoutBlocking) {
  ASSERT_EQ(::unlink((dir_ + "/42").c_str()), 0);
  ASSERT_EQ(::mkfifo((dir_ + "/42").c_str(), 0600), 0);
  auto p = Read(dir_ + "/42");  // would block in open(2) without O_NONBLOCK
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("not a regular file"), std::string::npos)
      << p.status().message();
}

TEST_F(PerfFileTest, FileLargerThanAJvmMakesIsRefused) {
  Write(dir_ + "/42", bytes_ + std::string(kMaxPerfFileBytes, '\0'));
  auto p = Read(dir_ + "/42");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), ErrorCode::kTooLarge);
}

TEST_F(PerfFileTest, DotDotIsRefused) { EXPECT_FALSE(Read(dir_ + "/../hsperfdata_me/42").ok()); }

TEST_F(PerfFileTest, FindsTheDirectoryOfTheTargetsUidOnly) {
  // FindPerfFileDir looks in the target's /tmp: the real one here, so only
  // the not-found answers are checked for a pid nobody uses.
  target_.nspid = 0x7ffffff0;
  Result<std::string> none = FindPerfFileDir(target_);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace memtrimd::jvm

// The JniSiteHolder workload's own truth, checked from outside on every JDK
// found, before any sampler is held against it (issue 25): once told to
// hold, the JVM's RSS grows by the 260 MiB its three sites hold; the
// addresses it prints for jni_hold_200, jni_hold_50, jni_hold_10 and
// jni_churn lie in its JNI library's executable mapping and are what the
// library's own symbol table (nm -D) and program headers (readelf -lW) give
// at the mapping's load address; freeing the 50 MiB site gives its memory
// back; and closing its stdin ends it with 0. With --hold-now it holds the
// same without being asked.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/harness.h"
#include "tests/integration/jni_site_holder.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kPage = 4096;

struct Mapping {
  uint64_t start = 0, end = 0, offset = 0;
  std::string perms, path;
};

// /proc/<pid>/maps read plainly (not through collectors/symbols, which the
// sampler's tests will check against this).
std::vector<Mapping> ReadMaps(pid_t pid) {
  std::vector<Mapping> out;
  std::istringstream in(ReadFile("/proc/" + std::to_string(pid) + "/maps"));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string range, perms, offset, dev, inode, path;
    if (!(f >> range >> perms >> offset >> dev >> inode)) continue;
    std::getline(f >> std::ws, path);
    Mapping m;
    const std::size_t dash = range.find('-');
    m.start = std::stoull(range.substr(0, dash), nullptr, 16);
    m.end = std::stoull(range.substr(dash + 1), nullptr, 16);
    m.offset = std::stoull(offset, nullptr, 16);
    m.perms = perms;
    m.path = path;
    out.push_back(m);
  }
  return out;
}

// `nm -D --defined-only` of a file: exported symbol -> value.
std::map<std::string, uint64_t> ExportedSymbols(const std::string& path) {
  RunResult r = RunCommand({"nm", "-D", "--defined-only", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, uint64_t> out;
  std::istringstream in(r.out);
  std::string value, type, name;
  while (in >> value >> type >> name) out.emplace(name, std::stoull(value, nullptr, 16));
  return out;
}

struct LoadSegment {
  uint64_t offset = 0, vaddr = 0;
  std::string flags;
};

// The PT_LOAD lines of `readelf -lW`: "LOAD 0x... 0x... 0x... 0x... 0x... R E 0x1000".
std::vector<LoadSegment> LoadSegments(const std::string& path) {
  RunResult r = RunCommand({"readelf", "-lW", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<LoadSegment> out;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string type, offset, vaddr, paddr, filesz, memsz, flag;
    if (!(f >> type) || type != "LOAD") continue;
    if (!(f >> offset >> vaddr >> paddr >> filesz >> memsz)) continue;
    LoadSegment s{std::stoull(offset, nullptr, 16), std::stoull(vaddr, nullptr, 16), ""};
    // Flags are one to three words (R, W, E) before the alignment.
    while (f >> flag && flag.rfind("0x", 0) != 0) s.flags += flag;
    out.push_back(s);
  }
  return out;
}

std::optional<uint64_t> RssBytes(pid_t pid) {
  std::optional<uint64_t> kb = StatusValue(pid, "VmRSS");
  if (!kb) return std::nullopt;
  return *kb * 1024;
}

class JniSiteHolderTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (SiteHolderJniLib().empty())
      GTEST_SKIP() << "libsite_holder_jni.so was not built (no jni.h)";
  }
  TempDir dir_;
};

TEST_P(JniSiteHolderTest, HoldsItsSitesWhereItSaysAndFreesThe50) {
  JniSiteHolder holder(dir_, GetParam());
  ASSERT_TRUE(holder.started()) << holder.Log();
  EXPECT_EQ(holder.Output().pid, holder.pid()) << "the pid to clean up by is the JVM's own";
  EXPECT_FALSE(holder.Output().ready) << "held before it was told to";

  // The JVM started, its churn threads running: nothing of the sites yet.
  const std::optional<uint64_t> before = RssBytes(holder.pid());
  ASSERT_TRUE(before);
  ASSERT_TRUE(holder.Hold()) << holder.Log();
  const std::optional<uint64_t> held = RssBytes(holder.pid());
  ASSERT_TRUE(held);
  const JniSiteHolderOutput out = holder.Output();

  // 200 + 50 + 10 MiB in 1 MiB blocks, every byte written: at least that
  // much more RSS (glibc adds a page to each block's own mapping).
  EXPECT_EQ(out.held_bytes, (std::map<std::string, uint64_t>{{"jni_hold_200", 200 * kMiB},
                                                             {"jni_hold_50", 50 * kMiB},
                                                             {"jni_hold_10", 10 * kMiB}}));
  EXPECT_EQ(out.held_blocks, (std::map<std::string, uint64_t>{
                                 {"jni_hold_200", 200}, {"jni_hold_50", 50}, {"jni_hold_10", 10}}));
  EXPECT_GE(*held, *before + 260 * kMiB)
      << "RSS " << *before / kMiB << " -> " << *held / kMiB << " MiB";

  // The printed addresses: in the library's executable mapping, and the
  // library's own exported symbols at the load address of that mapping.
  std::error_code ec;
  const fs::path library = fs::canonical(SiteHolderJniLib(), ec);
  ASSERT_FALSE(ec);
  ASSERT_FALSE(out.library.empty()) << holder.Log();
  EXPECT_EQ(fs::canonical(out.library, ec), library) << out.library;
  const std::vector<Mapping> maps = ReadMaps(holder.pid());
  const std::map<std::string, uint64_t> symbols = ExportedSymbols(library.string());
  const std::vector<LoadSegment> segments = LoadSegments(library.string());
  ASSERT_EQ(out.functions.size(), 4u) << holder.Log();
  for (const std::string name : {"jni_hold_200", "jni_hold_50", "jni_hold_10", "jni_churn"}) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(out.functions.contains(name));
    ASSERT_TRUE(symbols.contains(name)) << "not exported";
    const uint64_t address = out.functions.at(name);
    const Mapping* text = nullptr;
    for (const Mapping& m : maps) {
      if (address >= m.start && address < m.end) text = &m;
    }
    ASSERT_NE(text, nullptr) << std::hex << address << " is in no mapping";
    EXPECT_EQ(text->perms.substr(0, 3), "r-x");
    ASSERT_EQ(fs::canonical(text->path, ec), library) << text->path;
    // The segment this mapping maps: same file offset (page-aligned), so
    // the load bias is the mapping's start less the segment's (page-aligned)
    // virtual address.
    const LoadSegment* segment = nullptr;
    for (const LoadSegment& s : segments) {
      if ((s.offset & ~(kPage - 1)) == text->offset) segment = &s;
    }
    ASSERT_NE(segment, nullptr) << "no PT_LOAD at offset " << std::hex << text->offset;
    EXPECT_NE(segment->flags.find('E'), std::string::npos) << segment->flags;
    const uint64_t bias = text->start - (segment->vaddr & ~(kPage - 1));
    EXPECT_EQ(address, bias + symbols.at(name))
        << std::hex << "printed " << address << ", bias " << bias << " + nm " << symbols.at(name);
  }

  // glibc serves a 1 MiB request with a mapping of its own (above the
  // default mmap threshold, 128 KiB) and unmaps it at free: freeing the 50
  // site's blocks lowers RSS by about 50 MiB at once. Read just before:
  // the JVM's own RSS moves meanwhile (its compilers, the churn's arenas).
  const std::optional<uint64_t> unfreed = RssBytes(holder.pid());
  ASSERT_TRUE(holder.Free50()) << holder.Log();
  const std::optional<uint64_t> freed = RssBytes(holder.pid());
  ASSERT_TRUE(unfreed && freed);
  EXPECT_GE(*unfreed, *freed + 40 * kMiB)
      << "RSS " << *unfreed / kMiB << " -> " << *freed / kMiB << " MiB after free50";
  std::cout << "VmRSS kB: started " << *before / 1024 << ", held " << *held / 1024
            << ", before free50 " << *unfreed / 1024 << ", after " << *freed / 1024 << "\n";

  // End of its stdin ends it, with 0.
  holder.CloseStdin();
  EXPECT_EQ(holder.process().Wait(20s), std::optional<int>(0)) << holder.Log();
}

// --hold-now: the same three sites held at once, nothing asked on stdin
// (memory taken before any sampler could be turned on).
TEST_P(JniSiteHolderTest, HoldNowHoldsWithoutBeingAsked) {
  JniSiteHolder holder(dir_, GetParam(), {"--hold-now", "--unit", "65536", "--block", "20000"});
  ASSERT_TRUE(holder.started()) << holder.Log();
  ASSERT_TRUE(holder.WaitReady()) << holder.Log();
  const JniSiteHolderOutput out = holder.Output();
  // 200 units of 64 KiB in 20000-byte blocks: 655 full blocks and a last
  // one of 7200 bytes.
  EXPECT_EQ(out.held_bytes.at("jni_hold_200"), 200u * 65536);
  EXPECT_EQ(out.held_blocks.at("jni_hold_200"), 656u);
  EXPECT_EQ(out.held_bytes.at("jni_hold_50"), 50u * 65536);
  EXPECT_EQ(out.held_blocks.at("jni_hold_50"), 164u);
  EXPECT_EQ(out.held_bytes.at("jni_hold_10"), 10u * 65536);
  EXPECT_EQ(out.held_blocks.at("jni_hold_10"), 33u);
  EXPECT_EQ(out.functions.size(), 4u);
  EXPECT_TRUE(holder.process().running());
}

// ZlibHolder (the seed's suspect) with --hold-on-stdin: started and idle
// (its .base file) it takes nothing until "hold" arrives on its stdin, then
// makes its Deflaters and Inflaters (its ready file).
TEST_P(JniSiteHolderTest, ZlibHolderHoldsOnStdin) {
  const std::string ready = dir_ / "zlib.ready";
  StdinPipe in(dir_ / "zlib.in");
  ASSERT_TRUE(in.ok());
  SpawnOptions o;
  o.stdin_path = in.path();
  o.stderr_path = dir_ / "zlib.err";
  Process jvm({GetParam() + "/bin/java", "-Xmx64m", "-cp", JAVA_WORKLOADS_CLASSPATH, "ZlibHolder",
               "--count", "200", "--ready-file", ready, "--hold-on-stdin"},
              o);
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready + ".base") || !jvm.running(); }, 60s) &&
              jvm.running())
      << ReadFile(dir_ / "zlib.err");
  // Told nothing yet: the ready file cannot come (it would within a
  // second of being told, below).
  EXPECT_FALSE(fs::exists(ready));
  ASSERT_TRUE(in.Write("hold\n"));
  EXPECT_TRUE(WaitFor([&] { return fs::exists(ready) || !jvm.running(); }, 60s) && jvm.running())
      << ReadFile(dir_ / "zlib.err");
  EXPECT_EQ(ReadFile(ready), std::to_string(jvm.pid()));
}

INSTANTIATE_TEST_SUITE_P(Jdks, JniSiteHolderTest, ::testing::ValuesIn(FindJdkHomes()),
                         [](const ::testing::TestParamInfo<std::string>& home) {
                           return JdkTestName(home.param);
                         });

}  // namespace
}  // namespace memtrimd::testing

// The fragmenter as ground truth on every allocator: run preloaded with
// jemalloc, tcmalloc or mimalloc, linked with each, with jemalloc linked in
// statically, and built with musl-gcc, it names the allocator that really
// serves its malloc (checked against /proc/<pid>/maps), writes that
// allocator's own figures under the agent's key names, keeps the memory
// --free-mib freed, rewrites the figures on SIGUSR1, and its checksums show
// no corruption under its own stress threads.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kFreeMib = 64;
// A variant missing at build time is a failure, not a skip.
constexpr const char* kInstall = " (scripts/install-deps.sh installs the allocators and musl-gcc)";

struct Variant {
  std::string name;       // gtest parameter name
  std::string build;      // "" for the glibc fragmenter, else FragmenterBinFor's name
  std::string preload;    // allocator whose shared object is preloaded, or ""
  std::string allocator;  // expected allocator= value
};

void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

std::string Binary(const Variant& v) {
  return v.build.empty() ? FragmenterBin() : FragmenterBinFor(v.build);
}

std::map<std::string, std::string> ReadKeyValues(const std::string& path) {
  return ReadKeyValueFile(path);
}

std::set<std::string> Keys(const std::map<std::string, std::string>& kv) {
  std::set<std::string> keys;
  for (const auto& [k, v] : kv) keys.insert(k);
  return keys;
}

// The agent's key names for each allocator (the shared contract).
std::set<std::string> ExpectedKeys(const std::string& allocator) {
  std::set<std::string> keys = {"allocator", "object", "rss_anon"};
  std::vector<std::string> more;
  if (allocator == "glibc") more = {"arena", "hblkhd", "uordblks", "fordblks", "keepcost"};
  if (allocator == "jemalloc") {
    more = {"allocated", "active", "resident", "mapped",         "retained",
            "metadata",  "dirty",  "muzzy",    "dirty_decay_ms", "muzzy_decay_ms"};
  }
  if (allocator == "tcmalloc") {
    more = {"allocated",          "heap_size",           "pageheap_free",    "pageheap_unmapped",
            "central_cache_free", "transfer_cache_free", "thread_cache_free"};
  }
  if (allocator == "mimalloc") more = {"committed", "committed_peak"};
  if (allocator == "musl") keys.erase("object");
  keys.insert(more.begin(), more.end());
  return keys;
}

uint64_t Num(const std::map<std::string, std::string>& kv, const std::string& key) {
  auto it = kv.find(key);
  return it == kv.end() ? 0 : std::stoull(it->second);
}

// What the allocator itself reports as free but kept after --free-mib
// (mimalloc 2.0.9 has no free figure: its committed memory stands in).
uint64_t FreeKept(const std::string& allocator, const std::map<std::string, std::string>& kv) {
  if (allocator == "glibc") return Num(kv, "fordblks");
  if (allocator == "jemalloc") return Num(kv, "dirty") + Num(kv, "muzzy");
  if (allocator == "tcmalloc") return Num(kv, "pageheap_free");
  if (allocator == "mimalloc") return Num(kv, "committed");
  return 0;
}

std::set<std::string> MappedFiles(pid_t pid) {
  std::set<std::string> files;
  for (const RawMapping& m : ReadSmapsIndependently(pid)) {
    if (!m.path.empty() && m.path[0] == '/') files.insert(m.path);
  }
  return files;
}

class FragmenterAllocator : public ::testing::TestWithParam<Variant> {};

TEST_P(FragmenterAllocator, NamesItsAllocatorAndReportsItsOwnFigures) {
  const Variant& v = GetParam();
  const std::string binary = Binary(v);
  ASSERT_FALSE(binary.empty()) << "fragmenter_" << v.build << " was not built" << kInstall;
  SpawnOptions options;
  if (!v.preload.empty()) {
    ASSERT_FALSE(AllocatorSo(v.preload).empty()) << v.preload << " not found" << kInstall;
    options.env.push_back("LD_PRELOAD=" + AllocatorSo(v.preload));
  }
  TempDir dir;
  const std::string stats = dir / "stats";
  Process p = StartFragmenter(dir,
                              {"--threads", "4", "--rounds", "2", "--burst-mib", "8", "--free-mib",
                               std::to_string(kFreeMib), "--stats-file", stats},
                              binary, options);
  ASSERT_TRUE(p.running());

  // Written before the ready file, with exactly the agent's keys.
  auto kv = ReadKeyValues(stats);
  EXPECT_EQ(kv["allocator"], v.allocator);
  EXPECT_EQ(Keys(kv), ExpectedKeys(v.allocator)) << ReadFile(stats);

  // The object it names serves malloc in the running process.
  const std::set<std::string> mapped = MappedFiles(p.pid());
  const std::string exe = fs::canonical(binary).string();
  if (v.allocator == "musl") {
    EXPECT_TRUE(mapped.count("/usr/lib/x86_64-linux-musl/libc.so")) << "not running on musl";
    for (const auto& f : mapped) EXPECT_EQ(f.find("libc.so.6"), std::string::npos) << f;
  } else if (v.build == "jemalloc_static") {
    EXPECT_EQ(kv["object"], exe);
    for (const auto& f : mapped) EXPECT_EQ(f.find("libjemalloc"), std::string::npos) << f;
  } else {
    ASSERT_FALSE(kv["object"].empty());
    EXPECT_TRUE(mapped.count(fs::canonical(kv["object"]).string())) << kv["object"];
    if (!v.preload.empty()) {
      EXPECT_EQ(kv["object"], AllocatorSo(v.preload));
    }
    const std::string file = fs::path(kv["object"]).filename().string();
    const std::string expected = v.allocator == "glibc" ? "libc.so" : v.allocator;
    EXPECT_NE(file.find(expected), std::string::npos) << file;
  }

  // --free-mib left (nearly) all of its memory free in the allocator.
  if (v.allocator != "musl") {
    EXPECT_GE(FreeKept(v.allocator, kv), kFreeMib * 9 / 10 << 20) << ReadFile(stats);
  }
  // The process is idle: its own RssAnon matches an outside reading.
  const double outside = static_cast<double>(ReadStatusIndependently(p.pid()).rss_anon);
  EXPECT_NEAR(static_cast<double>(Num(kv, "rss_anon")), outside, outside * 0.05);

  // SIGUSR1: the figures are written again.
  fs::remove(stats);
  ASSERT_EQ(kill(p.pid(), SIGUSR1), 0);
  ASSERT_TRUE(WaitFor([&] { return fs::exists(stats); }, 10s));
  EXPECT_EQ(ReadKeyValues(stats)["allocator"], v.allocator);
  EXPECT_EQ(p.Stop(SIGTERM, 10s), 0);
}

TEST_P(FragmenterAllocator, ChecksumsHoldUnderItsStressThreads) {
  const Variant& v = GetParam();
  const std::string binary = Binary(v);
  ASSERT_FALSE(binary.empty()) << "fragmenter_" << v.build << " was not built" << kInstall;
  TempDir dir;
  SpawnOptions options;
  options.stdout_path = dir / "out";
  if (!v.preload.empty()) {
    ASSERT_FALSE(AllocatorSo(v.preload).empty()) << v.preload << " not found" << kInstall;
    options.env.push_back("LD_PRELOAD=" + AllocatorSo(v.preload));
  }
  Process p = StartFragmenter(dir,
                              {"--threads", "4", "--rounds", "2", "--burst-mib", "8", "--verify",
                               "--stress-threads", "2", "--nice", "10"},
                              binary, options);
  ASSERT_TRUE(p.running());
  EXPECT_EQ(p.Stop(SIGTERM, 30s), 0);
  const std::string out = ReadFile(dir / "out");
  EXPECT_NE(out.find(" errors=0\n"), std::string::npos) << out;
  EXPECT_EQ(out.rfind("checksum=", 0), 0u) << out;
}

INSTANTIATE_TEST_SUITE_P(
    Allocators, FragmenterAllocator,
    ::testing::Values(Variant{"glibc", "", "", "glibc"},
                      Variant{"jemalloc_preloaded", "", "jemalloc", "jemalloc"},
                      Variant{"tcmalloc_preloaded", "", "tcmalloc", "tcmalloc"},
                      Variant{"mimalloc_preloaded", "", "mimalloc", "mimalloc"},
                      Variant{"jemalloc_linked", "jemalloc", "", "jemalloc"},
                      Variant{"tcmalloc_linked", "tcmalloc", "", "tcmalloc"},
                      Variant{"mimalloc_linked", "mimalloc", "", "mimalloc"},
                      Variant{"jemalloc_static", "jemalloc_static", "", "jemalloc"},
                      Variant{"musl", "musl", "", "musl"}),
    [](const ::testing::TestParamInfo<Variant>& p) { return p.param.name; });

// The first pattern word of a kept chunk (--verify): the chunk's address p
// is its key, word 1 (at p + 8) holds p ^ (2 * 0x9e3779b97f4a7c15), as
// tests/workloads/stress.h's stress_pattern makes it. Returns the address
// of one such word in the process's anonymous memory, 0 when none is found.
uint64_t FindKeptPatternWord(pid_t pid) {
  std::ifstream mem("/proc/" + std::to_string(pid) + "/mem", std::ios::binary);
  for (const RawMapping& m : ReadSmapsIndependently(pid)) {
    if (m.perms != "rw-p" || m.inode != 0 || !m.path.empty() || m.rss_kb == 0) continue;
    std::vector<uint64_t> words((m.end - m.start) / sizeof(uint64_t));
    mem.clear();
    mem.seekg(static_cast<std::streamoff>(m.start));
    if (!mem.read(reinterpret_cast<char*>(words.data()),
                  static_cast<std::streamsize>(words.size() * sizeof(uint64_t)))) {
      continue;
    }
    for (std::size_t i = 2; i < words.size(); ++i) {
      const uint64_t chunk = m.start + (i - 1) * sizeof(uint64_t);
      if (words[i] == (chunk ^ (2 * 0x9e3779b97f4a7c15ull))) return m.start + i * sizeof(uint64_t);
    }
  }
  return 0;
}

// --verify is worth something only if it sees a damaged chunk: one word of a
// kept chunk overwritten from outside makes the final line count an error
// and the exit status 1.
TEST(FragmenterAllocatorVerify, CountsAWordChangedFromOutside) {
  TempDir dir;
  SpawnOptions options;
  options.stdout_path = dir / "out";
  Process p = StartFragmenter(
      dir, {"--threads", "2", "--rounds", "1", "--burst-mib", "4", "--verify"}, "", options);
  ASSERT_TRUE(p.running());
  const uint64_t word = FindKeptPatternWord(p.pid());
  ASSERT_NE(word, 0u) << "no kept chunk found";
  {
    std::fstream mem("/proc/" + std::to_string(p.pid()) + "/mem",
                     std::ios::binary | std::ios::in | std::ios::out);
    mem.seekp(static_cast<std::streamoff>(word));
    const uint64_t zero = 0;
    ASSERT_TRUE(mem.write(reinterpret_cast<const char*>(&zero), sizeof zero));
  }
  EXPECT_EQ(p.Stop(SIGTERM, 30s), 1);
  const std::string out = ReadFile(dir / "out");
  EXPECT_NE(out.find(" errors=1\n"), std::string::npos) << out;
}

// --main-top-mib shapes a glibc heap: a musl build refuses it as a usage error.
TEST(FragmenterAllocatorMusl, RefusesMainTopMib) {
  const std::string binary = FragmenterBinFor("musl");
  ASSERT_FALSE(binary.empty()) << "fragmenter_musl was not built" << kInstall;
  RunResult r = RunCommand({binary, "--main-top-mib", "8"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--main-top-mib"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace memtrimd::testing

#include <gtest/gtest.h>

#include <stdlib.h>
#include "tests/unit/fixtures.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "collectors/cgroup/cgroup_collector.h"
#include "collectors/cgroup/cgroup_files.h"
#include "collectors/sample.h"

namespace memtrimd::cgroup {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

using test::FixturePath;
using test::ReadFixture;

// Non-empty lines: each is one key of a flat keyed file.
std::size_t CountLines(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) n += line.empty() ? 0 : 1;
  return n;
}

// ---------------------------------------------------------------------------
// /proc/<pid>/cgroup.

TEST(ParseProcCgroup, V1LimitedIsHybrid) {
  // The recording host mounts v1 controllers and an empty v2 hierarchy.
  Result<ProcCgroup> pc = ParseProcCgroup(ReadFixture("cgroup/v1/limited/proc_pid_cgroup"));
  ASSERT_TRUE(pc.ok()) << pc.status().message();
  ASSERT_TRUE(pc->v1_memory.has_value());
  EXPECT_EQ(*pc->v1_memory, "/memtrimd-fixture");
  ASSERT_TRUE(pc->unified.has_value());
  EXPECT_EQ(*pc->unified, "/");
}

TEST(ParseProcCgroup, V1Unlimited) {
  Result<ProcCgroup> pc = ParseProcCgroup(ReadFixture("cgroup/v1/unlimited/proc_pid_cgroup"));
  ASSERT_TRUE(pc.ok()) << pc.status().message();
  ASSERT_TRUE(pc->v1_memory.has_value());
  EXPECT_EQ(*pc->v1_memory, "/");
  ASSERT_TRUE(pc->unified.has_value());
  EXPECT_EQ(*pc->unified, "/");
}

TEST(ParseProcCgroup, V2Limited) {
  Result<ProcCgroup> pc = ParseProcCgroup(ReadFixture("cgroup/v2/limited/proc_pid_cgroup"));
  ASSERT_TRUE(pc.ok()) << pc.status().message();
  EXPECT_FALSE(pc->v1_memory.has_value());
  ASSERT_TRUE(pc->unified.has_value());
  EXPECT_EQ(
      *pc->unified,
      "/kubepods.slice/kubepods-burstable.slice/"
      "kubepods-burstable-pod4f1c2d3e_5a6b_4c7d_8e9f_0a1b2c3d4e5f.slice/"
      "cri-containerd-3c9e1f0a5b7d2e4c6a8b0d1f3e5a7c9b2d4f6e8a0c1b3d5f7e9a1c3b5d7f9e0a.scope");
}

TEST(ParseProcCgroup, V2Unlimited) {
  Result<ProcCgroup> pc = ParseProcCgroup(ReadFixture("cgroup/v2/unlimited/proc_pid_cgroup"));
  ASSERT_TRUE(pc.ok()) << pc.status().message();
  EXPECT_FALSE(pc->v1_memory.has_value());
  ASSERT_TRUE(pc->unified.has_value());
  EXPECT_EQ(pc->unified->rfind("/kubepods.slice/kubepods-besteffort.slice/", 0), 0u)
      << *pc->unified;
  EXPECT_EQ(pc->unified->back(), 'e');  // "...scope", no trailing newline
}

TEST(ParseProcCgroup, HybridYieldsBoth) {
  Result<ProcCgroup> pc = ParseProcCgroup(
      "12:pids:/docker/abc\n"
      "11:cpu,cpuacct:/docker/abc\n"
      "4:memory:/docker/abc\n"
      "1:name=systemd:/docker/abc\n"
      "0::/system.slice/docker-abc.scope\n");
  ASSERT_TRUE(pc.ok()) << pc.status().message();
  ASSERT_TRUE(pc->v1_memory.has_value());
  EXPECT_EQ(*pc->v1_memory, "/docker/abc");
  ASSERT_TRUE(pc->unified.has_value());
  EXPECT_EQ(*pc->unified, "/system.slice/docker-abc.scope");
}

TEST(ParseProcCgroup, MemoryInAControllerList) {
  Result<ProcCgroup> pc = ParseProcCgroup("7:memory,hugetlb:/x\n3:cpu,cpuacct:/y\n");
  ASSERT_TRUE(pc.ok()) << pc.status().message();
  ASSERT_TRUE(pc->v1_memory.has_value());
  EXPECT_EQ(*pc->v1_memory, "/x");
  EXPECT_FALSE(pc->unified.has_value());
  Result<ProcCgroup> last = ParseProcCgroup("7:hugetlb,memory:/z");
  ASSERT_TRUE(last.ok()) << last.status().message();
  EXPECT_EQ(last->v1_memory.value_or(""), "/z");
}

TEST(ParseProcCgroup, ControllerNamesMustMatchExactly) {
  // "memory_x" is not "memory"; a named hierarchy is not a controller.
  Result<ProcCgroup> pc = ParseProcCgroup("5:memory_x:/a\n1:name=memory:/b\n0::/c\n");
  ASSERT_TRUE(pc.ok()) << pc.status().message();
  EXPECT_FALSE(pc->v1_memory.has_value());
  EXPECT_EQ(pc->unified.value_or(""), "/c");
}

TEST(ParseProcCgroup, PathMayContainColons) {
  Result<ProcCgroup> pc = ParseProcCgroup("0::/a:b/c\n");
  ASSERT_TRUE(pc.ok()) << pc.status().message();
  EXPECT_EQ(pc->unified.value_or(""), "/a:b/c");
}

TEST(ParseProcCgroup, Errors) {
  EXPECT_FALSE(ParseProcCgroup("").ok());
  EXPECT_FALSE(ParseProcCgroup("1:name=systemd:/\n3:cpu:/\n").ok());  // no memory, no v2
  Result<ProcCgroup> bad = ParseProcCgroup("0::/\ngarbage\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kParseError);
  EXPECT_FALSE(ParseProcCgroup("4:memory\n").ok());
}

// ---------------------------------------------------------------------------
// Single-value files.

TEST(ParseMemoryMax, MaxMeansNoLimit) {
  Result<std::optional<uint64_t>> r = ParseMemoryMax("max\n");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->has_value());
  Result<std::optional<uint64_t>> f = ParseMemoryMax(ReadFixture("cgroup/v2/unlimited/memory.max"));
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_FALSE(f->has_value());
}

TEST(ParseMemoryMax, Number) {
  Result<std::optional<uint64_t>> r = ParseMemoryMax(ReadFixture("cgroup/v2/limited/memory.max"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ(**r, 600 * kMiB);
  Result<std::optional<uint64_t>> zero = ParseMemoryMax("0\n");
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(zero->value_or(1), 0u);
}

TEST(ParseMemoryMax, GarbageIsAnError) {
  for (const char* text : {"", "\n", "abc\n", "-1\n", "1G\n", "MAX\n", "max max\n", "12 34\n"}) {
    Result<std::optional<uint64_t>> r = ParseMemoryMax(text);
    ASSERT_FALSE(r.ok()) << '"' << text << '"';
    EXPECT_EQ(r.status().code(), ErrorCode::kParseError);
  }
}

TEST(ParseV1Limit, HugeValueMeansNoLimit) {
  Result<std::optional<uint64_t>> r = ParseV1Limit("9223372036854771712\n");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->has_value());
  Result<std::optional<uint64_t>> f =
      ParseV1Limit(ReadFixture("cgroup/v1/unlimited/memory.limit_in_bytes"));
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_FALSE(f->has_value());
  Result<std::optional<uint64_t>> at = ParseV1Limit(std::to_string(1ull << 62));
  ASSERT_TRUE(at.ok());
  EXPECT_FALSE(at->has_value());
}

TEST(ParseV1Limit, RealLimit) {
  Result<std::optional<uint64_t>> r = ParseV1Limit("1073741824\n");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ(**r, kGiB);
  Result<std::optional<uint64_t>> f =
      ParseV1Limit(ReadFixture("cgroup/v1/limited/memory.limit_in_bytes"));
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->value_or(0), kGiB);
  Result<std::optional<uint64_t>> below = ParseV1Limit(std::to_string((1ull << 62) - 4096));
  ASSERT_TRUE(below.ok());
  EXPECT_EQ(below->value_or(0), (1ull << 62) - 4096);
}

TEST(ParseV1Limit, GarbageIsAnError) {
  EXPECT_FALSE(ParseV1Limit("").ok());
  EXPECT_FALSE(ParseV1Limit("max\n").ok());
  EXPECT_FALSE(ParseV1Limit("-1\n").ok());
}

TEST(ParseSingleValue, Numbers) {
  Result<uint64_t> cur = ParseSingleValue(ReadFixture("cgroup/v2/limited/memory.current"));
  ASSERT_TRUE(cur.ok()) << cur.status().message();
  EXPECT_EQ(*cur, 607318016u);
  Result<uint64_t> usage = ParseSingleValue(ReadFixture("cgroup/v1/limited/memory.usage_in_bytes"));
  ASSERT_TRUE(usage.ok()) << usage.status().message();
  EXPECT_EQ(*usage, 578543616u);
  Result<uint64_t> padded = ParseSingleValue(" 5 \n");
  ASSERT_TRUE(padded.ok());
  EXPECT_EQ(*padded, 5u);
}

TEST(ParseSingleValue, GarbageIsAnError) {
  EXPECT_FALSE(ParseSingleValue("").ok());
  EXPECT_FALSE(ParseSingleValue("max\n").ok());
  EXPECT_FALSE(ParseSingleValue("1 2\n").ok());
  EXPECT_FALSE(ParseSingleValue("18446744073709551616\n").ok());
}

// ---------------------------------------------------------------------------
// Flat keyed files.

TEST(ParseFlatKeyed, V1MemoryStat) {
  std::string text = ReadFixture("cgroup/v1/limited/memory.stat");
  auto kv = ParseFlatKeyed(text);
  ASSERT_TRUE(kv.ok()) << kv.status().message();
  EXPECT_EQ(kv->size(), CountLines(text));
  EXPECT_EQ(kv->at("cache"), 4096u);
  EXPECT_EQ(kv->at("rss"), 576483328u);
  EXPECT_EQ(kv->at("total_rss"), 576483328u);
  EXPECT_EQ(kv->at("total_cache"), 4096u);
  EXPECT_EQ(kv->at("pgfault"), 140780u);
  EXPECT_EQ(kv->at("hierarchical_memory_limit"), kGiB);
  EXPECT_EQ(kv->at("hierarchical_memsw_limit"), 9223372036854771712u);
  EXPECT_EQ(kv->at("total_unevictable"), 0u);  // the last line
  EXPECT_EQ(kv->count("anon"), 0u);
}

TEST(ParseFlatKeyed, V1OomControl) {
  std::string text = ReadFixture("cgroup/v1/limited/memory.oom_control");
  auto kv = ParseFlatKeyed(text);
  ASSERT_TRUE(kv.ok()) << kv.status().message();
  EXPECT_EQ(kv->size(), 3u);
  EXPECT_EQ(kv->at("oom_kill_disable"), 0u);
  EXPECT_EQ(kv->at("under_oom"), 0u);
  EXPECT_EQ(kv->at("oom_kill"), 0u);
}

TEST(ParseFlatKeyed, V2MemoryStat) {
  std::string text = ReadFixture("cgroup/v2/unlimited/memory.stat");
  auto kv = ParseFlatKeyed(text);
  ASSERT_TRUE(kv.ok()) << kv.status().message();
  EXPECT_EQ(kv->size(), CountLines(text));
  EXPECT_EQ(kv->at("anon"), 154083328u);
  EXPECT_EQ(kv->at("file"), 61865984u);
  EXPECT_EQ(kv->at("shmem"), 2097152u);
  EXPECT_EQ(kv->at("slab"), 6321808u);
  EXPECT_EQ(kv->at("slab"), kv->at("slab_reclaimable") + kv->at("slab_unreclaimable"));
  // shmem sits on the anon LRU lists but is counted in "file".
  EXPECT_EQ(kv->at("anon") + kv->at("shmem"), kv->at("inactive_anon") + kv->at("active_anon"));
  EXPECT_EQ(kv->at("file") - kv->at("shmem"), kv->at("inactive_file") + kv->at("active_file"));
  EXPECT_EQ(kv->at("thp_fault_alloc"), 6u);
  EXPECT_EQ(kv->at("thp_swpout_fallback"), 0u);
}

TEST(ParseFlatKeyed, V2MemoryEvents) {
  std::string text = ReadFixture("cgroup/v2/limited/memory.events");
  auto kv = ParseFlatKeyed(text);
  ASSERT_TRUE(kv.ok()) << kv.status().message();
  EXPECT_EQ(kv->size(), 6u);
  EXPECT_EQ(kv->at("max"), 14u);
  EXPECT_EQ(kv->at("oom_kill"), 0u);
  EXPECT_EQ(kv->at("oom_group_kill"), 0u);
  EXPECT_EQ(kv->at("low"), 0u);
}

TEST(ParseFlatKeyed, UnknownKeysAreKept) {
  auto kv = ParseFlatKeyed("anon 1\nsome_future_counter 77\n\nzswap_writeback 3");
  ASSERT_TRUE(kv.ok()) << kv.status().message();
  EXPECT_EQ(kv->size(), 3u);
  EXPECT_EQ(kv->at("some_future_counter"), 77u);
  EXPECT_EQ(kv->at("zswap_writeback"), 3u);
  auto it = kv->find(std::string_view("anon"));  // heterogeneous lookup
  ASSERT_NE(it, kv->end());
  EXPECT_EQ(it->second, 1u);
}

TEST(ParseFlatKeyed, MalformedLinesAreErrors) {
  EXPECT_FALSE(ParseFlatKeyed("anon\n").ok());
  EXPECT_FALSE(ParseFlatKeyed("anon abc\n").ok());
  EXPECT_FALSE(ParseFlatKeyed("anon 1 2\n").ok());
  EXPECT_FALSE(ParseFlatKeyed("anon -1\n").ok());
  auto empty = ParseFlatKeyed("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

// ---------------------------------------------------------------------------
// CgroupCollector end to end against a /proc/<pid> tree in a temp dir.

class CgroupCollectorTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "memtrimd-cgroup-test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    tmp_ = tmpl;
    proc_dir_ = tmp_ / "proc" / "42";
    mount_ = proc_dir_ / "root" / "sys" / "fs" / "cgroup";
    fs::create_directories(proc_dir_);
    target_.pid = 42;
    target_.proc_dir = proc_dir_.string();
  }

  void TearDown() override {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_FALSE(fs::exists(tmp_));
  }

  void WriteFile(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out << text;
    ASSERT_TRUE(out.good()) << path;
  }

  void WriteProcCgroup(const std::string& text) { WriteFile(proc_dir_ / "cgroup", text); }

  // Copies the fixture directory's memory.* files into `dir`.
  void CopyMemoryFiles(const std::string& fixture_dir, const fs::path& dir) {
    fs::create_directories(dir);
    for (const auto& entry : fs::directory_iterator(FixturePath(fixture_dir))) {
      std::string name = entry.path().filename().string();
      if (name.rfind("memory.", 0) != 0) continue;
      fs::copy_file(entry.path(), dir / name, fs::copy_options::overwrite_existing);
    }
  }

  // "/kubepods.slice/..." -> <mount>/kubepods.slice/...
  fs::path Under(const fs::path& root, const std::string& cgroup_path) {
    return fs::path(root.string() + cgroup_path);
  }

  std::string Trimmed(const std::string& text) {
    std::string s = text;
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }

  fs::path tmp_, proc_dir_, mount_;
  Target target_;
};

TEST_F(CgroupCollectorTest, V2Limited) {
  std::string pc = ReadFixture("cgroup/v2/limited/proc_pid_cgroup");
  WriteProcCgroup(pc);
  const std::string path = Trimmed(pc.substr(3));  // after "0::"
  const fs::path group = Under(mount_, path);
  CopyMemoryFiles("cgroup/v2/limited", group);

  CgroupCollector collector(std::nullopt);
  EXPECT_EQ(collector.Name(), "cgroup");
  TargetSample out;
  Status st = collector.Collect(target_, out);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(out.cgroup.has_value());
  const CgroupMemory& m = *out.cgroup;
  EXPECT_EQ(m.version, 2);
  EXPECT_EQ(fs::path(m.path), group);
  EXPECT_EQ(m.limit_bytes, std::optional<uint64_t>(600 * kMiB));
  EXPECT_EQ(m.limit_source, LimitSource::kCgroup);
  EXPECT_EQ(m.usage_bytes, std::optional<uint64_t>(607318016));
  EXPECT_EQ(m.anon_bytes, std::optional<uint64_t>(578813952));
  EXPECT_EQ(m.file_bytes, std::optional<uint64_t>(23244800));
  EXPECT_EQ(m.oom_kills, std::optional<uint64_t>(0));
  EXPECT_FALSE(out.process.has_value());
  EXPECT_FALSE(out.glibc.has_value());
}

TEST_F(CgroupCollectorTest, V2Unlimited) {
  std::string pc = ReadFixture("cgroup/v2/unlimited/proc_pid_cgroup");
  WriteProcCgroup(pc);
  const fs::path group = Under(mount_, Trimmed(pc.substr(3)));
  CopyMemoryFiles("cgroup/v2/unlimited", group);

  CgroupCollector collector(std::nullopt);
  TargetSample out;
  Status st = collector.Collect(target_, out);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(out.cgroup.has_value());
  const CgroupMemory& m = *out.cgroup;
  EXPECT_EQ(m.version, 2);
  EXPECT_EQ(fs::path(m.path), group);
  EXPECT_EQ(m.limit_bytes, std::nullopt);
  EXPECT_EQ(m.limit_source, LimitSource::kNone);
  EXPECT_EQ(m.usage_bytes, std::optional<uint64_t>(225390592));
  EXPECT_EQ(m.anon_bytes, std::optional<uint64_t>(154083328));
  EXPECT_EQ(m.file_bytes, std::optional<uint64_t>(61865984));
  EXPECT_EQ(m.oom_kills, std::optional<uint64_t>(0));
}

TEST_F(CgroupCollectorTest, V2FallbackLimitIsIgnoredWhenTheCgroupIsRead) {
  std::string pc = ReadFixture("cgroup/v2/unlimited/proc_pid_cgroup");
  WriteProcCgroup(pc);
  CopyMemoryFiles("cgroup/v2/unlimited", Under(mount_, Trimmed(pc.substr(3))));
  CgroupCollector collector(512 * kMiB);
  TargetSample out;
  ASSERT_TRUE(collector.Collect(target_, out).ok());
  ASSERT_TRUE(out.cgroup.has_value());
  EXPECT_EQ(out.cgroup->limit_bytes, std::nullopt);
  EXPECT_EQ(out.cgroup->limit_source, LimitSource::kNone);
  EXPECT_EQ(out.cgroup->version, 2);
}

TEST_F(CgroupCollectorTest, V2PathOutsideTheNamespaceUsesTheMountRoot) {
  // Seen from another cgroup namespace, the path climbs out with "/..".
  WriteProcCgroup("0::/../../kubepods-burstable-pod1.slice/cri-containerd-1.scope\n");
  CopyMemoryFiles("cgroup/v2/limited", mount_);

  CgroupCollector collector(std::nullopt);
  TargetSample out;
  Status st = collector.Collect(target_, out);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(out.cgroup.has_value());
  EXPECT_EQ(out.cgroup->version, 2);
  EXPECT_EQ(fs::path(out.cgroup->path), mount_);
  EXPECT_EQ(out.cgroup->limit_bytes, std::optional<uint64_t>(600 * kMiB));
  EXPECT_EQ(out.cgroup->usage_bytes, std::optional<uint64_t>(607318016));
  EXPECT_EQ(out.cgroup->anon_bytes, std::optional<uint64_t>(578813952));
}

TEST_F(CgroupCollectorTest, V2RootPathInOwnNamespace) {
  WriteProcCgroup("0::/\n");
  CopyMemoryFiles("cgroup/v2/unlimited", mount_);
  CgroupCollector collector(std::nullopt);
  TargetSample out;
  Status st = collector.Collect(target_, out);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(out.cgroup.has_value());
  EXPECT_EQ(fs::path(out.cgroup->path), mount_);
  EXPECT_EQ(out.cgroup->usage_bytes, std::optional<uint64_t>(225390592));
}

TEST_F(CgroupCollectorTest, V2MissingGroupFallsBackToTheMountRoot) {
  // The host path does not exist inside the target's mount namespace.
  WriteProcCgroup("0::/system.slice/elsewhere.scope\n");
  CopyMemoryFiles("cgroup/v2/limited", mount_);
  CgroupCollector collector(std::nullopt);
  TargetSample out;
  ASSERT_TRUE(collector.Collect(target_, out).ok());
  ASSERT_TRUE(out.cgroup.has_value());
  EXPECT_EQ(fs::path(out.cgroup->path), mount_);
  EXPECT_EQ(out.cgroup->limit_bytes, std::optional<uint64_t>(600 * kMiB));
}

TEST_F(CgroupCollectorTest, V2LowerAncestorLimitWins) {
  WriteProcCgroup("0::/kubepods.slice/pod1.slice/ctr1.scope\n");
  const fs::path pod = Under(mount_, "/kubepods.slice/pod1.slice");
  const fs::path group = pod / "ctr1.scope";
  CopyMemoryFiles("cgroup/v2/limited", group);   // memory.max 600 MiB
  WriteFile(pod / "memory.max", "268435456\n");  // the pod: 256 MiB
  WriteFile(Under(mount_, "/kubepods.slice") / "memory.max", "max\n");

  CgroupCollector collector(std::nullopt);
  TargetSample out;
  Status st = collector.Collect(target_, out);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(out.cgroup.has_value());
  EXPECT_EQ(fs::path(out.cgroup->path), group);
  EXPECT_EQ(out.cgroup->limit_bytes, std::optional<uint64_t>(256 * kMiB));
  EXPECT_EQ(out.cgroup->limit_source, LimitSource::kCgroup);
  EXPECT_EQ(out.cgroup->usage_bytes, std::optional<uint64_t>(607318016));
}

TEST_F(CgroupCollectorTest, V2HigherAncestorLimitDoesNotRaiseTheGroups) {
  WriteProcCgroup("0::/kubepods.slice/pod1.slice/ctr1.scope\n");
  const fs::path pod = Under(mount_, "/kubepods.slice/pod1.slice");
  CopyMemoryFiles("cgroup/v2/limited", pod / "ctr1.scope");  // 600 MiB
  WriteFile(pod / "memory.max", std::to_string(2 * kGiB) + "\n");
  CgroupCollector collector(std::nullopt);
  TargetSample out;
  ASSERT_TRUE(collector.Collect(target_, out).ok());
  ASSERT_TRUE(out.cgroup.has_value());
  EXPECT_EQ(out.cgroup->limit_bytes, std::optional<uint64_t>(600 * kMiB));
}

TEST_F(CgroupCollectorTest, V2AncestorLimitAppliesToAnUnlimitedGroup) {
  WriteProcCgroup("0::/kubepods.slice/pod1.slice/ctr1.scope\n");
  const fs::path pod = Under(mount_, "/kubepods.slice/pod1.slice");
  CopyMemoryFiles("cgroup/v2/unlimited", pod / "ctr1.scope");  // max
  WriteFile(pod / "memory.max", "1073741824\n");
  CgroupCollector collector(std::nullopt);
  TargetSample out;
  ASSERT_TRUE(collector.Collect(target_, out).ok());
  ASSERT_TRUE(out.cgroup.has_value());
  EXPECT_EQ(out.cgroup->limit_bytes, std::optional<uint64_t>(kGiB));
  EXPECT_EQ(out.cgroup->limit_source, LimitSource::kCgroup);
}

TEST_F(CgroupCollectorTest, V2WithoutMemoryEventsHasNoOomKills) {
  WriteProcCgroup("0::/\n");
  CopyMemoryFiles("cgroup/v2/limited", mount_);
  fs::remove(mount_ / "memory.events");
  CgroupCollector collector(std::nullopt);
  TargetSample out;
  ASSERT_TRUE(collector.Collect(target_, out).ok());
  ASSERT_TRUE(out.cgroup.has_value());
  EXPECT_EQ(out.cgroup->oom_kills, std::nullopt);
  EXPECT_EQ(out.cgroup->anon_bytes, std::optional<uint64_t>(578813952));
}

TEST_F(CgroupCollectorTest, V2OomKillsAreReported) {
  WriteProcCgroup("0::/\n");
  CopyMemoryFiles("cgroup/v2/limited", mount_);
  WriteFile(mount_ / "memory.events",
            "low 0\nhigh 0\nmax 14\noom 3\noom_kill 2\noom_group_kill 0\n");
  CgroupCollector collector(std::nullopt);
  TargetSample out;
  ASSERT_TRUE(collector.Collect(target_, out).ok());
  ASSERT_TRUE(out.cgroup.has_value());
  EXPECT_EQ(out.cgroup->oom_kills, std::optional<uint64_t>(2));
}

TEST_F(CgroupCollectorTest, V1Limited) {
  WriteProcCgroup(ReadFixture("cgroup/v1/limited/proc_pid_cgroup"));  // hybrid: v1 memory wins
  const fs::path group = mount_ / "memory" / "memtrimd-fixture";
  CopyMemoryFiles("cgroup/v1/limited", group);

  CgroupCollector collector(std::nullopt);
  TargetSample out;
  Status st = collector.Collect(target_, out);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(out.cgroup.has_value());
  const CgroupMemory& m = *out.cgroup;
  EXPECT_EQ(m.version, 1);
  EXPECT_EQ(fs::path(m.path), group);
  EXPECT_EQ(m.limit_bytes, std::optional<uint64_t>(kGiB));
  EXPECT_EQ(m.limit_source, LimitSource::kCgroup);
  EXPECT_EQ(m.usage_bytes, std::optional<uint64_t>(578543616));
  EXPECT_EQ(m.anon_bytes, std::optional<uint64_t>(576483328));  // total_rss
  EXPECT_EQ(m.file_bytes, std::optional<uint64_t>(4096));       // total_cache
  EXPECT_EQ(m.oom_kills, std::optional<uint64_t>(0));
}

TEST_F(CgroupCollectorTest, V1Unlimited) {
  WriteProcCgroup(ReadFixture("cgroup/v1/unlimited/proc_pid_cgroup"));  // 4:memory:/
  const fs::path group = mount_ / "memory";
  CopyMemoryFiles("cgroup/v1/unlimited", group);

  CgroupCollector collector(std::nullopt);
  TargetSample out;
  Status st = collector.Collect(target_, out);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(out.cgroup.has_value());
  const CgroupMemory& m = *out.cgroup;
  EXPECT_EQ(m.version, 1);
  EXPECT_EQ(fs::path(m.path), group);
  EXPECT_EQ(m.limit_bytes, std::nullopt);
  EXPECT_EQ(m.limit_source, LimitSource::kNone);
  EXPECT_EQ(m.usage_bytes, std::optional<uint64_t>(275767296));
  EXPECT_EQ(m.anon_bytes, std::optional<uint64_t>(2895872));
  EXPECT_EQ(m.file_bytes, std::optional<uint64_t>(270065664));
  EXPECT_EQ(m.oom_kills, std::optional<uint64_t>(0));
}

TEST_F(CgroupCollectorTest, V1HierarchicalLimitWins) {
  WriteProcCgroup("4:memory:/parent/child\n");
  const fs::path group = mount_ / "memory" / "parent" / "child";
  CopyMemoryFiles("cgroup/v1/unlimited", group);
  std::string stat = ReadFixture("cgroup/v1/unlimited/memory.stat");
  const std::string key = "\nhierarchical_memory_limit 9223372036854771712\n";
  std::size_t at = stat.find(key);
  ASSERT_NE(at, std::string::npos);
  stat.replace(at, key.size(), "\nhierarchical_memory_limit 536870912\n");
  WriteFile(group / "memory.stat", stat);

  CgroupCollector collector(std::nullopt);
  TargetSample out;
  ASSERT_TRUE(collector.Collect(target_, out).ok());
  ASSERT_TRUE(out.cgroup.has_value());
  EXPECT_EQ(out.cgroup->limit_bytes, std::optional<uint64_t>(512 * kMiB));
  EXPECT_EQ(out.cgroup->limit_source, LimitSource::kCgroup);
}

TEST_F(CgroupCollectorTest, NoCgroupFilesWithFallbackLimit) {
  WriteProcCgroup(ReadFixture("cgroup/v2/limited/proc_pid_cgroup"));  // but no sys/fs/cgroup
  CgroupCollector collector(512 * kMiB);
  TargetSample out;
  Status st = collector.Collect(target_, out);
  EXPECT_FALSE(st.ok());
  ASSERT_TRUE(out.cgroup.has_value());
  EXPECT_EQ(out.cgroup->limit_bytes, std::optional<uint64_t>(512 * kMiB));
  EXPECT_EQ(out.cgroup->limit_source, LimitSource::kFlag);
  EXPECT_EQ(out.cgroup->version, 0);
  EXPECT_EQ(out.cgroup->usage_bytes, std::nullopt);
}

TEST_F(CgroupCollectorTest, NoCgroupFilesWithoutFallback) {
  WriteProcCgroup(ReadFixture("cgroup/v2/limited/proc_pid_cgroup"));
  CgroupCollector collector(std::nullopt);
  TargetSample out;
  Status st = collector.Collect(target_, out);
  EXPECT_FALSE(st.ok());
  EXPECT_FALSE(out.cgroup.has_value());
}

TEST_F(CgroupCollectorTest, NoProcCgroupFileAtAll) {
  CgroupCollector with_fallback(512 * kMiB);
  TargetSample out;
  Status st = with_fallback.Collect(target_, out);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kNotFound);
  ASSERT_TRUE(out.cgroup.has_value());
  EXPECT_EQ(out.cgroup->limit_source, LimitSource::kFlag);

  CgroupCollector without(std::nullopt);
  TargetSample out2;
  EXPECT_FALSE(without.Collect(target_, out2).ok());
  EXPECT_FALSE(out2.cgroup.has_value());
}

TEST_F(CgroupCollectorTest, MalformedMemoryStatIsAnError) {
  WriteProcCgroup("0::/\n");
  CopyMemoryFiles("cgroup/v2/limited", mount_);
  WriteFile(mount_ / "memory.stat", "anon lots\n");
  CgroupCollector collector(std::nullopt);
  TargetSample out;
  Status st = collector.Collect(target_, out);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kParseError);
  EXPECT_NE(st.message().find("memory.stat"), std::string::npos) << st.message();
  EXPECT_FALSE(out.cgroup.has_value());
}

}  // namespace
}  // namespace memtrimd::cgroup

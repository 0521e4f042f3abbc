// memtrimd in the places it runs: a memory cgroup with a limit, a target
// whose cgroup files cannot be read (fallback limit), a pod-like pid
// namespace with a pause process (automatic target), and `inspect`.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

// The directory of this process's own memory cgroup (v1 or v2), where a
// child group can be made; "" when there is none we may write.
std::string OwnMemoryCgroup(int& version) {
  std::ifstream in("/proc/self/cgroup");
  std::string line, v1, v2;
  while (std::getline(in, line)) {
    std::size_t c1 = line.find(':'), c2 = line.find(':', c1 + 1);
    std::string ctrls = line.substr(c1 + 1, c2 - c1 - 1);
    std::string path = line.substr(c2 + 1);
    if (line.rfind("0::", 0) == 0) v2 = path;
    if ((',' + ctrls + ',').find(",memory,") != std::string::npos) v1 = path;
  }
  if (!v1.empty() && fs::exists("/sys/fs/cgroup/memory" + v1 + "/memory.limit_in_bytes")) {
    version = 1;
    return "/sys/fs/cgroup/memory" + v1;
  }
  if (!v2.empty() && fs::exists("/sys/fs/cgroup" + v2 + "/memory.max")) {
    version = 2;
    return "/sys/fs/cgroup" + v2;
  }
  return "";
}

// A child memory cgroup with a limit, removed (after its processes) at the end.
class LimitedCgroup {
 public:
  explicit LimitedCgroup(uint64_t limit) {
    std::string parent = OwnMemoryCgroup(version_);
    if (parent.empty()) return;
    dir_ = parent + "/memtrimd-test-" + std::to_string(getpid());
    if (mkdir(dir_.c_str(), 0755) != 0) {
      dir_.clear();
      return;
    }
    std::ofstream(dir_ + (version_ == 1 ? "/memory.limit_in_bytes" : "/memory.max")) << limit;
  }
  ~LimitedCgroup() {
    if (!dir_.empty()) rmdir(dir_.c_str());
  }
  bool ok() const { return !dir_.empty(); }
  std::string procs() const { return dir_ + "/cgroup.procs"; }

 private:
  int version_ = 0;
  std::string dir_;
};

TEST(Environment, ReportsTheLimitOfTheTargetsCgroup) {
  if (!IsRoot()) GTEST_SKIP() << "needs root to create a memory cgroup";
  const uint64_t limit = 768ull << 20;
  LimitedCgroup cg(limit);
  if (!cg.ok()) GTEST_SKIP() << "no writable memory cgroup here";
  TempDir dir;
  // The shell moves itself into the cgroup, then becomes the workload.
  std::string ready = dir / "ready";
  Process target({"sh", "-c",
                  "echo $$ > " + cg.procs() + " && exec " + FragmenterBin() +
                      " --quiet --threads 2 --rounds 1 --burst-mib 8 --ready-file " + ready});
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready) || !target.running(); }, 30s));
  ASSERT_TRUE(target.running());
  Memtrimd m({"--target.pid=" + std::to_string(target.pid()), "--sample.interval=200ms"});
  ASSERT_TRUE(m.started()) << m.log();
  Series s = m.Scrape();
  EXPECT_EQ(Find(s, "memtrimd_target_memory_limit_bytes"), static_cast<double>(limit));
  EXPECT_EQ(Find(s, "memtrimd_collector_success", {"cgroup"}), 1.0);
  auto usage = Find(s, "memtrimd_target_cgroup_memory_usage_bytes");
  ASSERT_TRUE(usage);
  EXPECT_GT(*usage, 8.0 * (1 << 20)) << "the workload's memory is charged to the group";
  EXPECT_LT(*usage, static_cast<double>(limit));
  EXPECT_TRUE(Find(s, "memtrimd_target_oom_kills_total").has_value());
  target.Kill();
}

TEST(Environment, UnlimitedCgroupHasNoLimitSeries) {
  Memtrimd m({"--target.pid=" + std::to_string(getpid()), "--sample.interval=200ms"});
  ASSERT_TRUE(m.started()) << m.log();
  Series s = m.Scrape();
  int version = 0;
  std::string own = OwnMemoryCgroup(version);
  std::string limit_file = version == 1 ? own + "/memory.limit_in_bytes" : own + "/memory.max";
  std::string raw = own.empty() ? "" : ReadFile(limit_file);
  bool unlimited = raw.rfind("max", 0) == 0 || raw.rfind("9223372036854", 0) == 0;
  if (!unlimited) GTEST_SKIP() << "this test process runs under a memory limit";
  EXPECT_EQ(Find(s, "memtrimd_collector_success", {"cgroup"}), 1.0);
  EXPECT_FALSE(Find(s, "memtrimd_target_memory_limit_bytes").has_value());
}

TEST(Environment, FallbackLimitOnlyWhenTheCgroupCannotBeRead) {
  if (!IsRoot()) GTEST_SKIP() << "needs root for a private mount namespace";
  TempDir dir;
  std::string ready = dir / "ready";
  // The target sees an empty /sys/fs/cgroup in its own mount namespace, as a
  // container without cgroup files would.
  Process target({"unshare", "--mount", "--propagation", "private", "sh", "-c",
                  "mount -t tmpfs none /sys/fs/cgroup && exec " + FragmenterBin() +
                      " --quiet --threads 1 --rounds 1 --burst-mib 4 --ready-file " + ready});
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready) || !target.running(); }, 30s));
  if (!target.running()) GTEST_SKIP() << "cannot make a private mount namespace here";
  Memtrimd m({"--target.pid=" + std::to_string(target.pid()), "--sample.interval=200ms",
              "--target.memory-limit=512Mi"});
  ASSERT_TRUE(m.started()) << m.log();
  Series s = m.Scrape();
  EXPECT_EQ(Find(s, "memtrimd_collector_success", {"cgroup"}), 0.0);
  EXPECT_EQ(Find(s, "memtrimd_target_memory_limit_bytes"), 512.0 * (1 << 20));
  EXPECT_FALSE(Find(s, "memtrimd_target_cgroup_memory_usage_bytes").has_value());
  // The other collectors still export.
  EXPECT_EQ(Find(s, "memtrimd_collector_success", {"process"}), 1.0);
  EXPECT_TRUE(Find(s, "memtrimd_target_resident_memory_bytes", {"anon"}).has_value());
  // The failure is logged once, not every sample.
  double seen = *Find(s, "memtrimd_samples_total");
  ASSERT_TRUE(WaitFor(
      [&] { return Find(m.Scrape(), "memtrimd_samples_total").value_or(0) >= seen + 3; }, 10s));
  std::string log = m.log();
  std::size_t first = log.find("msg=\"collector failed\" collector=cgroup");
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find("msg=\"collector failed\" collector=cgroup", first + 1), std::string::npos)
      << log;
  target.Kill();
}

TEST(Environment, AutomaticTargetInAPodLikePidNamespace) {
  if (!IsRoot()) GTEST_SKIP() << "needs root for a pid namespace";
  TempDir dir;
  // "pause" is the fragmenter under another name: the largest process, which
  // the rule must still skip because of its name.
  fs::create_symlink(FragmenterBin(), dir / "pause");
  std::string log = dir / "memtrimd.log";
  std::string script = dir / "pause --quiet --threads 8 --rounds 2 --burst-mib 16 --ready-file " +
                       (dir / "pause.ready") + " & " + FragmenterBin() +
                       " --quiet --threads 2 --rounds 1 --burst-mib 8 --ready-file " +
                       (dir / "app.ready") + " & while [ ! -f " + (dir / "pause.ready") +
                       " ] || [ ! -f " + (dir / "app.ready") + " ]; do sleep 0.05; done; exec " +
                       MemtrimdBin() +
                       " --web.listen-address=127.0.0.1:0 --sample.interval=200ms 2> " + log;
  // unshare's child is pid 1 of the new namespace; when unshare is killed,
  // --kill-child takes the whole namespace down with it.
  Process pod({"unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "sh", "-c",
               "sh -c '" + script + "' & wait"});
  std::string text;
  bool up = WaitFor(
      [&] {
        text = ReadFile(log);
        return text.find("msg=\"target selected\"") != std::string::npos || !pod.running();
      },
      60s);
  if (!pod.running() && text.empty()) GTEST_SKIP() << "cannot make a pid namespace here";
  ASSERT_TRUE(up) << text;
  EXPECT_NE(text.find("msg=\"target selected\""), std::string::npos) << text;
  EXPECT_NE(text.find("comm=fragmenter"), std::string::npos) << text;
  EXPECT_NE(text.find("rule=automatic"), std::string::npos) << text;
  pod.Kill();
}

TEST(Environment, InspectPrintsTableAndJson) {
  TempDir dir;
  Process frag = StartFragmenter(dir, {"--threads", "4", "--rounds", "1", "--burst-mib", "8"});
  ASSERT_TRUE(frag.running());
  std::string pid = std::to_string(frag.pid());
  RunResult t = RunCommand({MemtrimdBin(), "inspect", "--pid", pid});
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("pid " + pid + " (fragmenter), runtime glibc"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("arena heaps                           4"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("Container memory"), std::string::npos) << t.out;
  RunResult j = RunCommand({MemtrimdBin(), "inspect", "--pid", pid, "--json"});
  EXPECT_EQ(j.exit_code, 0) << j.err;
  EXPECT_NE(j.out.find("\"arena_heaps\":4"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"pid\":" + pid), std::string::npos) << j.out;
}

}  // namespace
}  // namespace memtrimd::testing

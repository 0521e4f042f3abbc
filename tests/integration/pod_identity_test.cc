// The cgroup collector's pod identity and pod name for real processes placed
// in cgroups named the way a kubelet and containerd name them (systemd
// driver), each in its own mount namespace with its own /etc/hostname bound
// over the node's (as a container runtime does). Needs root and a memory
// cgroup this process may create groups under; skipped otherwise.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "collectors/cgroup/cgroup_collector.h"
#include "collectors/cgroup/pod_identity.h"
#include "collectors/procfs/target_reader.h"
#include "collectors/sample.h"
#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;
using cgroup::PodIdentity;
using cgroup::QosClass;

constexpr const char* kUid = "0f2b9c4e-6a1d-4f3e-9b8a-2c5d7e1f3a4b";
constexpr const char* kUidUnderscored = "0f2b9c4e_6a1d_4f3e_9b8a_2c5d7e1f3a4b";
constexpr const char* kContainer =
    "4f6c1e0a9b8d7c6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e";
constexpr uint64_t kLimit = 300ull << 20;

// This process's own memory cgroup directory and its version, or "" when
// there is none to write.
std::string OwnMemoryCgroup(int& version) {
  std::ifstream in("/proc/self/cgroup");
  std::string line, v1, v2;
  bool has_v2 = false;
  while (std::getline(in, line)) {
    std::size_t c1 = line.find(':'), c2 = line.find(':', c1 + 1);
    std::string ctrls = line.substr(c1 + 1, c2 - c1 - 1);
    std::string path = line.substr(c2 + 1);
    if (line.rfind("0::", 0) == 0) {
      v2 = path;
      has_v2 = true;
    }
    if ((',' + ctrls + ',').find(",memory,") != std::string::npos) v1 = path;
  }
  if (!v1.empty() && fs::exists("/sys/fs/cgroup/memory" + v1 + "/memory.limit_in_bytes")) {
    version = 1;
    return "/sys/fs/cgroup/memory" + (v1 == "/" ? "" : v1);
  }
  if (has_v2 && fs::exists("/sys/fs/cgroup" + v2 + "/cgroup.procs")) {
    version = 2;
    return "/sys/fs/cgroup" + (v2 == "/" ? "" : v2);
  }
  return "";
}

// Nested groups below this process's memory cgroup; each level it made is
// removed, deepest first, when it goes out of scope (after the processes in
// it, which the test's Process handles end first).
class Groups {
 public:
  explicit Groups(const std::string& rel) {
    std::string dir = OwnMemoryCgroup(version_);
    if (dir.empty()) return;
    std::string path = rel;
    std::size_t at = 1;
    while (at <= path.size()) {
      std::size_t slash = path.find('/', at);
      dir += "/" + path.substr(at, slash == std::string::npos ? slash : slash - at);
      if (!fs::exists(dir)) {
        if (mkdir(dir.c_str(), 0755) != 0) return;
        made_.push_back(dir);
      }
      if (slash == std::string::npos) break;
      at = slash + 1;
    }
    leaf_ = dir;
  }
  ~Groups() {
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
      // A killed process can take a moment to leave the group.
      WaitFor([&] { return rmdir(it->c_str()) == 0 || errno == ENOENT; }, 5s);
    }
  }
  Groups(const Groups&) = delete;
  Groups& operator=(const Groups&) = delete;
  bool ok() const { return !leaf_.empty(); }
  const std::string& leaf() const { return leaf_; }
  void SetLimit(uint64_t bytes) const {
    std::ofstream(leaf_ + (version_ == 1 ? "/memory.limit_in_bytes" : "/memory.max")) << bytes;
  }

 private:
  int version_ = 0;
  std::vector<std::string> made_;
  std::string leaf_;
};

std::string PodGroup(const std::string& uid_, const std::string& container) {
  return std::string("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod") + uid_ +
         ".slice/cri-containerd-" + container + ".scope";
}

// A `sleep` that moved itself into `group` and sees `hostname_file` as its
// /etc/hostname (its own mount namespace; with `own_uts`, its own hostname
// namespace too, as every pod without hostNetwork has).
Process StartInGroup(const std::string& group, const std::string& hostname_file, bool own_uts) {
  std::vector<std::string> argv = {"unshare", "--mount", "--propagation", "private"};
  if (own_uts) argv.push_back("--uts");
  std::string script = "echo $$ > '" + group + "/cgroup.procs' && ";
  if (!hostname_file.empty()) script += "mount --bind '" + hostname_file + "' /etc/hostname && ";
  script += "exec sleep 600";
  argv.insert(argv.end(), {"sh", "-c", script});
  return Process(argv);
}

bool BecameSleep(Process& p) {
  return WaitFor(
             [&] {
               return ReadFile("/proc/" + std::to_string(p.pid()) + "/comm") == "sleep\n" ||
                      !p.running();
             },
             30s) &&
         p.running();
}

TargetSample Collect(pid_t pid, const std::string& node_proc_dir) {
  TargetSample s;
  Result<Target> t = procfs::ReadTarget("/proc", pid);
  EXPECT_TRUE(t.ok()) << t.status().message();
  if (!t.ok()) return s;
  // A failure leaves s.cgroup empty: the tests skip (no memory files in a
  // group made here, e.g. a cgroup v2 parent without the memory controller).
  cgroup::CgroupCollector c(std::nullopt, node_proc_dir);
  (void)c.Collect(*t, s);
  return s;
}

std::string Self() { return "/proc/" + std::to_string(getpid()); }

class PodIdentityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to create cgroups and mount namespaces";
  }
};

TEST_F(PodIdentityTest, PodUidContainerQosLimitAndNameOfARealProcess) {
  Groups g(PodGroup(kUidUnderscored, kContainer));
  if (!g.ok()) GTEST_SKIP() << "no memory cgroup to create groups under";
  g.SetLimit(kLimit);
  TempDir dir;
  WriteFile(dir / "hostname", "web-7d4b9c8f6-x2x9q\n");
  Process target = StartInGroup(g.leaf(), dir / "hostname", true);
  ASSERT_TRUE(BecameSleep(target));
  // The test process is the node's stand-in: not in a pod, another hostname
  // namespace than the target's.
  TargetSample s = Collect(target.pid(), Self());
  if (!s.cgroup) GTEST_SKIP() << "no memory files in the groups made here";
  ASSERT_TRUE(s.cgroup->pod.has_value());
  EXPECT_EQ(*s.cgroup->pod, (PodIdentity{kUid, kContainer, "containerd", QosClass::kBurstable}));
  EXPECT_EQ(s.cgroup->pod_name, "web-7d4b9c8f6-x2x9q");
  // The container's own limit, from the group memtrimd found through the
  // target's /proc/<pid>/cgroup.
  ASSERT_TRUE(s.cgroup->limit_bytes.has_value());
  EXPECT_EQ(*s.cgroup->limit_bytes, kLimit);
  EXPECT_EQ(
      s.cgroup->path.substr(s.cgroup->path.size() - PodGroup(kUidUnderscored, kContainer).size()),
      PodGroup(kUidUnderscored, kContainer));
}

TEST_F(PodIdentityTest, HostNetworkPodGetsNoNameUnlessThereIsNoNodeToCompareWith) {
  Groups g(PodGroup(kUidUnderscored, kContainer));
  if (!g.ok()) GTEST_SKIP() << "no memory cgroup to create groups under";
  TempDir dir;
  WriteFile(dir / "hostname", "web-7d4b9c8f6-x2x9q\n");
  // Same hostname namespace as the node: a hostNetwork pod, whose
  // /etc/hostname holds the node's name.
  Process target = StartInGroup(g.leaf(), dir / "hostname", false);
  ASSERT_TRUE(BecameSleep(target));
  TargetSample s = Collect(target.pid(), Self());
  if (!s.cgroup) GTEST_SKIP() << "no memory files in the groups made here";
  ASSERT_TRUE(s.cgroup->pod);
  EXPECT_EQ(s.cgroup->pod->pod_uid, kUid);
  EXPECT_EQ(s.cgroup->pod_name, "");
  // Compared with a process that is itself in a pod (a sidecar's pause
  // process as PID 1), nothing says which namespace is the node's.
  TargetSample in_pod = Collect(target.pid(), "/proc/" + std::to_string(target.pid()));
  ASSERT_TRUE(in_pod.cgroup && in_pod.cgroup->pod);
  EXPECT_EQ(in_pod.cgroup->pod_name, "web-7d4b9c8f6-x2x9q");
}

TEST_F(PodIdentityTest, NameThatIsNotAPodNameAndAFifoAreIgnored) {
  Groups g(PodGroup(kUidUnderscored, kContainer));
  if (!g.ok()) GTEST_SKIP() << "no memory cgroup to create groups under";
  TempDir dir;
  WriteFile(dir / "hostname", "Not_A_Pod_Name\n");
  Process bad = StartInGroup(g.leaf(), dir / "hostname", true);
  ASSERT_TRUE(BecameSleep(bad));
  TargetSample s = Collect(bad.pid(), Self());
  if (!s.cgroup) GTEST_SKIP() << "no memory files in the groups made here";
  ASSERT_TRUE(s.cgroup->pod);
  EXPECT_EQ(s.cgroup->pod_name, "");
  // A FIFO with no writer: opening it for reading would wait for one.
  ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0644), 0);
  Process fifo = StartInGroup(g.leaf(), dir / "fifo", true);
  ASSERT_TRUE(BecameSleep(fifo));
  TargetSample f = Collect(fifo.pid(), Self());
  ASSERT_TRUE(f.cgroup && f.cgroup->pod);
  EXPECT_EQ(f.cgroup->pod_name, "");
}

TEST_F(PodIdentityTest, HostProcessHasNoPod) {
  Groups g("/system.slice/containerd.service");
  if (!g.ok()) GTEST_SKIP() << "no memory cgroup to create groups under";
  Process target = StartInGroup(g.leaf(), "", true);
  ASSERT_TRUE(BecameSleep(target));
  TargetSample s = Collect(target.pid(), Self());
  if (!s.cgroup) GTEST_SKIP() << "no memory files in the groups made here";
  EXPECT_FALSE(s.cgroup->pod.has_value());
  EXPECT_EQ(s.cgroup->pod_name, "");
}

}  // namespace
}  // namespace memtrimd::testing

// The cgroup collector's pod identity and pod name for real processes placed
// in cgroups named the way a kubelet and containerd name them (systemd
// driver), and the way podman names them (cgroupfs manager, alone or given
// a kubelet pod's group as its parent), each in its own mount namespace with
// its own /etc/hostname bound over the node's (as a container runtime does). Needs root and a
// memory cgroup this process may create groups under; skipped otherwise.
//
// This process's own memory cgroup plays the node's hierarchy root: the
// reader (the collector on a thread of its own, or memtrimd) runs in a cgroup
// namespace rooted there, so a target's path reads /kubepods.slice/... as on
// a node, and each target sees that group bound over its cgroup mount, as a
// container sees the node's hierarchy. A pod's names below a user's
// delegated subtree (/user.slice/.../user@UID.service/...) must name no pod.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
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
    // The groups sit below this process's own group, which ctest's other
    // test processes share, under the same names: one process at a time (a
    // test may hold several Groups), or one test's removal pulls the groups
    // from under another's target. Held until this process exits.
    static const int lock = [] {
      int fd = ::open("/tmp/memtrimd-pod-identity-groups.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
      if (fd >= 0) ::flock(fd, LOCK_EX);
      return fd;
    }();
    (void)lock;
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
  // This process's own group (the stand-in hierarchy root) and where the
  // target binds it: the v1 memory mount, or the whole v2 mount.
  std::string root() const {
    int v = 0;
    return OwnMemoryCgroup(v);
  }
  std::string mount_point() const {
    return version_ == 1 ? "/sys/fs/cgroup/memory" : "/sys/fs/cgroup";
  }
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

// A `sleep` that moved itself into `g`'s leaf and sees `hostname_file` as
// its /etc/hostname (its own mount namespace; with `own_uts`, its own
// hostname namespace too, as every pod without hostNetwork has), and the
// stand-in root over its cgroup mount. `seconds` tells such sleeps apart.
Process StartInGroup(const Groups& g, const std::string& hostname_file, bool own_uts,
                     const std::string& seconds = "600") {
  std::vector<std::string> argv = {"unshare", "--mount", "--propagation", "private"};
  if (own_uts) argv.push_back("--uts");
  std::string script = "echo $$ > '" + g.leaf() + "/cgroup.procs' && ";
  script += "mount --bind '" + g.root() + "' '" + g.mount_point() + "' && ";
  if (!hostname_file.empty()) script += "mount --bind '" + hostname_file + "' /etc/hostname && ";
  script += "exec sleep " + seconds;
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

// The collector's sample of `pid`, read by a thread in a cgroup namespace of
// its own, rooted at this process's group (the stand-in hierarchy root).
TargetSample Collect(pid_t pid, const std::string& node_proc_dir) {
  TargetSample s;
  Result<Target> t = procfs::ReadTarget("/proc", pid);
  EXPECT_TRUE(t.ok()) << t.status().message();
  if (!t.ok()) return s;
  bool unshared = false;
  std::thread reader([&] {
    // A thread's own namespace: the test's other threads keep theirs.
    unshared = ::unshare(CLONE_NEWCGROUP) == 0;
    if (!unshared) return;
    // A failure leaves s.cgroup empty: the tests skip (no memory files in a
    // group made here, e.g. a cgroup v2 parent without the memory controller).
    cgroup::CgroupCollector c(std::nullopt, node_proc_dir);
    (void)c.Collect(*t, s);
  });
  reader.join();
  EXPECT_TRUE(unshared) << "unshare(CLONE_NEWCGROUP): " << std::strerror(errno);
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
  Process target = StartInGroup(g, dir / "hostname", true);
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
  Process target = StartInGroup(g, dir / "hostname", false);
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
  Process bad = StartInGroup(g, dir / "hostname", true);
  ASSERT_TRUE(BecameSleep(bad));
  TargetSample s = Collect(bad.pid(), Self());
  if (!s.cgroup) GTEST_SKIP() << "no memory files in the groups made here";
  ASSERT_TRUE(s.cgroup->pod);
  EXPECT_EQ(s.cgroup->pod_name, "");
  // A FIFO with no writer: opening it for reading would wait for one.
  ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0644), 0);
  Process fifo = StartInGroup(g, dir / "fifo", true);
  ASSERT_TRUE(BecameSleep(fifo));
  TargetSample f = Collect(fifo.pid(), Self());
  ASSERT_TRUE(f.cgroup && f.cgroup->pod);
  EXPECT_EQ(f.cgroup->pod_name, "");
}

// A user's delegated subtree on cgroup v2 (systemd's user@UID.service):
// the user may name groups there as a pod's, one level or the kubelet's
// whole chain.
std::string UserTree() { return "/user.slice/user-1000.slice/user@1000.service"; }

TEST_F(PodIdentityTest, PodNamesInAUsersSubtreeNameNoPod) {
  for (const std::string& spoof :
       {UserTree() + "/kubepods-burstable-pod" + kUidUnderscored + ".slice/cri-containerd-" +
            kContainer + ".scope",
        UserTree() + "/app.slice" + PodGroup(kUidUnderscored, kContainer)}) {
    SCOPED_TRACE(spoof);
    Groups g(spoof);
    if (!g.ok()) GTEST_SKIP() << "no memory cgroup to create groups under";
    TempDir dir;
    WriteFile(dir / "hostname", "web-7d4b9c8f6-x2x9q\n");
    Process target = StartInGroup(g, dir / "hostname", true);
    ASSERT_TRUE(BecameSleep(target));
    TargetSample s = Collect(target.pid(), Self());
    if (!s.cgroup) GTEST_SKIP() << "no memory files in the groups made here";
    // Its memory figures are still its group's; only the pod is refused.
    EXPECT_EQ(s.cgroup->path.substr(s.cgroup->path.size() - spoof.size()), spoof);
    EXPECT_FALSE(s.cgroup->pod.has_value());
    EXPECT_EQ(s.cgroup->pod_name, "");
  }
}

// The same through a node agent: memtrimd in node mode, in a cgroup
// namespace rooted at this process's group, watches a program in the
// kubelet's tree and one in a user's subtree with the same pod's names;
// only the first is labelled with the pod.
TEST_F(PodIdentityTest, NodeModeLabelsOnlyTheKubeletsTree) {
  const std::string uid2 = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";
  const std::string uid2_ = "9a8b7c6d_5e4f_4a3b_8c2d_1e0f9a8b7c6d";
  Groups real(PodGroup(kUidUnderscored, kContainer));
  Groups spoof(UserTree() + "/kubepods-burstable-pod" + uid2_ + ".slice/cri-containerd-" +
               kContainer + ".scope");
  if (!real.ok() || !spoof.ok()) GTEST_SKIP() << "no memory cgroup to create groups under";
  TempDir dir;
  WriteFile(dir / "hostname", "web-7d4b9c8f6-x2x9q\n");
  // Told apart by their arguments: "sleep 6001" and "sleep 6002".
  Process in_pod = StartInGroup(real, dir / "hostname", true, "6001");
  Process borrowed = StartInGroup(spoof, dir / "hostname", true, "6002");
  ASSERT_TRUE(BecameSleep(in_pod));
  ASSERT_TRUE(BecameSleep(borrowed));
  Memtrimd m(WrapWith{{"unshare", "--cgroup"}},
             {"--targets=node", "--targets.match=^sleep 600[12]$", "--targets.min-rss=0",
              "--discovery.interval=500ms", "--sample.interval=200ms", "--trim.interval=0"});
  ASSERT_TRUE(m.started()) << m.log();
  const std::string p1 = "pid=\"" + std::to_string(in_pod.pid()) + "\"";
  const std::string p2 = "pid=\"" + std::to_string(borrowed.pid()) + "\"";
  Series s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return Find(s, "memtrimd_target_info", {p1, "pod_uid=\"" + std::string(kUid)}) &&
               Find(s, "memtrimd_target_info", {p2});
      },
      30s))
      << m.log();
  EXPECT_TRUE(Find(s, "memtrimd_target_info", {p1, "qos_class=\"burstable\""}).has_value());
  EXPECT_TRUE(
      Find(s, "memtrimd_target_info", {p1, "pod_name=\"web-7d4b9c8f6-x2x9q\""}).has_value());
  EXPECT_TRUE(Find(s, "memtrimd_target_info", {p2, "pod_uid=\"\""}).has_value());
  EXPECT_FALSE(Find(s, "memtrimd_target_info", {p2, uid2}).has_value());
  EXPECT_FALSE(Find(s, "memtrimd_target_info", {p2, kContainer}).has_value());
  EXPECT_FALSE(Find(s, "memtrimd_target_info", {p2, "web-7d4b9c8f6-x2x9q"}).has_value());
}

// podman's cgroupfs names (as tests/fixtures/cgroup/pod_paths/podman_*
// recorded them from real podman runs).
constexpr const char* kPodmanAlone =
    "1e4965092a86c3a7db8ce509e5b8932182d02403b61ee821f5fab1d66cf0a8b2";
constexpr const char* kPodmanInPod =
    "56412a45f8ea69df1618802acf3b6a1a68f8aabdfeac7c97733c76bd10c1279b";
std::string PodmanGroup(const std::string& container) {
  return "/libpod_parent/libpod-" + container;
}
std::string PodmanInKubePod(const std::string& container) {
  return std::string("/kubepods/burstable/pod") + kUid + "/libpod-" + container;
}

// A podman container with no pod above it: its container ID, runtime
// podman, no pod, no QoS, and its hostname (podman's default: the short
// container ID) is not taken for a pod's name.
TEST_F(PodIdentityTest, PodmanContainerAloneHasItsIdAndNoPod) {
  Groups g(PodmanGroup(kPodmanAlone));
  if (!g.ok()) GTEST_SKIP() << "no memory cgroup to create groups under";
  TempDir dir;
  WriteFile(dir / "hostname", "1e4965092a86\n");
  Process target = StartInGroup(g, dir / "hostname", true);
  ASSERT_TRUE(BecameSleep(target));
  TargetSample s = Collect(target.pid(), Self());
  if (!s.cgroup) GTEST_SKIP() << "no memory files in the groups made here";
  ASSERT_TRUE(s.cgroup->pod.has_value());
  EXPECT_EQ(*s.cgroup->pod, (PodIdentity{"", kPodmanAlone, "podman", std::nullopt}));
  EXPECT_EQ(s.cgroup->pod_name, "");
}

// The same names through a node agent: memtrimd in node mode labels a
// podman container alone (container ID only), one given a kubelet pod's
// group as --cgroup-parent (pod, QoS, container), and nothing for a user's
// imitation of podman's groups in its own subtree.
TEST_F(PodIdentityTest, NodeModeLabelsPodmanContainers) {
  const std::string spoof_id = "b92245761e2a56f72a4f6d1826457b66d27158feb4f360f2547b0a88de60e711";
  Groups alone(PodmanGroup(kPodmanAlone));
  Groups in_pod(PodmanInKubePod(kPodmanInPod));
  Groups spoof(UserTree() + PodmanGroup(spoof_id));
  if (!alone.ok() || !in_pod.ok() || !spoof.ok()) {
    GTEST_SKIP() << "no memory cgroup to create groups under";
  }
  TempDir dir;
  WriteFile(dir / "hostname", "web-7d4b9c8f6-x2x9q\n");
  // Told apart by their arguments: "sleep 6011", "sleep 6012", "sleep 6013".
  Process a = StartInGroup(alone, dir / "hostname", true, "6011");
  Process b = StartInGroup(in_pod, dir / "hostname", true, "6012");
  Process c = StartInGroup(spoof, dir / "hostname", true, "6013");
  ASSERT_TRUE(BecameSleep(a));
  ASSERT_TRUE(BecameSleep(b));
  ASSERT_TRUE(BecameSleep(c));
  Memtrimd m(WrapWith{{"unshare", "--cgroup"}},
             {"--targets=node", "--targets.match=^sleep 601[123]$", "--targets.min-rss=0",
              "--discovery.interval=500ms", "--sample.interval=200ms", "--trim.interval=0"});
  ASSERT_TRUE(m.started()) << m.log();
  const std::string pa = "pid=\"" + std::to_string(a.pid()) + "\"";
  const std::string pb = "pid=\"" + std::to_string(b.pid()) + "\"";
  const std::string pc = "pid=\"" + std::to_string(c.pid()) + "\"";
  Series s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return Find(s, "memtrimd_target_info",
                    {pa, "container_id=\"" + std::string(kPodmanAlone) + "\""}) &&
               Find(s, "memtrimd_target_info",
                    {pb, "container_id=\"" + std::string(kPodmanInPod) + "\""}) &&
               Find(s, "memtrimd_target_info", {pc});
      },
      30s))
      << m.log();
  // Alone: the container, no pod, no QoS, no pod name.
  EXPECT_TRUE(
      Find(s, "memtrimd_target_info", {pa, "pod_uid=\"\"", "qos_class=\"\"", "pod_name=\"\""})
          .has_value());
  // In a kubelet pod's group: all of it.
  EXPECT_TRUE(Find(s, "memtrimd_target_info",
                   {pb, "pod_uid=\"" + std::string(kUid) + "\"", "qos_class=\"burstable\"",
                    "pod_name=\"web-7d4b9c8f6-x2x9q\""})
                  .has_value());
  // The user's imitation: nothing.
  EXPECT_TRUE(
      Find(s, "memtrimd_target_info", {pc, "pod_uid=\"\"", "container_id=\"\"", "qos_class=\"\""})
          .has_value());
  EXPECT_FALSE(Find(s, "memtrimd_target_info", {pc, spoof_id}).has_value());
}

TEST_F(PodIdentityTest, HostProcessHasNoPod) {
  Groups g("/system.slice/containerd.service");
  if (!g.ok()) GTEST_SKIP() << "no memory cgroup to create groups under";
  Process target = StartInGroup(g, "", true);
  ASSERT_TRUE(BecameSleep(target));
  TargetSample s = Collect(target.pid(), Self());
  if (!s.cgroup) GTEST_SKIP() << "no memory files in the groups made here";
  EXPECT_FALSE(s.cgroup->pod.has_value());
  EXPECT_EQ(s.cgroup->pod_name, "");
}

}  // namespace
}  // namespace memtrimd::testing

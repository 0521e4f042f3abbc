// Pod identity from cgroup paths: every recorded shape in
// tests/fixtures/cgroup/pod_paths (README.md there says how each was made),
// malformed paths, and /etc/hostname.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "collectors/cgroup/pod_identity.h"
#include "tests/unit/fixtures.h"

namespace memtrimd::cgroup {
namespace {

std::optional<PodIdentity> FromFixture(const std::string& name) {
  return ParsePodIdentity(test::ReadFixture("cgroup/pod_paths/" + name));
}

PodIdentity Id(std::string uid, std::string cid, std::string runtime, std::optional<QosClass> qos) {
  return PodIdentity{std::move(uid), std::move(cid), std::move(runtime), qos};
}

struct Case {
  const char* fixture;
  const char* uid;
  const char* cid;
  const char* runtime;
  std::optional<QosClass> qos;  // none: no pod (podman alone)
};

constexpr QosClass kG = QosClass::kGuaranteed;
constexpr QosClass kBu = QosClass::kBurstable;
constexpr QosClass kBe = QosClass::kBestEffort;
constexpr std::optional<QosClass> kNoPod;

// Expected values: record.sh derives each UID and container ID from the
// fixture's name (md5 / sha256 of "pod:<name>" / "container:<name>").
const Case kCases[] = {
    {"cgroupfs_v1_burstable", "ac32b344-e62f-67f8-2a5d-a2202e1f5850",
     "472e55d8537e6177046a04089bc4c601d928bb3cb8480b1996619589d24f45d8", "", kBu},
    {"cgroupfs_v1_besteffort", "f9c95c80-14d6-8a56-1669-d6b4749e9ca4",
     "4ca534297e740f4bf4384f2f2e5db99d45c4ece418827542c4a1a14e44be1beb", "", kBe},
    {"cgroupfs_v1_guaranteed", "79d588a5-d353-a1df-04d8-4aa9d5c836bc",
     "18e26ea3c44e2b39b8358a623ae9a6f2b5383164af523dc90f0443d704716b18", "", kG},
    {"cgroupfs_v2_burstable", "36f5882d-0621-f60f-9ff2-04ff5fe547ba",
     "a2ea343028b83d9326af9677ef8b68ae18d114d84c69dbea09574c20bf15364e", "", kBu},
    {"cgroupfs_v2_besteffort", "c9ca0c76-cc59-8d60-f062-aa2d2de15c14",
     "f4b335c736d63f897321dbaf9f5394657ddf5217e9bf48eb251658ca1e70586b", "", kBe},
    {"cgroupfs_v2_guaranteed", "c3701274-cff9-35f6-9e93-eda62e829e78",
     "de9cae233c1e362ca22aa9beef4a49a58745fc406ec6db2926057a23271f7354", "", kG},
    {"cgroupfs_v1_crio", "0b535b4f-6865-3508-7ca0-3f8ba03379ec",
     "b21030f58df3fa36d57697770b60844a5651a74d8667c5e009e61b18162f8aad", "cri-o", kBu},
    {"systemd_containerd_v2", "96f184ee-830a-7343-9b26-7becc95af94d",
     "3ae99838d3e91c80a4282433d479855f8624b7c18a3bb7eb59f6f67350190e5b", "containerd", kBu},
    {"systemd_containerd_v1", "db4abe09-5f18-7d8f-1b7a-35a474fdc921",
     "694b9af640208330933f42f630ae321f71aedc7b70a0afab5a156f78f89cfa3e", "containerd", kBe},
    {"systemd_crio_v2", "1980ec8b-e07f-7791-1c1d-8a56a15c861a",
     "69f3c8c787b4e9b09516414a6f4679c9412ffa713c35869fc23745be0260b9b6", "cri-o", kBu},
    // CRI-O's monitor: the pod is right, the container is not the app's.
    {"systemd_crio_conmon_v2", "0deb4891-c4f4-b04c-5cb3-9abe70109ac8", "", "cri-o", kBu},
    {"systemd_crio_crun_v2", "148c1da9-53d1-d928-8cf1-4a0a113d6cbb",
     "268208b8981a53c55716af4a86d115c7604e87c218624f124e3ebf92bbdbd258", "cri-o", kBe},
    {"systemd_docker_v1", "e6ec6b65-ddea-f329-6a9b-4253b23be9cc",
     "3f3e39f3f0201e5330edcda721b28bcc3a891bf3ea9da33db9cb2b727e21643e", "docker", kBe},
    {"systemd_guaranteed_v2", "27a37110-89c0-f4b3-d1f8-e3a700e42628",
     "70dc529accef476096f58c0cc999e59bd194dd6f56b08bc5becbb4b74a5632dc", "containerd", kG},
    {"systemd_pod_only_v2", "538964b1-bb7b-41d7-72eb-77e7a45e1bc3", "", "", kBu},
    {"systemd_static_pod_v2", "c4063f783086f7c380aeb4aa9ca4ace8",
     "4a6c8370ca499281a47e3774389b5d887e03be982849743db89c7ef23c2f8a43", "containerd", kBu},
    {"kind_v2", "19200344-3aa6-1d04-b488-568b15091e22",
     "4eb686fd0cca1ee1d3be0f1e13f6deb8c36ec919aa52e75c05d28c21f9ac953e", "containerd", kBe},
    {"k3s_docker_v1", "e84dd7e6-7267-9dbf-1255-e5132732ac42",
     "df38cbeb3fad218e0d9a97afbfe3c3e99eb7d42616aa2889946e8b628900a91f", "", kBu},
    {"private_ns_systemd_v2", "47aea925-2b37-e448-1684-14694ebfac97",
     "da8b1debdefdd15eb1b4f93d3d97a101c3980521efcebc52bc2ee96007c2f335", "containerd", kBe},
    {"private_ns_cgroupfs_v1", "effceabb-4bb4-6abe-7783-3dc8a0186c1b",
     "2fb57522c9787c288d7690c21142ea68391ea762953d479a879c25d9ecacec47", "", kBe},
    // podman (record-podman.sh): its own container IDs, the pod UID it was
    // given in --cgroup-parent.
    {"podman_v1", "", "2c61793a7219857ba3e8c1721b0d144744885a5c1cd94eac57a7685e04674790", "podman",
     kNoPod},
    {"podman_inside_v1", "", "4dd10a18bf8343c11d38784af57738d1a965f6e5e877ba3e429b013ce050e4dc",
     "podman", kNoPod},
    {"podman_pod_v1", "", "12f44689691af3ba3b684292767a54527ee37c90128ad4b5c0e3e390b0b6af83",
     "podman", kNoPod},
    {"podman_pod_private_ns_v1", "",
     "12f44689691af3ba3b684292767a54527ee37c90128ad4b5c0e3e390b0b6af83", "podman", kNoPod},
    {"podman_kubepods_v1", "3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
     "adc77de7fc84a5eb963c6493e369f9415b51cea4643991b3df1d009b11593ba7", "podman", kBu},
    {"podman_kubepods_inside_v1", "3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
     "30e2096e970df42db7bed96e221d5e974f831d1e55abb6bbd6acef356fbbafe2", "podman", kBu},
    {"podman_kubepods_guaranteed_v1", "3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
     "6f581d40143fcbb606c9536a983031c01d51873f719e0702566a2f4c5039343c", "podman", kG},
    // podman's monitor in the pod's group: the pod, not a container.
    {"podman_kubepods_conmon_v1", "3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f", "", "podman", kBu},
    // A podman pod given the kubelet pod's group as --cgroup-parent: the
    // container below the podman pod's group (6755f143...), not that group.
    {"podman_pod_kubepods_v1", "3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
     "4cdd618464897d4938fcc3f4a5edbc9180e784b0d87ac46a6188a5468c6dc273", "podman", kBe},
    {"podman_pod_kubepods_inside_v1", "3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
     "191a3be9e474e3c560dfc2689f4509c253831ffb868df46c5083d80eeb604d09", "podman", kBe},
    {"podman_pod_kubepods_conmon_v1", "3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f", "", "podman", kBe},
    // podman with systemd (record.sh, names from libpod's source).
    {"podman_systemd_v2", "", "acf106d37376cd28bdfce1f1cc4349b24fd0070d62887ded579fabdf9090cb35",
     "podman", kNoPod},
    {"podman_systemd_pod_v2", "",
     "a79b1c945df632c0984b324a362950b51e081ca3485d6bff8b22fadc96617e2c", "podman", kNoPod},
    {"podman_systemd_kubepods_v2", "37ab3c87-88a7-94ed-058a-29856c834461",
     "3df33dfccd63a63db99c23b633e125fd4232e8f82c4185f8a69a7bdcab9570cc", "podman", kBu},
};

TEST(PodIdentity, EveryRecordedShape) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.fixture);
    std::optional<PodIdentity> id = FromFixture(c.fixture);
    ASSERT_TRUE(id.has_value());
    EXPECT_EQ(*id, Id(c.uid, c.cid, c.runtime, c.qos));
  }
}

TEST(PodIdentity, HostProcessHasNone) { EXPECT_EQ(FromFixture("host_process"), std::nullopt); }

// A runtime's monitor outside a pod names no container: podman's conmon
// (one group for all containers of its parent under cgroupfs, a scope per
// container under systemd).
TEST(PodIdentity, PodmansMonitorAloneHasNone) {
  EXPECT_EQ(FromFixture("podman_conmon_v1"), std::nullopt);
  EXPECT_EQ(FromFixture("podman_systemd_conmon_v2"), std::nullopt);
}

// Rootless podman's containers live in the user's delegated subtree, where
// the same user could name any group libpod-<another container's id>:
// no identity there, as for a user's imitation of root podman's groups.
TEST(PodIdentity, PodmanNamesInAUsersSubtreeAreNotAContainer) {
  EXPECT_EQ(FromFixture("podman_rootless_v2"), std::nullopt);
  EXPECT_EQ(FromFixture("spoof_user_podman_v1"), std::nullopt);
}

// Every runtime's container group, below each driver's pod group and, for
// podman, in its own parents: the ID without the runtime's prefix.
TEST(PodIdentity, EveryContainerNameBelowEachDriversPod) {
  const std::string uid = "36f5882d-0621-f60f-9ff2-04ff5fe547ba";
  const std::string uid_ = "36f5882d_0621_f60f_9ff2_04ff5fe547ba";
  const std::string cid = "a2ea343028b83d9326af9677ef8b68ae18d114d84c69dbea09574c20bf15364e";
  const std::string pod = "7699dd8ff5421228f1e5b66bde23fabbe2b87c3ea1cf44492f357c85cc0917ca";
  const std::string cgroupfs = "/kubepods/burstable/pod" + uid + "/";
  const std::string systemd =
      "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uid_ + ".slice/";
  struct Shape {
    std::string path;
    std::string uid;
    std::string cid;
    std::string runtime;
    std::optional<QosClass> qos;
  };
  const Shape shapes[] = {
      {cgroupfs + cid, uid, cid, "", kBu},
      {cgroupfs + "crio-" + cid, uid, cid, "cri-o", kBu},
      {cgroupfs + "crio-conmon-" + cid, uid, "", "cri-o", kBu},
      {cgroupfs + "libpod-" + cid, uid, cid, "podman", kBu},
      {cgroupfs + "conmon", uid, "", "podman", kBu},
      {systemd + "cri-containerd-" + cid + ".scope", uid, cid, "containerd", kBu},
      {systemd + "crio-" + cid + ".scope", uid, cid, "cri-o", kBu},
      {systemd + "crio-conmon-" + cid + ".scope", uid, "", "cri-o", kBu},
      {systemd + "docker-" + cid + ".scope", uid, cid, "docker", kBu},
      {systemd + "libpod-" + cid + ".scope", uid, cid, "podman", kBu},
      {systemd + "libpod-conmon-" + cid + ".scope", uid, "", "podman", kBu},
      // A podman pod given the kubelet pod's group as --cgroup-parent: its
      // own group in between (cgroupfs: its ID; systemd: a slice named
      // after the parent's), the container below it.
      {cgroupfs + pod + "/libpod-" + cid, uid, cid, "podman", kBu},
      {cgroupfs + pod + "/conmon", uid, "", "podman", kBu},
      {cgroupfs + pod + "/libpod-" + cid + "/container", uid, cid, "podman", kBu},
      {systemd + "kubepods-burstable-pod" + uid_ + "-libpod_pod_" + pod + ".slice/libpod-" + cid +
           ".scope",
       uid, cid, "podman", kBu},
      {systemd + "kubepods-burstable-pod" + uid_ + "-libpod_pod_" + pod + ".slice/libpod-conmon-" +
           cid + ".scope",
       uid, "", "podman", kBu},
      {systemd + "kubepods-burstable-pod" + uid_ + "-libpod_pod_" + pod + ".slice", uid, "", "",
       kBu},
      // containerd's container's own sub-groups stay its own.
      {cgroupfs + cid + "/container", uid, cid, "", kBu},
      {"/libpod_parent/libpod-" + cid, "", cid, "podman", kNoPod},
      {"/libpod_parent/" + pod + "/libpod-" + cid, "", cid, "podman", kNoPod},
      {"/libpod_parent/libpod-" + cid + "/container", "", cid, "podman", kNoPod},
      {"/machine.slice/libpod-" + cid + ".scope", "", cid, "podman", kNoPod},
      {"/machine.slice/machine-libpod_pod_" + pod + ".slice/libpod-" + cid + ".scope", "", cid,
       "podman", kNoPod},
      {"/../libpod-" + cid, "", cid, "podman", kNoPod},
      {"/../" + pod + "/libpod-" + cid, "", cid, "podman", kNoPod},
      {"/../../libpod_parent/" + pod + "/libpod-" + cid, "", cid, "podman", kNoPod},
      // A kubelet in a root podman container (kind's podman provider).
      {"/machine.slice/libpod-" + pod + ".scope" + systemd + "cri-containerd-" + cid + ".scope",
       uid, cid, "containerd", kBu},
      {"/libpod_parent/libpod-" + pod + cgroupfs + cid, uid, cid, "", kBu},
  };
  for (const Shape& sh : shapes) {
    SCOPED_TRACE(sh.path);
    std::optional<PodIdentity> id = ParsePodCgroupPath(sh.path);
    ASSERT_TRUE(id.has_value());
    EXPECT_EQ(*id, Id(sh.uid, sh.cid, sh.runtime, sh.qos));
    // The same as the v2 line of a whole file.
    EXPECT_EQ(ParsePodIdentity("0::" + sh.path + "\n"), id);
  }
}

// Podman's names where root's podman does not put them, or not as it
// spells them: no identity (never a container ID alone from a name anyone
// could give a group).
TEST(PodIdentity, PodmanShapesOnlyWherePodmanPutsThem) {
  const std::string cid = "a2ea343028b83d9326af9677ef8b68ae18d114d84c69dbea09574c20bf15364e";
  const std::string pod = "7699dd8ff5421228f1e5b66bde23fabbe2b87c3ea1cf44492f357c85cc0917ca";
  const std::string bad[] = {
      "/libpod-" + cid,                           // no parent
      "/x/libpod_parent/libpod-" + cid,           // parent not at the top
      "/user.slice/libpod_parent/libpod-" + cid,  // in a user's tree
      "/system.slice/libpod-" + cid + ".scope",   // not podman's slice
      "/machine.slice/libpod-" + cid,             // systemd's parent, cgroupfs name
      "/libpod_parent/libpod-" + cid + ".scope",  // and the reverse
      "/libpod_parent/x/libpod-" + cid,           // a pod group that is not an ID
      "/libpod_parent/" + pod.substr(1) + "/libpod-" + cid,
      "/machine.slice/machine-libpod_pod_x.slice/libpod-" + cid + ".scope",
      "/machine.slice/libpod_pod_" + pod + ".slice/libpod-" + cid + ".scope",
      "/libpod_parent/libpod-" + cid.substr(0, 63),  // truncated ID
      "/libpod_parent/libpod-" + cid + "0",          // 65 digits
      "/libpod_parent/libpod-" + cid.substr(0, 12),  // podman's short ID
      "/libpod_parent/libpod-A2EA" + cid.substr(4),  // upper case
      "/libpod_parent/libpod-g" + cid.substr(1),     // not hex
      "/machine.slice/libpod-" + cid.substr(0, 63) + ".scope",
      "/libpod_parent/libpod-conmon-" + cid,  // a monitor: no container
      "/libpod_parent/conmon",
      "/machine.slice/libpod-conmon-" + cid + ".scope",
      "/../x/libpod-" + cid,  // after the dots, not podman's
      "/../user.slice/libpod_parent/libpod-" + cid,
  };
  for (const std::string& p : bad) {
    SCOPED_TRACE(p);
    EXPECT_EQ(ParsePodCgroupPath(p), std::nullopt);
    EXPECT_EQ(ParsePodIdentity("0::" + p + "\n"), std::nullopt);
  }
  // A podman pod's slice in a kubelet pod's must spell out that pod's own
  // name: another pod's name is a second pod in one path.
  const std::string other =
      "/kubepods.slice/kubepods-burstable.slice/"
      "kubepods-burstable-pod36f5882d_0621_f60f_9ff2_04ff5fe547ba.slice/"
      "kubepods-burstable-pod46f5882d_0621_f60f_9ff2_04ff5fe547ba-libpod_pod_" +
      pod + ".slice/libpod-" + cid + ".scope";
  EXPECT_EQ(ParsePodCgroupPath(other), std::nullopt);
  // Below a kubelet's pod, an unknown or malformed name is no container.
  const std::string in_pod = "/kubepods/burstable/pod36f5882d-0621-f60f-9ff2-04ff5fe547ba/";
  for (const std::string& seg : {"libpod-" + cid.substr(0, 63), "libpod-" + cid + ".scope",
                                 "conmon-" + cid, std::string("conmonx")}) {
    SCOPED_TRACE(seg);
    EXPECT_EQ(ParsePodCgroupPath(in_pod + seg), std::nullopt);
  }
}

// A user's delegated subtree holding a pod's group names (the spoof): each
// file's path has a well-formed pod and container segment, which were
// accepted anywhere in the path.
TEST(PodIdentity, PodNamesBelowAUsersSubtreeAreNotAPod) {
  for (const char* f : {"spoof_user_systemd_v2", "spoof_user_chain_v2", "spoof_user_cgroupfs_v1",
                        "spoof_user_kind_v2", "spoof_private_ns_v2"}) {
    SCOPED_TRACE(f);
    EXPECT_EQ(FromFixture(f), std::nullopt);
  }
}

// The kubelet's tree counts at the top of the reader's view, right below a
// node container's group, or after a ".." run; its groups in the order the
// kubelet makes them.
TEST(PodIdentity, OnlyWhereTheKubeletPutsIt) {
  const std::string uid_ = "36f5882d_0621_f60f_9ff2_04ff5fe547ba";
  const std::string uid = "36f5882d-0621-f60f-9ff2-04ff5fe547ba";
  const std::string cid = "a2ea343028b83d9326af9677ef8b68ae18d114d84c69dbea09574c20bf15364e";
  const std::string pod_slice = "kubepods-burstable-pod" + uid_ + ".slice";
  const std::string scope = "cri-containerd-" + cid + ".scope";
  const std::string node = cid;  // a node container's 64-hex ID
  const std::string good[] = {
      "/kubepods.slice/kubepods-burstable.slice/" + pod_slice + "/" + scope,
      "/../kubepods-burstable.slice/" + pod_slice + "/" + scope,
      "/../../" + pod_slice + "/" + scope,
      "/../../../kubepods.slice/kubepods-burstable.slice/" + pod_slice + "/" + scope,
      "/system.slice/docker-" + node +
          ".scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/"
          "kubelet-kubepods-burstable-pod" +
          uid_ + ".slice/" + scope,
      "/kubepods/burstable/pod" + uid + "/" + cid,
      "/../../burstable/pod" + uid + "/" + cid,
      "/docker/" + node + "/kubepods/pod" + uid + "/" + cid,
  };
  for (const std::string& p : good) {
    SCOPED_TRACE(p);
    EXPECT_TRUE(ParsePodCgroupPath(p).has_value());
  }
  const std::string bad[] = {
      // The pod's slice alone, or below the wrong parents.
      "/" + pod_slice + "/" + scope,
      "/kubepods-burstable.slice/" + pod_slice + "/" + scope,
      "/kubepods.slice/" + pod_slice + "/" + scope,
      "/kubepods.slice/kubepods-besteffort.slice/" + pod_slice + "/" + scope,
      "/x.slice/kubepods.slice/kubepods-burstable.slice/" + pod_slice + "/" + scope,
      "/kubepods.slice/kubepods-burstable.slice/x.slice/" + pod_slice + "/" + scope,
      // After the dots, a group that is not the chain's.
      "/../user.slice/kubepods.slice/kubepods-burstable.slice/" + pod_slice + "/" + scope,
      "/../../kubepods.slice/" + pod_slice + "/" + scope,
      // A node container's group only as the runtime names it, where it does.
      "/system.slice/docker-" + node.substr(1) + ".scope/kubepods.slice/kubepods-burstable.slice/" +
          pod_slice + "/" + scope,
      "/user.slice/docker-" + node + ".scope/kubepods.slice/kubepods-burstable.slice/" + pod_slice +
          "/" + scope,
      "/a/system.slice/docker-" + node + ".scope/kubepods.slice/kubepods-burstable.slice/" +
          pod_slice + "/" + scope,
      "/docker/x/kubepods/burstable/pod" + uid + "/" + cid,
      // cgroupfs: kubepods not at the top.
      "/user.slice/kubepods/burstable/pod" + uid + "/" + cid,
      "/kubepods/kubepods/burstable/pod" + uid + "/" + cid,
      "/../x/burstable/pod" + uid + "/" + cid,
  };
  for (const std::string& p : bad) {
    SCOPED_TRACE(p);
    EXPECT_EQ(ParsePodCgroupPath(p), std::nullopt);
  }
}

TEST(PodIdentity, CgroupfsGuaranteedFromAnotherPodsNamespaceIsAmbiguous) {
  // "/../../../pod<U>/<C>": the level above the pod is the reader's
  // ancestor, which could be kubepods (Guaranteed) or a QoS level.
  EXPECT_EQ(FromFixture("private_ns_cgroupfs_guaranteed_v1"), std::nullopt);
}

TEST(PodIdentity, ContainerSubgroupsBelongToTheContainer) {
  std::optional<PodIdentity> id = ParsePodCgroupPath(
      "/kubepods/besteffort/podc9ca0c76-cc59-8d60-f062-aa2d2de15c14/"
      "f4b335c736d63f897321dbaf9f5394657ddf5217e9bf48eb251658ca1e70586b/init.scope");
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(id->container_id, "f4b335c736d63f897321dbaf9f5394657ddf5217e9bf48eb251658ca1e70586b");
}

TEST(PodIdentity, LineChoice) {
  const std::string pod =
      "/kubepods/burstable/pod36f5882d-0621-f60f-9ff2-04ff5fe547ba/"
      "a2ea343028b83d9326af9677ef8b68ae18d114d84c69dbea09574c20bf15364e";
  const std::string other =
      "/kubepods/besteffort/podc9ca0c76-cc59-8d60-f062-aa2d2de15c14/"
      "f4b335c736d63f897321dbaf9f5394657ddf5217e9bf48eb251658ca1e70586b";
  // v2 wins over the memory line; the memory line over the others.
  auto a = ParsePodIdentity("4:memory:" + other + "\n0::" + pod + "\n");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->qos, QosClass::kBurstable);
  auto b = ParsePodIdentity("5:pids:" + other + "\n4:cpu,memory:" + pod + "\n0::/\n");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->qos, QosClass::kBurstable);
  // No memory line (its controller not mounted): any v1 line naming a pod.
  auto c = ParsePodIdentity("9:name=systemd:/\n5:pids:" + pod + "\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->pod_uid, "36f5882d-0621-f60f-9ff2-04ff5fe547ba");
  // The deciding line is malformed: no falling back to a later one.
  EXPECT_EQ(ParsePodIdentity("0::/kubepods/burstable/pod36f5882d/x\n4:memory:" + pod + "\n"),
            std::nullopt);
}

TEST(PodIdentity, Malformed) {
  const std::string uid = "36f5882d-0621-f60f-9ff2-04ff5fe547ba";
  const std::string uid_ = "36f5882d_0621_f60f_9ff2_04ff5fe547ba";
  const std::string cid = "a2ea343028b83d9326af9677ef8b68ae18d114d84c69dbea09574c20bf15364e";
  const std::string sd = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod";
  // Sanity: the well-formed versions parse.
  ASSERT_TRUE(ParsePodCgroupPath("/kubepods/burstable/pod" + uid + "/" + cid));
  ASSERT_TRUE(ParsePodCgroupPath(sd + uid_ + ".slice/cri-containerd-" + cid + ".scope"));

  const std::string bad[] = {
      "",
      "/",
      "kubepods/burstable/pod" + uid + "/" + cid,                            // not absolute
      "/kubepods/burstable/pod" + uid.substr(0, 35) + "/" + cid,             // truncated UID
      "/kubepods/burstable/pod" + uid + "/" + cid.substr(0, 63),             // 63-hex ID
      "/kubepods/burstable/pod" + uid + "/" + cid + "0",                     // 65-hex ID
      "/kubepods/burstable/pod36F5882D-0621-F60F-9FF2-04FF5FE547BA/" + cid,  // upper-case UID
      "/kubepods/burstable/pod" + uid + "/A2EA" + cid.substr(4),             // upper-case ID
      "/kubepods/burstable/pod" + uid_ + "/" + cid,                          // systemd escaping
      sd + uid + ".slice/cri-containerd-" + cid + ".scope",                  // cgroupfs dashes
      sd + uid_ + ".slice/cri-containerd-" + cid,                            // no .scope
      sd + uid_ + ".slice/runc-" + cid + ".scope",                           // unknown runtime
      sd + uid_ + ".slice/" + cid,  // bare ID under systemd
      "/kubepods/burstable/pod" + uid + "/cri-containerd-" + cid + ".scope",  // and the reverse
      "/kubepods/burstable/pod" + uid + "/" + cid + "/../x",                  // ".." inside
      "/kubepods//burstable/pod" + uid + "/" + cid,                           // empty segment
      "/kubepods/gold/pod" + uid + "/" + cid,                                 // unknown QoS
      "/other/burstable/pod" + uid + "/" + cid,                     // QoS not under kubepods
      "/pod" + uid + "/" + cid,                                     // nothing above the pod
      "/kubepods.slice/xkubepods-burstable-pod" + uid_ + ".slice",  // not a kubepods slice
      "/kubepods.slice/kubepods-gold-pod" + uid_ + ".slice",
      // Two pods in one path.
      "/kubepods/burstable/pod" + uid + "/" + cid + "/kubepods/besteffort/pod" + uid + "/" + cid,
      sd + uid_ + ".slice/" + sd.substr(1) + uid_ + ".slice",
  };
  for (const std::string& p : bad) {
    SCOPED_TRACE(p);
    EXPECT_EQ(ParsePodCgroupPath(p), std::nullopt);
    EXPECT_EQ(ParsePodIdentity("0::" + p + "\n"), std::nullopt);
  }
  EXPECT_EQ(ParsePodIdentity(""), std::nullopt);
  EXPECT_EQ(ParsePodIdentity("\n\n"), std::nullopt);
  EXPECT_EQ(ParsePodIdentity("garbage"), std::nullopt);
  EXPECT_EQ(ParsePodIdentity("0::"), std::nullopt);
}

TEST(PodIdentity, QosClassNames) {
  EXPECT_STREQ(QosClassName(QosClass::kGuaranteed), "guaranteed");
  EXPECT_STREQ(QosClassName(QosClass::kBurstable), "burstable");
  EXPECT_STREQ(QosClassName(QosClass::kBestEffort), "besteffort");
}

TEST(ParseHostname, PodNames) {
  EXPECT_EQ(ParseHostname("web-7d4b9c8f6-x2x9q\n"), "web-7d4b9c8f6-x2x9q");
  EXPECT_EQ(ParseHostname("  db-0 \r\nsecond line\n"), "db-0");
  EXPECT_EQ(ParseHostname("a.b-c.d"), "a.b-c.d");
  EXPECT_EQ(ParseHostname(std::string(63, 'a')), std::string(63, 'a'));
  std::string long_name = std::string(63, 'a') + "." + std::string(63, 'b') + "." +
                          std::string(63, 'c') + "." + std::string(61, 'd');
  ASSERT_EQ(long_name.size(), 253u);
  EXPECT_EQ(ParseHostname(long_name), long_name);
}

TEST(ParseHostname, NotADns1123Name) {
  for (const char* bad :
       {"", "\n", "   \n", "Web-1", "web_1", "-web", "web-", "web..1", ".web", "web.", "web 1",
        "w\xc3\xa9"
        "b"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(ParseHostname(bad), "");
  }
  EXPECT_EQ(ParseHostname(std::string(64, 'a')), "");
  EXPECT_EQ(ParseHostname(std::string(254, 'a')), "");
  EXPECT_EQ(ParseHostname(std::string("web\0x", 5)), "");
}

}  // namespace
}  // namespace memtrimd::cgroup

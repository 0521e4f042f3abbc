// Fuzz target: pod identity from /proc/<pid>/cgroup (cgroup::ParsePodIdentity)
// and the pod name from /etc/hostname (cgroup::ParseHostname), on the same input.
//
// Invariants: an identity is never half-read: its UID is a lower-case UUID
// or a static pod's 32 hex digits, and it has a QoS class, or it is a
// podman container outside a pod (no UID, no QoS, a container ID, runtime
// "podman"); its container ID is empty or 64 lower-case hex digits, its
// runtime one of the known names, and both IDs occur in the input (in the
// systemd spelling for the UID). Written back as a canonical cgroupfs and a
// canonical systemd path, it parses to itself. A path that names a pod or a
// container has no service's group (a user's subtree, user@UID.service, or
// any delegated unit) above the kubelet's or podman's root.
// A hostname is empty or a DNS-1123 subdomain taken from the input's first line.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "collectors/cgroup/pod_identity.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using memtrimd::cgroup::PodIdentity;
using memtrimd::cgroup::QosClass;

bool LowerHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool ValidUid(const std::string& u) {
  if (u.size() == 32) return LowerHex(u);
  if (u.size() != 36) return false;
  for (std::size_t i : {8u, 13u, 18u, 23u}) {
    if (u[i] != '-') return false;
  }
  std::string hex = u;
  std::erase(hex, '-');
  return hex.size() == 32 && LowerHex(hex);
}

std::string Underscored(std::string s) {
  for (char& c : s) {
    if (c == '-') c = '_';
  }
  return s;
}

std::string CgroupfsPath(const PodIdentity& id) {
  if (id.pod_uid.empty()) return "/libpod_parent/libpod-" + id.container_id;
  std::string p = "/kubepods";
  if (id.qos == QosClass::kBurstable) p += "/burstable";
  if (id.qos == QosClass::kBestEffort) p += "/besteffort";
  p += "/pod" + id.pod_uid;
  if (!id.container_id.empty()) p += "/" + id.container_id;
  return p;
}

std::string SystemdPath(const PodIdentity& id) {
  if (id.pod_uid.empty()) return "/machine.slice/libpod-" + id.container_id + ".scope";
  std::string qos = id.qos == QosClass::kGuaranteed  ? ""
                    : id.qos == QosClass::kBurstable ? "-burstable"
                                                     : "-besteffort";
  std::string p = "/kubepods.slice";
  if (!qos.empty()) p += "/kubepods" + qos + ".slice";
  p += "/kubepods" + qos + "-pod" + Underscored(id.pod_uid) + ".slice";
  if (!id.container_id.empty()) p += "/cri-containerd-" + id.container_id + ".scope";
  return p;
}

bool Dns1123(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  std::size_t start = 0;
  for (;;) {
    std::size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (label.empty() || label.size() > 63) return false;
    if (label.front() == '-' || label.back() == '-') return false;
    for (char c : label) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memtrimd::cgroup;
  const std::string_view text = memtrimd::fuzz::AsText(data, size);

  if (auto id = ParsePodIdentity(text)) {
    const bool podman_alone = id->pod_uid.empty();
    if (podman_alone) {
      FUZZ_CHECK(!id->qos.has_value() && id->runtime == "podman" && !id->container_id.empty());
    } else {
      FUZZ_CHECK(ValidUid(id->pod_uid));
      FUZZ_CHECK(id->qos.has_value());
    }
    FUZZ_CHECK(id->container_id.empty() ||
               (id->container_id.size() == 64 && LowerHex(id->container_id)));
    FUZZ_CHECK(id->runtime.empty() || id->runtime == "containerd" || id->runtime == "cri-o" ||
               id->runtime == "docker" || id->runtime == "podman");
    FUZZ_CHECK(text.find(id->pod_uid) != std::string_view::npos ||
               text.find(Underscored(id->pod_uid)) != std::string_view::npos);
    FUZZ_CHECK(text.find(id->container_id) != std::string_view::npos);
    if (id->qos) {
      const char* qos = QosClassName(*id->qos);
      FUZZ_CHECK(std::strcmp(qos, "guaranteed") == 0 || std::strcmp(qos, "burstable") == 0 ||
                 std::strcmp(qos, "besteffort") == 0);
    }

    // Podman alone writes back as podman's own paths, a pod as the
    // kubelet's with containerd's names (cgroupfs: a bare ID).
    auto cgroupfs = ParsePodIdentity("0::" + CgroupfsPath(*id) + "\n");
    FUZZ_CHECK(cgroupfs.has_value());
    FUZZ_CHECK(cgroupfs->pod_uid == id->pod_uid && cgroupfs->qos == id->qos);
    FUZZ_CHECK(cgroupfs->container_id == id->container_id);
    FUZZ_CHECK(cgroupfs->runtime == (podman_alone ? "podman" : ""));
    auto systemd = ParsePodIdentity("4:memory:" + SystemdPath(*id) + "\n0::/\n");
    FUZZ_CHECK(systemd.has_value());
    FUZZ_CHECK(systemd->pod_uid == id->pod_uid && systemd->qos == id->qos);
    FUZZ_CHECK(systemd->container_id == id->container_id);
    FUZZ_CHECK(systemd->runtime == (podman_alone               ? "podman"
                                    : id->container_id.empty() ? ""
                                                               : "containerd"));
  }

  const std::string_view first_line = text.substr(0, text.find('\n'));
  if (ParsePodCgroupPath(first_line)) {
    const std::string_view above =
        first_line.substr(0, std::min(first_line.find("kubepods"), first_line.find("libpod")));
    FUZZ_CHECK(above.find(".service") == std::string_view::npos);
    FUZZ_CHECK(above.find('@') == std::string_view::npos);
  }

  const std::string host = ParseHostname(text);
  if (!host.empty()) {
    FUZZ_CHECK(Dns1123(host));
    FUZZ_CHECK(text.substr(0, text.find('\n')).find(host) != std::string_view::npos);
  }
  return 0;
}

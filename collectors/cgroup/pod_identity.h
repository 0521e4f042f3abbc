// Kubernetes identity of a process without API access: which pod (UID and
// QoS class) and which container (runtime and 64-hex ID) it runs in, read
// from the cgroup path the kubelet and the container runtime gave it, and
// the pod's name from the container's /etc/hostname. A podman container
// outside a kubelet's pod has a container (ID, runtime "podman") and no pod.
// Pure functions; the shapes, which were recorded and which are from
// documentation: tests/fixtures/cgroup/pod_paths/README.md.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace memtrimd::cgroup {

enum class QosClass { kGuaranteed, kBurstable, kBestEffort };

struct PodIdentity {
  // The pod's UID with dashes (as kube_pod_info's `uid` label has it), or
  // the 32 hex digits a static pod's UID is (the kubelet hashes the file);
  // empty for a podman container outside a kubelet's pod.
  std::string pod_uid;
  // 64 lower-case hex digits, no runtime prefix: Kubernetes' containerID
  // without its `containerd://` (`cri-o://`, `docker://`) scheme, podman's
  // full container ID. Empty when the path stops at the pod, or names a
  // runtime's monitor (CRI-O's crio-conmon-<id>, podman's conmon), which is
  // not the application's container.
  std::string container_id;
  // "containerd", "cri-o", "docker", "podman", or "" when the path does not
  // say (a bare ID under the cgroupfs driver).
  std::string runtime;
  // The pod's QoS class; none without a pod.
  std::optional<QosClass> qos;

  bool operator==(const PodIdentity&) const = default;
};

// /proc/<pid>/cgroup -> the pod the process runs in; nullopt when it is not
// in a pod or a podman container (a host daemon) or the path is not one of
// the known shapes (never a half-read identity). Reads the cgroup v2 `0::`
// line, else the v1 memory controller's line, else any other v1 line: the
// first of these that names a pod (or podman) decides. The pod's group must sit where the kubelet
// puts it: below the kubelet's root (`kubepods`, `kubepods.slice` and, for the systemd driver,
// every slice its name spells out), and that root at the top of the hierarchy as the reader sees
// it, right below a node container's group (a kind or k3d node seen from the host), or behind a
// leading run of `..` (a reader in a private cgroup namespace sees paths relative to its own
// group). A pod-shaped name anywhere else (in a user's delegated subtree: any user may name a group
// `kubepods-burstable-pod<uid>.slice` there) names no pod. A target in the reader's own pod shows
// only `/../<container>`, no pod (a sidecar on cgroup v2 learns its pod another way, e.g. the
// Downward API). A podman container without a kubelet's pod above it counts only where root's
// podman puts it: `libpod-<id>` below `libpod_parent` (cgroupfs) or `libpod-<id>.scope` below
// `machine.slice` (systemd), either directly or in a podman pod's group, with those at the
// hierarchy's top or behind `..` (a rootless podman's containers sit in the user's own subtree: no
// identity, as for any name there). A podman pod given a kubelet pod's group as its
// --cgroup-parent puts a group of its own between that and its containers': the container is the
// one below it, never the podman pod.
std::optional<PodIdentity> ParsePodIdentity(std::string_view proc_pid_cgroup_text);

// One cgroup path (the part after the second ':' of a /proc/<pid>/cgroup line).
std::optional<PodIdentity> ParsePodCgroupPath(std::string_view path);

// "guaranteed", "burstable", "besteffort" (the `qos_class` label's values).
const char* QosClassName(QosClass qos);

// /etc/hostname -> its first line without surrounding blanks, if that is a
// DNS-1123 subdomain (as pod names are), else "".
std::string ParseHostname(std::string_view etc_hostname_text);

}  // namespace memtrimd::cgroup

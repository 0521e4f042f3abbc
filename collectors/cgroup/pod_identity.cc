#include "collectors/cgroup/pod_identity.h"

#include <cstddef>
#include <vector>

#include "collectors/cgroup/cgroup_files.h"

namespace memtrimd::cgroup {
namespace {

bool IsLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool AllLowerHex(std::string_view s) {
  for (char c : s) {
    if (!IsLowerHex(c)) return false;
  }
  return true;
}

// A pod UID as it appears in a cgroup name: a UUID whose dashes are `sep`
// ('-' under cgroupfs; '_' under systemd, where '-' separates slice levels),
// or the 32 hex digits of a static pod. Returns it with dashes, or "".
std::string PodUid(std::string_view s, char sep) {
  if (s.size() == 32 && AllLowerHex(s)) return std::string(s);
  if (s.size() != 36) return "";
  std::string uid(s);
  for (std::size_t i = 0; i < uid.size(); ++i) {
    const bool dash_here = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash_here) {
      if (uid[i] != sep) return "";
      uid[i] = '-';
    } else if (!IsLowerHex(uid[i])) {
      return "";
    }
  }
  return uid;
}

bool IsContainerId(std::string_view s) { return s.size() == 64 && AllLowerHex(s); }

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// Segments that claim to be a pod's group, valid or not: two of them, or
// one that does not parse, make the path unreadable rather than half-read.
bool LooksLikePodSegment(std::string_view seg) {
  if (StartsWith(seg, "pod")) return true;  // cgroupfs: pod<uid>
  return EndsWith(seg, ".slice") && seg.find("kubepods") != std::string_view::npos &&
         seg.find("-pod") != std::string_view::npos;
}

struct PodPart {
  std::string uid;
  QosClass qos = QosClass::kBestEffort;
  bool systemd = false;
};

// Groups another runtime made for a Kubernetes node that runs in a
// container (kind, k3d), as the host sees them: a kubelet's tree may sit
// right below one. Only that runtime (root) names groups there, and a
// container that may write its own cgroup tree is privileged already.
// (A further runtime's node container is one more row.)
struct NodeContainerForm {
  std::string_view parent;  // the group right above the container's
  std::string_view prefix;  // the container group's name: prefix, 64 hex, suffix
  std::string_view suffix;
};
constexpr NodeContainerForm kNodeContainers[] = {
    {"system.slice", "docker-", ".scope"},   // Docker, systemd driver (kind)
    {"docker", "", ""},                      // Docker, cgroupfs driver (k3d)
    {"machine.slice", "libpod-", ".scope"},  // root podman, systemd (kind's podman provider)
    {"libpod_parent", "libpod-", ""},        // root podman, cgroupfs
};

bool IsNodeContainer(std::string_view parent, std::string_view seg) {
  for (const NodeContainerForm& f : kNodeContainers) {
    if (parent != f.parent || !StartsWith(seg, f.prefix) || !EndsWith(seg, f.suffix)) continue;
    std::string_view id = seg.substr(f.prefix.size());
    id.remove_suffix(f.suffix.size());
    if (IsContainerId(id)) return true;
  }
  return false;
}

// Where the kubelet's tree (or root podman's) may start in a path: at the
// root of the reader's view (a node agent with the host's cgroup namespace,
// or cgroup v1), after a run of ".." (a reader in its own cgroup namespace:
// the first named group is then a child of one of the reader's own
// ancestors, which belong to the kubelet or to root), or right below a node
// container's group. Anywhere else (a user's delegated subtree, a service's)
// anyone with a subtree could name a pod's group: the identity would be
// borrowed.
bool RuntimeRootAt(const std::vector<std::string_view>& segs, std::size_t at) {
  if (at == 0) return true;
  if (at == 2 && IsNodeContainer(segs[0], segs[1])) return true;
  return false;
}

std::size_t LeadingDotDots(const std::vector<std::string_view>& segs) {
  std::size_t n = 0;
  while (n < segs.size() && segs[n] == "..") ++n;
  return n;
}

// `chain` (the kubelet's or podman's groups above the pod's or container's,
// top first) ends right above `pod_at`, and above it is a place such a tree
// may start; with a ".." run instead, any top part of the chain may be
// hidden behind it.
bool UnderRuntimeRoot(const std::vector<std::string_view>& segs, std::size_t pod_at,
                      const std::vector<std::string>& chain) {
  const std::size_t dots = LeadingDotDots(segs);
  if (dots > 0) {
    // "../../<tail of the chain>/<pod>": what follows the dots must be the
    // chain's last groups, exactly.
    if (pod_at < dots) return false;
    const std::size_t shown = pod_at - dots;
    if (shown > chain.size()) return false;
    for (std::size_t k = 0; k < shown; ++k) {
      if (segs[dots + k] != chain[chain.size() - shown + k]) return false;
    }
    return true;
  }
  if (pod_at < chain.size()) return false;
  const std::size_t top = pod_at - chain.size();
  for (std::size_t k = 0; k < chain.size(); ++k) {
    if (segs[top + k] != chain[k]) return false;
  }
  return RuntimeRootAt(segs, top);
}

// systemd driver: [<root>-]kubepods[-<qos>]-pod<uid_>.slice. systemd nests a
// slice "a-b-c.slice" in "a-b.slice" in "a.slice", so the name spells out
// the groups above it: they are checked by UnderRuntimeRoot.
std::optional<PodPart> SystemdPodSlice(const std::vector<std::string_view>& segs, std::size_t i) {
  std::string_view seg = segs[i];
  if (!EndsWith(seg, ".slice")) return std::nullopt;
  std::string_view body = seg.substr(0, seg.size() - 6);
  std::size_t pod = body.rfind("-pod");
  if (pod == std::string_view::npos) return std::nullopt;
  PodPart p;
  p.systemd = true;
  p.uid = PodUid(body.substr(pod + 4), '_');
  if (p.uid.empty()) return std::nullopt;
  std::string_view prefix = body.substr(0, pod);
  std::string_view root;
  if (EndsWith(prefix, "kubepods-burstable")) {
    p.qos = QosClass::kBurstable;
    root = prefix.substr(0, prefix.size() - 18);
  } else if (EndsWith(prefix, "kubepods-besteffort")) {
    p.qos = QosClass::kBestEffort;
    root = prefix.substr(0, prefix.size() - 19);
  } else if (EndsWith(prefix, "kubepods")) {
    p.qos = QosClass::kGuaranteed;
    root = prefix.substr(0, prefix.size() - 8);
  } else {
    return std::nullopt;
  }
  // A --cgroup-root (kind's /kubelet) prefixes every level: "kubelet-".
  if (!root.empty() && root.back() != '-') return std::nullopt;
  // The slices above: every '-'-cut of the prefix ("kubelet.slice",
  // "kubelet-kubepods.slice", "kubelet-kubepods-besteffort.slice").
  std::vector<std::string> chain;
  for (std::size_t cut = 0;;) {
    std::size_t dash = prefix.find('-', cut);
    std::string_view upto = prefix.substr(0, dash);
    if (upto.empty() || upto.back() == '-') return std::nullopt;  // "--": no such slice
    chain.push_back(std::string(upto) + ".slice");
    if (dash == std::string_view::npos) break;
    cut = dash + 1;
  }
  if (!UnderRuntimeRoot(segs, i, chain)) return std::nullopt;
  return p;
}

// cgroupfs driver: .../kubepods[/<qos>]/pod<uid>. The QoS is the parent's
// name; Guaranteed pods sit right under kubepods. A ".." parent (a reader in
// another pod's cgroup namespace) leaves the QoS unknown: no identity.
std::optional<PodPart> CgroupfsPodDir(const std::vector<std::string_view>& segs, std::size_t i) {
  if (!StartsWith(segs[i], "pod")) return std::nullopt;
  PodPart p;
  p.uid = PodUid(segs[i].substr(3), '-');
  if (p.uid.empty() || i == 0) return std::nullopt;
  std::string_view parent = segs[i - 1];
  std::vector<std::string> chain = {"kubepods"};
  if (parent == "kubepods") {
    p.qos = QosClass::kGuaranteed;
  } else if (parent == "burstable" || parent == "besteffort") {
    p.qos = parent == "burstable" ? QosClass::kBurstable : QosClass::kBestEffort;
    chain.emplace_back(parent);
  } else {
    return std::nullopt;
  }
  if (!UnderRuntimeRoot(segs, i, chain)) return std::nullopt;
  return p;
}

struct ContainerPart {
  std::string id;  // empty: a runtime's monitor (conmon)
  std::string runtime;
};

// The container's group right below the pod's. systemd: runc names a scope
// "<prefix>-<id>.scope" from the runtime's "slice:prefix:id". cgroupfs: the
// bare ID (containerd, Docker), "crio-<id>" (CRI-O) or "libpod-<id>"
// (podman, given the pod's group as --cgroup-parent). The monitors:
// "crio-conmon-<id>", podman's "libpod-conmon-<id>.scope" and, under
// cgroupfs, its one "conmon" group for every container of that parent.
std::optional<ContainerPart> ContainerSegment(std::string_view seg, bool systemd) {
  if (systemd) {
    if (!EndsWith(seg, ".scope")) return std::nullopt;
    seg.remove_suffix(6);
  } else if (seg == "conmon") {
    return ContainerPart{"", "podman"};
  }
  struct Form {
    std::string_view prefix;
    const char* runtime;
    bool monitor;
  };
  static constexpr Form kSystemd[] = {{"cri-containerd-", "containerd", false},
                                      {"crio-conmon-", "cri-o", true},
                                      {"crio-", "cri-o", false},
                                      {"docker-", "docker", false},
                                      {"libpod-conmon-", "podman", true},
                                      {"libpod-", "podman", false}};
  static constexpr Form kCgroupfs[] = {{"crio-conmon-", "cri-o", true},
                                       {"crio-", "cri-o", false},
                                       {"libpod-", "podman", false},
                                       {"", "", false}};
  auto try_forms = [&](const auto& forms) -> std::optional<ContainerPart> {
    for (const Form& f : forms) {
      if (!StartsWith(seg, f.prefix)) continue;
      std::string_view id = seg.substr(f.prefix.size());
      if (!IsContainerId(id)) continue;
      return ContainerPart{f.monitor ? std::string() : std::string(id), f.runtime};
    }
    return std::nullopt;
  };
  return systemd ? try_forms(kSystemd) : try_forms(kCgroupfs);
}

// The path's segments, or nullopt when it is not an absolute path of
// non-empty names with ".." only as a leading run (as the kernel prints it).
std::optional<std::vector<std::string_view>> Segments(std::string_view path) {
  if (path.empty() || path[0] != '/') return std::nullopt;
  std::vector<std::string_view> segs;
  if (path == "/") return segs;
  path.remove_prefix(1);
  bool leading = true;
  for (;;) {
    std::size_t slash = path.find('/');
    std::string_view seg = path.substr(0, slash);
    if (seg.empty() || seg == ".") return std::nullopt;
    if (seg == "..") {
      if (!leading) return std::nullopt;
    } else {
      leading = false;
    }
    segs.push_back(seg);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return segs;
}

// Groups root's podman makes above a container's (libpod's defaults:
// CgroupfsDefaultCgroupParent, SystemdDefaultCgroupParent), and those of a
// podman pod below them: its 64-hex ID (cgroupfs) or the slice
// machine-libpod_pod_<id>.slice (systemd).
constexpr std::string_view kLibpodParent = "libpod_parent";
constexpr std::string_view kMachineSlice = "machine.slice";

bool IsPodmanPodGroup(std::string_view seg, bool systemd) {
  if (!systemd) return IsContainerId(seg);
  constexpr std::string_view kPrefix = "machine-libpod_pod_";
  if (!StartsWith(seg, kPrefix) || !EndsWith(seg, ".slice")) return false;
  seg.remove_prefix(kPrefix.size());
  seg.remove_suffix(6);
  return IsContainerId(seg);
}

// A podman container with no kubelet's pod above it: `libpod-<id>` (or
// `libpod-<id>.scope`) in podman's own parent, alone or in a podman pod's
// group, where only root's podman names groups. Groups below the
// container's still belong to it. Its monitor (conmon) has no container:
// no identity. No pod, no QoS.
std::optional<PodIdentity> PodmanContainer(const std::vector<std::string_view>& segs) {
  std::size_t at = 0;
  while (at < segs.size() && !StartsWith(segs[at], "libpod-")) ++at;
  if (at == segs.size()) return std::nullopt;
  const bool systemd = EndsWith(segs[at], ".scope");
  std::optional<ContainerPart> c = ContainerSegment(segs[at], systemd);
  if (!c || c->runtime != "podman" || c->id.empty()) return std::nullopt;
  // The chain above: podman's parent, then possibly the pod's group; with
  // a ".." run in front, any of it may be hidden.
  std::vector<std::string> chain = {std::string(systemd ? kMachineSlice : kLibpodParent)};
  if (at > 0 && IsPodmanPodGroup(segs[at - 1], systemd)) chain.emplace_back(segs[at - 1]);
  if (!UnderRuntimeRoot(segs, at, chain)) return std::nullopt;
  PodIdentity id;
  id.container_id = std::move(c->id);
  id.runtime = std::move(c->runtime);
  return id;
}

// A podman pod given a kubelet pod's group as --cgroup-parent makes a group
// of its own there, and puts its containers (and their monitor) below that
// one, not in the kubelet pod's group itself. cgroupfs: the podman pod's
// 64-hex ID (`pod<uid>/<podman pod id>/libpod-<id>`, recorded); systemd:
// libpod names the pod's slice after the parent slice
// (`<parent>-libpod_pod_<id>.slice`), and the containers' scopes sit below
// it. `pod_seg` is the kubelet pod's group, `seg` the one right below it.
bool IsPodmanPodGroupIn(std::string_view pod_seg, std::string_view seg, bool systemd) {
  if (!systemd) return IsContainerId(seg);
  constexpr std::string_view kSlice = ".slice";
  constexpr std::string_view kPod = "-libpod_pod_";
  std::string_view parent = pod_seg.substr(0, pod_seg.size() - kSlice.size());
  if (!StartsWith(seg, parent) || !EndsWith(seg, kSlice)) return false;
  seg.remove_prefix(parent.size());
  seg.remove_suffix(kSlice.size());
  return StartsWith(seg, kPod) && IsContainerId(seg.substr(kPod.size()));
}

// Whether a /proc/<pid>/cgroup line's path may name a pod or a podman
// container (the line that decides).
bool MentionsPod(std::string_view path) {
  if (path.find("kubepods") != std::string_view::npos) return true;
  if (path.find("libpod") != std::string_view::npos) return true;
  return path.find("/pod") != std::string_view::npos;
}

}  // namespace

std::optional<PodIdentity> ParsePodCgroupPath(std::string_view path) {
  std::optional<std::vector<std::string_view>> segs = Segments(path);
  if (!segs) return std::nullopt;
  std::optional<PodPart> pod;
  std::size_t pod_at = 0;
  for (std::size_t i = 0; i < segs->size(); ++i) {
    if (!LooksLikePodSegment((*segs)[i])) continue;
    // A podman pod's slice in a kubelet pod's spells out the latter's name.
    if (pod && pod->systemd && i == pod_at + 1 &&
        IsPodmanPodGroupIn((*segs)[pod_at], (*segs)[i], true)) {
      continue;
    }
    if (pod) return std::nullopt;  // two pods in one path
    pod = SystemdPodSlice(*segs, i);
    if (!pod) pod = CgroupfsPodDir(*segs, i);
    if (!pod) return std::nullopt;
    pod_at = i;
  }
  if (!pod) return PodmanContainer(*segs);
  PodIdentity id;
  id.pod_uid = std::move(pod->uid);
  id.qos = pod->qos;
  std::size_t at = pod_at + 1;
  if (at < segs->size() && IsPodmanPodGroupIn((*segs)[pod_at], (*segs)[at], pod->systemd)) {
    // The container is the one below the podman pod's group. Under
    // cgroupfs a bare 64-hex group is also containerd's or Docker's own
    // container: only podman's groups below it (libpod-<id>, conmon) make
    // it a podman pod's.
    if (pod->systemd) {
      if (at + 1 == segs->size()) return id;  // the podman pod's own slice
      ++at;
    } else if (at + 1 < segs->size()) {
      std::optional<ContainerPart> inner = ContainerSegment((*segs)[at + 1], false);
      if (inner && inner->runtime == "podman") ++at;
    }
  }
  if (at < segs->size()) {
    // Groups below the container's (crun's "container" leaf, a container
    // that manages its own sub-groups) still belong to that container.
    std::optional<ContainerPart> c = ContainerSegment((*segs)[at], pod->systemd);
    if (!c) return std::nullopt;
    id.container_id = std::move(c->id);
    id.runtime = std::move(c->runtime);
  }
  return id;
}

std::optional<PodIdentity> ParsePodIdentity(std::string_view text) {
  std::string_view unified;
  bool has_unified = false;
  std::string_view memory;
  bool has_memory = false;
  std::vector<std::string_view> others;
  // A malformed line names no pod; the others still may.
  ForEachCgroupLine(text, [&](const CgroupLine& line) {
    if (line.unified()) {
      unified = line.path;
      has_unified = true;
    } else if (line.HasController("memory")) {
      memory = line.path;
      has_memory = true;
    } else {
      others.push_back(line.path);
    }
  });
  // On a hybrid host the v2 line can be "/" while the v1 lines hold the
  // kubelet's paths: the first line that names a pod decides.
  if (has_unified && MentionsPod(unified)) return ParsePodCgroupPath(unified);
  if (has_memory && MentionsPod(memory)) return ParsePodCgroupPath(memory);
  for (std::string_view p : others) {
    if (MentionsPod(p)) return ParsePodCgroupPath(p);
  }
  return std::nullopt;
}

const char* QosClassName(QosClass qos) {
  switch (qos) {
    case QosClass::kGuaranteed:
      return "guaranteed";
    case QosClass::kBurstable:
      return "burstable";
    case QosClass::kBestEffort:
      return "besteffort";
  }
  return "besteffort";
}

std::string ParseHostname(std::string_view text) {
  std::string_view line = text.substr(0, text.find('\n'));
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!line.empty() && blank(line.front())) line.remove_prefix(1);
  while (!line.empty() && blank(line.back())) line.remove_suffix(1);
  // DNS-1123 subdomain: at most 253 characters; labels of 1-63 lower-case
  // letters, digits and '-', starting and ending with a letter or digit.
  if (line.empty() || line.size() > 253) return "";
  std::size_t label = 0;
  char prev = '.';
  for (char c : line) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (c == '.') {
      if (prev == '.' || prev == '-') return "";
      label = 0;
    } else if (c == '-') {
      if (prev == '.') return "";
      if (++label > 63) return "";
    } else if (alnum) {
      if (++label > 63) return "";
    } else {
      return "";
    }
    prev = c;
  }
  if (prev == '.' || prev == '-') return "";
  return std::string(line);
}

}  // namespace memtrimd::cgroup

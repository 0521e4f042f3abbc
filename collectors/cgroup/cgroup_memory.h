// What the cgroup collector fills in a sample (collectors/sample.h): the
// target's memory cgroup, its limit and where the limit came from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "collectors/cgroup/pod_identity.h"

namespace memtrimd {

enum class LimitSource { kNone, kCgroup, kFlag };

struct CgroupMemory {
  int version = 0;                      // 1 or 2; 0 when only the flag fallback is known
  std::string path;                     // the cgroup directory read, as memtrimd reached it
  std::optional<uint64_t> limit_bytes;  // absent: no limit
  LimitSource limit_source = LimitSource::kNone;
  std::optional<uint64_t> usage_bytes;
  std::optional<uint64_t> anon_bytes;
  std::optional<uint64_t> file_bytes;
  std::optional<uint64_t> oom_kills;
  // The pod the target runs in, from its /proc/<pid>/cgroup (absent: not in
  // a pod), and the pod's name from the container's /etc/hostname ("" when
  // there is no pod, the file is unreadable or not a pod name, or the target
  // shares the node's hostname: a hostNetwork pod).
  std::optional<cgroup::PodIdentity> pod;
  std::string pod_name;
};

}  // namespace memtrimd

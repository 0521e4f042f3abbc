// Collector "cgroup": the target's container memory limit, usage, anon/file
// split and OOM kills, read through /proc/<pid>/root/sys/fs/cgroup so that
// the target's own view (its cgroup namespace and mounts) is what counts;
// and the pod it runs in (pod_identity.h) with the pod's name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "collectors/common/collector.h"

namespace memtrimd::cgroup {

class CgroupCollector : public Collector {
 public:
  // `fallback_limit` (--target.memory-limit, e.g. from the Downward API) is
  // used only when the cgroup cannot be read.
  // `node_proc_dir`: the /proc entry of a process in the node's own UTS
  // namespace, PID 1 of memtrimd's PID namespace by default (with hostPID,
  // the node's init). A pod target that shares its hostname namespace is a
  // hostNetwork pod: its /etc/hostname names the node, so no pod name is
  // taken from it. When that process runs in a pod itself (a sidecar's
  // pause process), there is no node to compare with.
  explicit CgroupCollector(std::optional<uint64_t> fallback_limit,
                           std::string node_proc_dir = "/proc/1")
      : fallback_limit_(fallback_limit), node_proc_dir_(std::move(node_proc_dir)) {}
  std::string_view Name() const override { return "cgroup"; }
  Status Collect(const Target& target, TargetSample& out) override;

 private:
  std::optional<uint64_t> fallback_limit_;
  std::string node_proc_dir_;
};

}  // namespace memtrimd::cgroup

// Everything the user can set, after validation. Flags and their
// environment variables are defined in flags.cc.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/base/log_format.h"
#include "daemon/exposition/metric_detail.h"
#include "daemon/sampling/collector_registry.h"
#include "daemon/sampling/node_discovery.h"

namespace memtrimd {

using namespace std::chrono_literals;

// The port sits outside 9100-9999, which the Prometheus default-port list
// has filled.
inline constexpr const char* kDefaultListenAddress = ":8486";

struct TrimConfig {
  std::chrono::milliseconds interval = 5min;  // 0: no scheduled trims
  std::string backend = "auto";               // auto | jvm | agent
  double min_limit_ratio = 0;                 // 0: no gate
  uint64_t floor_bytes = 1ull << 20;
  int unproductive_runs = 3;
  std::chrono::milliseconds max_interval = 1h;
  uint64_t reset_growth_bytes = 64ull << 20;
  std::chrono::milliseconds timeout = 60s;
  double jitter = 0.1;
  bool force = false;  // trim even a JVM that trims itself
  // Which targets are trimmed: every one that did not opt out with
  // MEMTRIMD_TRIM=0 ("all"), or only those that opted in with
  // MEMTRIMD_TRIM=1 ("opted-in"). Unset: all in sidecar mode, opted-in in
  // node-agent mode.
  std::optional<bool> only_opted_in;
  int max_per_minute = 6;  // node-wide: trims started in any 60 s
};

struct DaemonConfig {
  std::vector<std::string> listen_addresses{kDefaultListenAddress};
  int max_connections = 48;  // civetweb worker threads
  std::string telemetry_path = "/metrics";
  std::chrono::milliseconds sample_interval = 10s;
  std::optional<pid_t> target_pid;
  std::string target_pidfile;
  std::string target_match;
  // --targets=node: node-agent mode (every matching process); otherwise the
  // one target of the --target.* rule.
  bool node_mode = false;
  NodeSelectors node;
  std::chrono::milliseconds discovery_interval = 30s;
  MetricDetail metric_detail;  // which detail families /metrics carries
  CollectorOptions collector;  // intervals, deadlines, heap size, limit fallback
  CollectorSwitches collectors;
  std::string log_level = "info";
  LogFormat log_format = LogFormat::kLogfmt;
  TrimConfig trim;
  bool enable_trim_api = false;
  std::string web_config_file;  // --web.config.file; empty: plain HTTP, no auth
  // --web.history: how far back the incident page's charts go.
  std::chrono::milliseconds web_history = std::chrono::hours(1);
};

struct TrimCommandConfig {
  pid_t pid = 0;
  bool json = false;
  std::string backend = TrimConfig{}.backend;
  std::chrono::milliseconds timeout = TrimConfig{}.timeout;
  uint64_t glibc_heap_size = CollectorOptions{}.glibc_heap_size;
};

struct JcmdConfig {
  pid_t pid = 0;
  std::string command;  // one diagnostic command line, e.g. "VM.native_memory summary"
  std::chrono::milliseconds timeout = 10s;
};

struct InspectConfig {
  pid_t pid = 0;
  bool json = false;
  bool sites = false;  // --sites: read the agent's sampled sites (never turning sampling on)
  CollectorOptions collector;
};

}  // namespace memtrimd

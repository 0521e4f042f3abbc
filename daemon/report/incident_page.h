// GET /: the incident page. One self-contained HTML document (inline CSS
// and SVG, no script, no external resource) drawn from the same snapshot
// and trim state as /metrics and /report, plus the SampleHistory's last
// hour. Sidecar: the target's page; node mode: a table of the targets,
// fullest first, each linking to /?pid=N.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "daemon/report/history.h"
#include "daemon/sampling/snapshot.h"
#include "daemon/trim/trim_engine.h"

namespace memtrimd {

struct IncidentPageOptions {
  std::string metrics_path = "/metrics";
  // How often the page reloads itself (a meta refresh): the sample
  // interval, at least 30 s; a reload never makes memtrimd sample.
  std::chrono::milliseconds refresh{10000};
  std::optional<pid_t> pid;  // ?pid=N
};

struct IncidentPage {
  int code = 200;  // 404: no target with that pid
  std::string html;
};

// `snap`: nullptr before the first sample. `trims`, `history`: may be null.
IncidentPage RenderIncidentPage(const Snapshot* snap, const std::vector<TrimStats>* trims,
                                const SampleHistory* history, const IncidentPageOptions& options);

}  // namespace memtrimd

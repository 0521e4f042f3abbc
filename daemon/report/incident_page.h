// GET /: the incident page. One HTML document with inline SVG, drawn from
// the same snapshot and trim state as /metrics and /report, plus the
// SampleHistory's last hour. Sidecar: the target's page; node mode: a table
// of the targets, fullest first, each linking to /?pid=N.
//
// It works under a strict Content-Security-Policy (default-src 'self', as a
// --web.config.file may set): no script, no style element or attribute (the
// SVG's colours are presentation attributes), no data: URL; its only other
// requests are the stylesheet and the icon below, which memtrimd serves
// itself through the same handler (authentication, TLS, headers).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
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

// The page's stylesheet (GET kIncidentCssPath, text/css) and icon (GET
// kIncidentIconPath, image/svg+xml): fixed texts. The page draws its bar
// and charts in colour without the stylesheet too.
inline constexpr const char* kIncidentCssPath = "/incident.css";
inline constexpr const char* kIncidentIconPath = "/favicon.svg";
std::string_view IncidentPageCss();
std::string_view IncidentPageIcon();
// "?v=<version>-<revision>": the page links both with it, so that they can be
// cached for a day (a reload of the page asks only for the page) and a new
// build's are fetched at once.
const std::string& IncidentPageAssetQuery();

}  // namespace memtrimd

// The incident page's pictures as inline SVG: the RSS account as one
// stacked bar against the memory limit, and small line charts of the
// history. Pure functions of numbers; every drawn value is also in the DOM
// as a data attribute, so a browser test can read back what was drawn.
// Colours are SVG presentation attributes (fill=, stroke=), never style
// attributes or CSS: a Content-Security-Policy without 'unsafe-inline'
// blocks those, and the page must draw the same under one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/base/units.h"

namespace memtrimd {

struct BarPart {
  std::string part;   // the memtrimd_rss_account_bytes part label
  std::string label;  // for people
  uint64_t bytes = 0;
  // The figure printed for it ("0.4 MiB"); "" prints bytes in MiB. The page
  // passes the legend's and the equation's rounding, so all three agree.
  std::string shown;
};

// The colour of the i-th part of the bar (and of its legend key).
const char* PartColor(std::size_t i);

// A legend key: a 10 px square of `color` (inline SVG, no style attribute).
std::string Swatch(std::string_view color);

// One bar, width proportional to bytes; the scale is the limit, or the RSS
// when there is no limit or the RSS exceeds it. The limit is drawn as a
// line. Each part is <rect data-part=.. data-bytes=.. fill=PartColor(i)>.
std::string RenderAccountBar(const std::vector<BarPart>& parts, uint64_t rss,
                             std::optional<uint64_t> limit);

struct ChartPoint {
  int64_t t_ms = 0;
  uint64_t v = 0;
};
struct ChartSeries {
  std::string name;   // data-series
  std::string label;  // legend
  std::string color;
  bool dashed = false;
  std::vector<ChartPoint> points;
};
struct ChartMark {  // a trim: RSS+swap before and after at one time
  int64_t t_ms = 0;
  uint64_t before = 0;
  uint64_t after = 0;
};

// A line chart over [t_from, t_to] (Unix ms), y from 0 to the largest
// value. Each series is one <polyline data-series=.. data-count=N> with N
// points; each mark a <g class="trim" data-before=.. data-after=..>.
// A series without points draws nothing (the legend says "no data").
// `note`, when not empty, is printed under the legend (what a series is, or
// why it has no data and what would give it).
std::string RenderLineChart(std::string_view title, int64_t t_from, int64_t t_to,
                            const std::vector<ChartSeries>& series,
                            const std::vector<ChartMark>& marks, std::string_view note = "");

// "<" ">" "&" and quotes as entities.
std::string HtmlEscape(std::string_view s);

}  // namespace memtrimd

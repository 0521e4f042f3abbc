#include "daemon/report/svg_chart.h"

#include <algorithm>
#include <cstdio>

#include "collectors/common/text.h"
#include "daemon/base/units.h"

namespace memtrimd {
namespace {

// Coordinates with one decimal: enough on screen, short in the page.
std::string Num(double v) {
  if (!(v == v)) v = 0;  // never NaN in the page, whatever the input
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

constexpr double kBarWidth = 760;
constexpr double kBarHeight = 28;

// Tableau 10 and two more: neighbours stay apart on the bar.
constexpr const char* kPartColors[] = {"#9aa5b1", "#4e79a7", "#f28e2b", "#76b7b2",
                                       "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                       "#9c755f", "#e15759", "#bab0ac", "#1f77b4"};
constexpr const char* kTrimColor = "#2a7";
constexpr const char* kLimitColor = "#c00";
constexpr const char* kAxisText = " font-size=\"10\" fill=\"#555\"";

}  // namespace

const char* PartColor(std::size_t i) {
  return kPartColors[i % (sizeof(kPartColors) / sizeof(kPartColors[0]))];
}

std::string Swatch(std::string_view color) {
  return "<svg class=\"key\" width=\"10\" height=\"10\" aria-hidden=\"true\"><rect width=\"10\" "
         "height=\"10\" fill=\"" +
         HtmlEscape(color) + "\"/></svg>";
}

std::string HtmlEscape(std::string_view raw) {
  // Invalid UTF-8 becomes U+FFFD, as in every writer (text::ToValidUtf8):
  // the page is served as UTF-8.
  const std::string valid = text::ToValidUtf8(raw);
  std::string out;
  out.reserve(valid.size());
  for (char c : valid) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string RenderAccountBar(const std::vector<BarPart>& parts, uint64_t rss,
                             std::optional<uint64_t> limit) {
  // The scale: the limit, so that the free room is visible; the RSS when it
  // is larger (then the limit line sits inside the bar).
  const uint64_t scale = std::max<uint64_t>({rss, limit.value_or(0), 1});
  const double per_byte = kBarWidth / static_cast<double>(scale);
  std::string out = "<svg class=\"bar\" viewBox=\"0 0 " + Num(kBarWidth + 40) + " " +
                    Num(kBarHeight + 22) + "\" width=\"" + Num(kBarWidth + 40) + "\" height=\"" +
                    Num(kBarHeight + 22) + "\" data-rss=\"" + std::to_string(rss) +
                    "\" data-scale-bytes=\"" + std::to_string(scale) + "\"";
  if (limit) out += " data-limit=\"" + std::to_string(*limit) + "\"";
  out += " role=\"img\">\n";
  out += "<rect x=\"0\" y=\"0\" width=\"" + Num(kBarWidth) + "\" height=\"" + Num(kBarHeight) +
         "\" class=\"room\" fill=\"#eee\" stroke=\"#bbb\"/>\n";
  double x = 0;
  std::size_t i = 0;
  for (const BarPart& p : parts) {
    const double w = static_cast<double>(p.bytes) * per_byte;
    out += "<rect class=\"part\" data-part=\"" + HtmlEscape(p.part) + "\" data-bytes=\"" +
           std::to_string(p.bytes) + "\" x=\"" + Num(x) + "\" y=\"0\" width=\"" + Num(w) +
           "\" height=\"" + Num(kBarHeight) + "\" fill=\"" + PartColor(i++) + "\"><title>" +
           HtmlEscape(p.label) + ": " +
           (p.shown.empty() ? FormatMib(p.bytes) : HtmlEscape(p.shown)) + "</title></rect>\n";
    x += w;
  }
  if (limit) {
    const double lx = static_cast<double>(*limit) * per_byte;
    out += "<line class=\"limit\" x1=\"" + Num(lx) + "\" x2=\"" + Num(lx) + "\" y1=\"-2\" y2=\"" +
           Num(kBarHeight + 4) + "\" stroke=\"" + kLimitColor +
           "\" stroke-width=\"2\"/>\n<text x=\"" + Num(std::min(lx, kBarWidth - 90)) + "\" y=\"" +
           Num(kBarHeight + 16) + "\">limit " + FormatMib(*limit) + "</text>\n";
  } else {
    out += "<text x=\"0\" y=\"" + Num(kBarHeight + 16) + "\">no memory limit known</text>\n";
  }
  out += "</svg>\n";
  return out;
}

std::string RenderLineChart(std::string_view title, int64_t t_from, int64_t t_to,
                            const std::vector<ChartSeries>& series,
                            const std::vector<ChartMark>& marks, std::string_view note) {
  constexpr double kW = 360, kH = 120, kLeft = 56, kTop = 8, kBottom = 20;
  uint64_t top = 0;
  for (const ChartSeries& s : series) {
    for (const ChartPoint& p : s.points) top = std::max(top, p.v);
  }
  for (const ChartMark& m : marks) top = std::max({top, m.before, m.after});
  // Headroom above the largest value; at least one byte so nothing divides by 0.
  const double y_max = std::max(1.0, static_cast<double>(top) * 1.08);
  const double span = static_cast<double>(std::max<int64_t>(t_to - t_from, 1));
  auto X = [&](int64_t t) {
    double f = static_cast<double>(t - t_from) / span;
    return kLeft + std::clamp(f, 0.0, 1.0) * kW;
  };
  auto Y = [&](uint64_t v) { return kTop + kH - static_cast<double>(v) / y_max * kH; };

  std::string out = "<figure class=\"chart\"><figcaption>" + HtmlEscape(title) + "</figcaption>\n";
  out += "<svg viewBox=\"0 0 " + Num(kLeft + kW + 8) + " " + Num(kTop + kH + kBottom) +
         "\" width=\"" + Num(kLeft + kW + 8) + "\" height=\"" + Num(kTop + kH + kBottom) +
         "\" data-y-max=\"" + Num(y_max) + "\" role=\"img\">\n";
  out += "<rect class=\"plot\" x=\"" + Num(kLeft) + "\" y=\"" + Num(kTop) + "\" width=\"" +
         Num(kW) + "\" height=\"" + Num(kH) + "\" fill=\"#fff\" stroke=\"#ccc\"/>\n";
  out += "<text class=\"axis\" x=\"" + Num(kLeft - 4) + "\" y=\"" + Num(kTop + 10) +
         "\" text-anchor=\"end\"" + kAxisText + ">" + FormatMib(static_cast<uint64_t>(y_max)) +
         "</text>\n<text class=\"axis\" x=\"" + Num(kLeft - 4) + "\" y=\"" + Num(kTop + kH) +
         "\" text-anchor=\"end\"" + kAxisText + ">0</text>\n";
  out += "<text class=\"axis\" x=\"" + Num(kLeft) + "\" y=\"" + Num(kTop + kH + 14) + "\"" +
         kAxisText + ">" + ClockUtc(t_from) + "</text>\n<text class=\"axis\" x=\"" +
         Num(kLeft + kW) + "\" y=\"" + Num(kTop + kH + 14) + "\" text-anchor=\"end\"" + kAxisText +
         ">" + ClockUtc(t_to) + " UTC</text>\n";
  for (const ChartSeries& s : series) {
    if (s.points.empty()) continue;
    out += "<polyline data-series=\"" + HtmlEscape(s.name) + "\" data-count=\"" +
           std::to_string(s.points.size()) + "\" data-last=\"" + std::to_string(s.points.back().v) +
           "\" fill=\"none\" stroke-width=\"1.5\" stroke=\"" + HtmlEscape(s.color) + "\"" +
           (s.dashed ? " stroke-dasharray=\"4 3\"" : "") + " points=\"";
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      out += (i ? " " : "") + Num(X(s.points[i].t_ms)) + "," + Num(Y(s.points[i].v));
    }
    out += "\"/>\n";
    // A single sample would be an invisible line: show it as a dot.
    if (s.points.size() == 1) {
      out += "<circle cx=\"" + Num(X(s.points[0].t_ms)) + "\" cy=\"" + Num(Y(s.points[0].v)) +
             "\" r=\"2.5\" fill=\"" + HtmlEscape(s.color) + "\"/>\n";
    }
  }
  for (const ChartMark& m : marks) {
    const double x = X(m.t_ms);
    out += "<g class=\"trim\" data-t=\"" + std::to_string(m.t_ms) + "\" data-before=\"" +
           std::to_string(m.before) + "\" data-after=\"" + std::to_string(m.after) +
           "\"><title>trim at " + ClockUtc(m.t_ms) + " UTC: " + FormatMib(m.before) + " -> " +
           FormatMib(m.after) + "</title><line x1=\"" + Num(x) + "\" x2=\"" + Num(x) + "\" y1=\"" +
           Num(Y(m.before)) + "\" y2=\"" + Num(Y(m.after)) + "\" stroke=\"" + kTrimColor +
           "\" stroke-width=\"2\"/><circle cx=\"" + Num(x) + "\" cy=\"" + Num(Y(m.before)) +
           "\" r=\"3\" class=\"before\" fill=\"" + kLimitColor + "\"/><circle cx=\"" + Num(x) +
           "\" cy=\"" + Num(Y(m.after)) + "\" r=\"3\" class=\"after\" fill=\"" + kTrimColor +
           "\"/></g>\n";
  }
  out += "</svg>\n<div class=\"legend\">";
  for (const ChartSeries& s : series) {
    out += "<span>" + Swatch(s.color) + HtmlEscape(s.label) +
           (s.points.empty() ? " (no data)" : ": " + FormatMib(s.points.back().v)) + "</span> ";
  }
  if (!marks.empty()) {
    out += "<span>" + Swatch(kTrimColor) + "trims, before and after (" +
           std::to_string(marks.size()) + ")</span>";
  }
  out += "</div>";
  if (!note.empty()) out += "<p class=\"note\">" + HtmlEscape(note) + "</p>";
  out += "</figure>\n";
  return out;
}

}  // namespace memtrimd

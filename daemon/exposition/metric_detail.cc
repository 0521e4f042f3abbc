#include "daemon/exposition/metric_detail.h"

#include <algorithm>

namespace memtrimd {

std::string ParseMetricDetail(std::string_view text, MetricDetail& out) {
  MetricDetail d;
  if (text == "all") {
    out = d;
    return "";
  }
  d.all = false;
  if (text == "none" || text.empty()) {
    out = d;
    return "";
  }
  while (!text.empty()) {
    std::size_t comma = text.find(',');
    std::string_view name = text.substr(0, comma);
    if (std::find(std::begin(kDetailFamilies), std::end(kDetailFamilies), name) ==
        std::end(kDetailFamilies)) {
      std::string known;
      for (std::string_view f : kDetailFamilies)
        known += (known.empty() ? "" : ", ") + std::string(f);
      return "\"" + std::string(name) +
             "\" is not a detail family (all, none, or a list of: " + known + ")";
    }
    d.on.emplace(name);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  out = d;
  return "";
}

}  // namespace memtrimd

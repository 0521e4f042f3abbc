#include "daemon/analysis/site_share.h"

#include <cmath>
#include <cstdio>

namespace memtrimd {

uint64_t TwoStandardErrors(double variance) {
  return variance > 0 ? static_cast<uint64_t>(std::llround(2.0 * std::sqrt(variance))) : 0;
}

SiteShare ShareOf(uint64_t bytes, double variance, uint64_t part) {
  SiteShare s;
  if (part == 0) return s;
  const double whole = static_cast<double>(part);
  s.percent = 100.0 * static_cast<double>(bytes) / whole;
  s.error_percent = 100.0 * static_cast<double>(TwoStandardErrors(variance)) / whole;
  if (bytes > part) {
    s.percent = 100.0;
    s.capped = true;
    s.text = "100 % *";
    return s;
  }
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%.0f %%", s.percent);
  s.text = buf;
  return s;
}

}  // namespace memtrimd

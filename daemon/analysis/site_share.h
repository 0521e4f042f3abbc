// What share of an account part (outside NMT, or native) the sampled sites
// hold, from their resident estimate: the estimate has an error (its
// samples), and the part is read at another moment, so an estimate can
// come out above the part. Such a share is shown as "100 % *" with a
// footnote, never as more than the whole.
#pragma once

#include <cstdint>
#include <string>

namespace memtrimd {

struct SiteShare {
  double percent = 0;        // of the part, at most 100
  double error_percent = 0;  // two standard errors of the estimate, of the part
  bool capped = false;       // the estimate was above the part
  std::string text;          // "34 %", "100 % *"; "" when the part is 0
};

// Pure: `bytes` (an estimate with `variance`, bytes squared) of `part`.
SiteShare ShareOf(uint64_t bytes, double variance, uint64_t part);

// Pure: two standard errors of an estimate with `variance`, in bytes.
uint64_t TwoStandardErrors(double variance);

}  // namespace memtrimd

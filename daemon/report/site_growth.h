// Which of a target's largest allocation sites grow steadily: the leak
// finding (analysis/site_leak.h) over the site history, and its one wording
// for inspect's table and /report (text and JSON) and the incident page.
// Only the daemon has the history; a one-shot `memtrimd inspect` reads once
// and has no growth to judge.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/analysis/site_leak.h"
#include "daemon/base/json_writer.h"
#include "daemon/report/history.h"
#include "daemon/report/text_table.h"

namespace memtrimd::report {

struct GrowingSite {
  std::string site;
  bool nmt_tracked = false;
  SiteLeak leak;
};

struct SiteGrowth {
  int64_t first_ms = 0;  // the oldest read the check could look at
  int64_t last_ms = 0;
  std::size_t reads = 0;
  std::vector<GrowingSite> growing;  // fastest first
};

// The target's sites judged over its history up to sample
// `up_to_sequence`; nullopt without a history of its sites.
std::optional<SiteGrowth> SiteGrowthOf(const SampleHistory* history, const Target& target,
                                       uint64_t up_to_sequence);

// "hold < hold_200 < main: live bytes grew 10.2 MiB/h since 09:12:30 UTC,
// steady for 48m, Kendall tau 0.91 over 96 reads": one line, no final
// period.
std::string GrowingSiteSentence(const GrowingSite& g);
// What the check looked at when nothing grows, or why it cannot tell yet.
std::string NoGrowthSentence(const SiteGrowth& g);

// "Sites growing steadily" under the sites section.
void SiteGrowthText(TextTable& t, const SiteGrowth& g);
// "site_growth": {"checked_seconds": ..., "reads": ..., "growing": [...]}.
void SiteGrowthJson(JsonWriter& w, const SiteGrowth& g);

}  // namespace memtrimd::report

// "The largest N sites, and the rest as one": how every view of the
// agent's allocation sites lists them (inspect, /report, the page, the
// metrics, the site history), so that "other" means the same everywhere.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectors/agent/client/site_profile.h"

namespace memtrimd {

enum class EmptySites {
  kStop,  // a list for people ends at the first site with nothing live
  kKeep,  // a metric keeps the series of a site that dropped to zero
};

// Calls `each(i, site)` for the first `top` of p.sites (sorted by live
// bytes, largest first) and returns the live bytes of all the others: the
// "other sites" row.
template <typename Each>
uint64_t ForTopSites(const agent::SiteProfile& p, std::size_t top, EmptySites empty, Each&& each) {
  uint64_t shown = 0;
  for (std::size_t i = 0; i < p.sites.size() && i < top; ++i) {
    const agent::NamedSite& site = p.sites[i];
    if (empty == EmptySites::kStop && site.values.live_bytes == 0) break;
    each(i, site);
    shown += site.values.live_bytes;
  }
  return p.total.live_bytes > shown ? p.total.live_bytes - shown : 0;
}

}  // namespace memtrimd

// The account section: who holds the RSS (file-backed, Java heap, NMT-known
// native, free memory the allocator keeps, the rest), the same account in
// inspect's table, its JSON and the incident page's bar.
#pragma once

#include <string>
#include <string_view>

#include "daemon/base/json_writer.h"
#include "daemon/report/text_table.h"
#include "daemon/sampling/snapshot.h"

namespace memtrimd::report {

// What a part of the account (memtrimd_rss_account_bytes{part}) is called
// wherever it is printed; the allocator's free part is named by its
// allocator ("jemalloc free kept"), so it has none here.
std::string AccountPartLabel(std::string_view part);

// "Who holds the RSS (one smaps read, ...)": one row a part, the equation.
void AccountText(TextTable& t, const TargetSample& s);
// "rss_account": {...}.
void AccountJson(JsonWriter& w, const TargetSample& s);
// The page's "Who holds the RSS": the bar against the limit, its legend and
// the equation; or why there is no account yet.
void AccountHtml(std::string& out, const TargetSample& s);

}  // namespace memtrimd::report

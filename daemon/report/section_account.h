// The account section: who holds the RSS (file-backed, Java heap, NMT-known
// native, free memory the allocator keeps, the rest), the same account in
// inspect's table, its JSON and the incident page's bar.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "daemon/analysis/rss_account.h"
#include "daemon/base/json_writer.h"
#include "daemon/report/text_table.h"
#include "daemon/sampling/snapshot.h"

namespace memtrimd::report {

// What a part of the account (memtrimd_rss_account_bytes{part}) is called
// wherever it is printed; the allocator's free part is named by its
// allocator ("jemalloc free kept"), so it has none here.
std::string AccountPartLabel(std::string_view part);

// When the account's reads are not of the moment `now` (a daemon's smaps
// read is up to a --smaps.interval old) or one was left out as not of the
// smaps read's moment: "As of the smaps read 47 s ago (08:12:03 UTC), when
// RSS was 40.3 MiB (98.6 MiB now); NMT read 12 s ago ...". "" when all of
// it is of now (a one-shot inspect), or when the reads carry no time.
std::string AccountMomentText(const RssAccount& a, std::chrono::system_clock::time_point now);
// Why no share of the account's parts is computed against figures of now
// (the sites'): its smaps read's RSS is not in step with the RSS now. ""
// when it is.
std::string AccountNotOfNow(const RssAccount& a, std::chrono::system_clock::time_point now);

// "Who holds the RSS (one smaps read, ...)": one row a part, the equation,
// dated against `now` when older.
void AccountText(TextTable& t, const TargetSample& s, std::chrono::system_clock::time_point now);
// "rss_account": {...}, with when each read was taken and whether they and
// the RSS now are in step.
void AccountJson(JsonWriter& w, const TargetSample& s);
// The page's "Who holds the RSS": the bar against the limit, its legend and
// the equation, dated against `now` (the sample's time) when older; or why
// there is no account yet.
void AccountHtml(std::string& out, const TargetSample& s,
                 std::chrono::system_clock::time_point now);

}  // namespace memtrimd::report

// The reference pages must say what the code does: each row of the flag
// table (docs/flags.md), the metric table (docs/metrics.md) and the path
// table (docs/http.md) is compared with the flag definitions, the metric
// table and the paths the server answers.

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "daemon/analysis/allocator_findings.h"
#include "daemon/analysis/findings.h"
#include "daemon/analysis/rss_account.h"
#include "daemon/cli/flags.h"
#include "daemon/exposition/metric_detail.h"
#include "daemon/exposition/metric_table.h"
#include "daemon/report/incident_page.h"

namespace memtrimd {
namespace {

std::vector<std::string> Cells(const std::string& row) {
  std::vector<std::string> cells;
  std::stringstream ss(row);
  std::string cell;
  std::getline(ss, cell, '|');  // before the first '|'
  while (std::getline(ss, cell, '|')) {
    std::size_t a = cell.find_first_not_of(' ');
    std::size_t b = cell.find_last_not_of(' ');
    cell = a == std::string::npos ? "" : cell.substr(a, b - a + 1);
    if (cell.size() >= 2 && cell.front() == '`' && cell.back() == '`') {
      cell = cell.substr(1, cell.size() - 2);
    }
    cells.push_back(cell);
  }
  return cells;
}

constexpr const char* kFlagsPage = "docs/flags.md";
constexpr const char* kMetricsPage = "docs/metrics.md";
constexpr const char* kHttpPage = "docs/http.md";

// Rows of the first markdown table after the line `heading` in `page` (a
// path relative to the source tree).
std::vector<std::vector<std::string>> TableAfter(const std::string& page,
                                                 const std::string& heading) {
  std::ifstream in(std::string(MEMTRIMD_SOURCE_DIR) + "/" + page);
  std::string line;
  bool in_section = false, in_table = false;
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) {
    if (line == heading) {
      in_section = true;
      continue;
    }
    if (!in_section) continue;
    if (line.rfind("|", 0) == 0) {
      in_table = true;
      if (line.find("---") == std::string::npos) rows.push_back(Cells(line));
    } else if (in_table) {
      break;
    }
  }
  if (!rows.empty()) rows.erase(rows.begin());  // header row
  return rows;
}

TEST(ReadmeReference, FlagTableMatchesTheCode) {
  auto rows = TableAfter(kFlagsPage, "# Flags");
  ASSERT_FALSE(rows.empty()) << kFlagsPage << " has no flag table under '# Flags'";
  std::map<std::string, std::vector<std::string>> readme;
  for (const auto& r : rows) {
    ASSERT_GE(r.size(), 4u);
    readme[r[0]] = r;
  }
  std::set<std::string> code;
  for (const FlagDoc& f : FlagReference()) {
    std::string key = f.command.empty() ? f.name : f.command + " " + f.name;
    code.insert(key);
    auto it = readme.find(key);
    ASSERT_NE(it, readme.end()) << key << " is missing from the flag table of " << kFlagsPage;
    EXPECT_EQ(it->second[1], f.env) << key;
    std::string def = f.default_value;
    if (def.size() >= 2 && def.front() == '[' && def.back() == ']')
      def = def.substr(1, def.size() - 2);
    EXPECT_EQ(it->second[2], def) << key;
  }
  for (const auto& [key, row] : readme) {
    EXPECT_TRUE(code.count(key)) << key << " is in " << kFlagsPage << " but not a flag";
  }
}

TEST(ReadmeReference, MetricTableMatchesTheCode) {
  auto rows = TableAfter(kMetricsPage, "# Metrics");
  ASSERT_FALSE(rows.empty()) << kMetricsPage << " has no metric table under '# Metrics'";
  std::map<std::string, std::vector<std::string>> readme;
  for (const auto& r : rows) {
    ASSERT_GE(r.size(), 4u);
    readme[r[0]] = r;
  }
  std::set<std::string> code;
  for (const MetricDef* d : AllMetrics()) {
    std::string name(d->name);
    code.insert(name);
    auto it = readme.find(name);
    ASSERT_NE(it, readme.end()) << name << " is missing from the metric table of " << kMetricsPage;
    EXPECT_EQ(it->second[1], MetricTypeName(d->type)) << name;
    std::string labels;
    for (std::string_view l : d->labels) labels += (labels.empty() ? "" : ", ") + std::string(l);
    EXPECT_EQ(it->second[2], labels) << name;
    // The row names the --metrics.detail family the code puts it in.
    const std::string mark = "*detail: " + std::string(d->detail) + "*";
    EXPECT_EQ(it->second[3].find("*detail:") != std::string::npos, !d->detail.empty()) << name;
    if (!d->detail.empty()) {
      EXPECT_NE(it->second[3].find(mark), std::string::npos) << name;
    }
  }
  for (const auto& [name, row] : readme) {
    EXPECT_TRUE(code.count(name)) << name << " is in " << kMetricsPage << " but not exported";
  }
}

std::string ReadSource(const std::string& path) {
  std::ifstream in(std::string(MEMTRIMD_SOURCE_DIR) + "/" + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The risk checks the code makes are the ones the JVM page, the metric's
// help and the alert rules name, and nothing else.
TEST(ReadmeReference, RiskChecksMatchTheCode) {
  const std::string readme = ReadSource("docs/jvm.md");
  const std::string help(metric::kJvmRisk.help);
  for (std::string_view c : kRiskChecks) {
    EXPECT_NE(readme.find("`" + std::string(c) + "`"), std::string::npos) << c << " in docs/jvm.md";
    EXPECT_NE(help.find(std::string(c)), std::string::npos) << c << " in the metric's help";
  }
  const std::string rules = ReadSource("deploy/prometheus/alerts.rules.yml");
  const std::string key = "check=\"";
  for (std::size_t at = rules.find(key); at != std::string::npos; at = rules.find(key, at + 1)) {
    std::size_t begin = at + key.size();
    std::string check = rules.substr(begin, rules.find('"', begin) - begin);
    // memtrimd_jvm_risk's checks, or memtrimd_allocator_risk's.
    const bool jvm = std::find(kRiskChecks.begin(), kRiskChecks.end(), check) != kRiskChecks.end();
    const bool allocator = std::find(kAllocatorChecks.begin(), kAllocatorChecks.end(), check) !=
                           kAllocatorChecks.end();
    EXPECT_TRUE(jvm || allocator) << "alerts.rules.yml names check " << check
                                  << ", which the code never makes";
  }
}

// The RSS account's parts are the ones the metric table's row lists.
TEST(ReadmeReference, AccountPartsMatchTheCode) {
  RssAccount jvm;
  jvm.java_heap = 0;
  jvm.nmt = NmtKnown{};
  jvm.glibc_free = 0;
  RssAccount program;
  std::string row;
  for (const auto& r : TableAfter(kMetricsPage, "# Metrics")) {
    if (!r.empty() && r[0] == "memtrimd_rss_account_bytes") row = r.back();
  }
  ASSERT_FALSE(row.empty()) << "no memtrimd_rss_account_bytes row in " << kMetricsPage;
  const std::string help(metric::kRssAccount.help);
  for (const RssAccount* a : {&jvm, &program}) {
    for (const auto& [part, bytes] : AccountParts(*a)) {
      EXPECT_NE(row.find("`" + std::string(part) + "`"), std::string::npos) << part;
      EXPECT_NE(help.find(part), std::string::npos) << part << " in the metric's help";
    }
  }
}

// Every detail family is in the --metrics.detail row of the flag table and
// has its row in the metric page's Series budget table of families, and
// that table names no other.
TEST(ReadmeReference, DetailFamiliesMatchTheCode) {
  std::string flag_row;
  for (const auto& r : TableAfter(kFlagsPage, "# Flags")) {
    if (!r.empty() && r[0] == "--metrics.detail") flag_row = r.back();
  }
  ASSERT_FALSE(flag_row.empty()) << "no --metrics.detail row in " << kFlagsPage;
  std::set<std::string> families;
  for (std::string_view f : kDetailFamilies) {
    families.insert(std::string(f));
    EXPECT_NE(flag_row.find("`" + std::string(f) + "`"), std::string::npos)
        << f << " in the --metrics.detail row";
  }
  // The rows after the header "| `--metrics.detail` | series | ... |".
  std::ifstream in(std::string(MEMTRIMD_SOURCE_DIR) + "/" + kMetricsPage);
  std::string line;
  bool in_table = false;
  std::set<std::string> listed;
  while (std::getline(in, line)) {
    if (line.rfind("| `--metrics.detail` | series |", 0) == 0) {
      in_table = true;
    } else if (in_table && line.rfind("|---", 0) != 0) {
      if (line.rfind("|", 0) != 0) break;
      std::vector<std::string> cells = Cells(line);
      if (!cells.empty()) listed.insert(cells[0]);
    }
  }
  EXPECT_EQ(listed, families);
}

// Every path the server answers (a `path == ...` comparison in
// http_server.cc) has a row in the path table, and the table names no other.
TEST(ReadmeReference, HttpTableMatchesTheServer) {
  const std::string server = ReadSource("daemon/web/http_server.cc");
  ASSERT_FALSE(server.empty());
  const std::map<std::string, std::string> constants = {
      {"kIncidentCssPath", kIncidentCssPath},
      {"kIncidentIconPath", kIncidentIconPath},
      {"options_.telemetry_path", "/metrics"},  // --web.telemetry-path's default
  };
  std::set<std::string> served;
  const std::regex compare(R"re(path == ("(/[^"]*)"|[A-Za-z_][A-Za-z0-9_.]*))re");
  for (auto it = std::sregex_iterator(server.begin(), server.end(), compare);
       it != std::sregex_iterator(); ++it) {
    if ((*it)[2].matched) {
      served.insert((*it)[2].str());
      continue;
    }
    auto c = constants.find((*it)[1].str());
    ASSERT_NE(c, constants.end()) << "http_server.cc compares the path with " << (*it)[1].str()
                                  << ", which this test does not know";
    served.insert(c->second);
  }
  ASSERT_GE(served.size(), 5u) << "no paths found in http_server.cc";

  // The first cell of each row: `/path`, `POST /path`, or several of them.
  std::ifstream in(std::string(MEMTRIMD_SOURCE_DIR) + "/" + kHttpPage);
  std::set<std::string> listed;
  bool in_section = false, in_table = false;
  const std::regex cell_path("`(?:[A-Z]+ )?(/[^`]*)`");
  for (std::string line; std::getline(in, line);) {
    if (line == "# HTTP") in_section = true;
    if (!in_section) continue;
    if (line.rfind("|", 0) != 0) {
      if (in_table) break;
      continue;
    }
    in_table = true;
    const std::string first = line.substr(1, line.find('|', 1) - 1);
    for (auto it = std::sregex_iterator(first.begin(), first.end(), cell_path);
         it != std::sregex_iterator(); ++it) {
      listed.insert((*it)[1].str());
    }
  }
  EXPECT_EQ(listed, served) << "the path table of " << kHttpPage;
}

}  // namespace
}  // namespace memtrimd

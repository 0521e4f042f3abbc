// The README's flag and metric references must say what the code does: each
// table row is compared with the flag definitions and the metric table.

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "daemon/flags.h"
#include "daemon/metric_table.h"

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

// Rows of the markdown table that follows `heading` in README.md.
std::vector<std::vector<std::string>> TableAfter(const std::string& heading) {
  std::ifstream in(std::string(MEMTRIMD_SOURCE_DIR) + "/README.md");
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
  auto rows = TableAfter("### Flags");
  ASSERT_FALSE(rows.empty()) << "README.md has no flag table under '### Flags'";
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
    ASSERT_NE(it, readme.end()) << key << " is missing from the README flag table";
    EXPECT_EQ(it->second[1], f.env) << key;
    std::string def = f.default_value;
    if (def.size() >= 2 && def.front() == '[' && def.back() == ']')
      def = def.substr(1, def.size() - 2);
    EXPECT_EQ(it->second[2], def) << key;
  }
  for (const auto& [key, row] : readme) {
    EXPECT_TRUE(code.count(key)) << key << " is in the README but not a flag";
  }
}

TEST(ReadmeReference, MetricTableMatchesTheCode) {
  auto rows = TableAfter("### Metrics");
  ASSERT_FALSE(rows.empty()) << "README.md has no metric table under '### Metrics'";
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
    ASSERT_NE(it, readme.end()) << name << " is missing from the README metric table";
    EXPECT_EQ(it->second[1], MetricTypeName(d->type)) << name;
    std::string labels;
    for (std::string_view l : d->labels) labels += (labels.empty() ? "" : ", ") + std::string(l);
    EXPECT_EQ(it->second[2], labels) << name;
  }
  for (const auto& [name, row] : readme) {
    EXPECT_TRUE(code.count(name)) << name << " is in the README but not exported";
  }
}

}  // namespace
}  // namespace memtrimd

// The rows of `go tool pprof -top` (with or without -cum): function ->
// its flat and cumulative values as printed ("209.72MB"), in the order
// printed. For the tests that read a profile with Go's pprof.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace memtrimd::testing {

struct PprofTopRow {
  std::string name;
  std::string flat;
  std::string cum;
};

inline std::vector<PprofTopRow> PprofTopRows(const std::string& out) {
  std::vector<PprofTopRow> rows;
  std::istringstream in(out);
  std::string line;
  bool table = false;
  while (std::getline(in, line)) {
    if (line.find("flat%") != std::string::npos) {
      table = true;
      continue;
    }
    if (!table) continue;
    std::istringstream fields(line);
    std::string flat, flat_pct, sum_pct, cum, cum_pct, name;
    if (fields >> flat >> flat_pct >> sum_pct >> cum >> cum_pct >> name) {
      rows.push_back({name, flat, cum});
    }
  }
  return rows;
}

}  // namespace memtrimd::testing

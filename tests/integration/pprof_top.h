// What Go's pprof prints, read back for the tests that read a profile with
// it: the rows of `go tool pprof -top` and the stacks of `-traces`.
#pragma once

#include <cctype>
#include <sstream>
#include <string>
#include <vector>

namespace memtrimd::testing {

struct PprofTopRow {
  std::string name;
  std::string flat;
  std::string cum;
};

// The rows of `go tool pprof -top` (with or without -cum): function -> its
// flat and cumulative values as printed ("209.72MB"), in the order printed.
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

// The frames of each sample of `go tool pprof -traces`, leaf first.
inline std::vector<std::vector<std::string>> PprofTraces(const std::string& out) {
  std::vector<std::vector<std::string>> traces;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("-----------+")) {
      traces.emplace_back();
      continue;
    }
    if (traces.empty()) continue;
    std::istringstream words(line);
    std::string first;
    if (!(words >> first)) continue;
    // The leaf's line starts with the sample's value ("16.51MB   deflateInit2_").
    if (traces.back().empty() && std::isdigit(static_cast<unsigned char>(first[0]))) {
      std::string rest;
      std::getline(words >> std::ws, rest);
      traces.back().push_back(rest);
    } else {
      traces.back().push_back(line.substr(line.find_first_not_of(' ')));
    }
  }
  return traces;
}

}  // namespace memtrimd::testing

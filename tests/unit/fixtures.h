// Reading the recorded fixtures under tests/fixtures (MEMTRIMD_FIXTURES),
// shared by the parser tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace memtrimd::test {

// The whole file; a failed EXPECT (not a crash) when it cannot be opened.
inline std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string FixturePath(const std::string& rel) {
  return std::string(MEMTRIMD_FIXTURES) + "/" + rel;
}

inline std::string ReadFixture(const std::string& rel) { return ReadWhole(FixturePath(rel)); }

// proc/<dir>/expected.txt: "key value" lines computed by compute_expected.py.
inline std::map<std::string, uint64_t> ReadProcExpected(const std::string& dir) {
  std::map<std::string, uint64_t> out;
  std::istringstream in(ReadFixture("proc/" + dir + "/expected.txt"));
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value) out[key] = value;
  EXPECT_FALSE(out.empty()) << dir;
  return out;
}

}  // namespace memtrimd::test

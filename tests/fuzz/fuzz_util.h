// Shared by the fuzz targets: an invariant check that aborts (so libFuzzer
// and the standalone driver both report it as a crash, with the failed
// condition on stderr), and small helpers for building inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#define FUZZ_CHECK(cond)                                                                \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)

namespace memtrimd::fuzz {

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

// Arguments from fuzz input: split at NUL bytes and newlines (so seed files
// can be written either way). A trailing separator does not add an empty
// argument; two separators in a row do.
inline std::vector<std::string> SplitArgs(std::string_view text) {
  std::vector<std::string> args;
  std::string cur;
  bool pending = false;
  for (char c : text) {
    if (c == '\0' || c == '\n') {
      args.push_back(cur);
      cur.clear();
      pending = false;
    } else {
      cur += c;
      pending = true;
    }
  }
  if (pending) args.push_back(cur);
  return args;
}

// Lower-case hex without prefix, as /proc prints addresses.
inline std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace memtrimd::fuzz

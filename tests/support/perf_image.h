// hsperfdata images built in tests, as HotSpot lays the file out
// (perfMemory.hpp): a 32-byte prologue, then entries of a 20-byte header, a
// NUL-terminated name and the value, each padded to 8 bytes. Shared by the
// parser's bounds tests and the node agent's hsperfdata tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace memtrimd::test {

inline void PutLe32(std::string& b, std::size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

using PerfImageEntry = std::pair<std::string, std::variant<int64_t, std::string>>;

inline std::string PerfImage(const std::vector<PerfImageEntry>& entries) {
  std::string out(32, '\0');
  out[0] = '\xCA';
  out[1] = '\xFE';
  out[2] = '\xC0';
  out[3] = '\xC0';
  out[4] = 1;  // little-endian
  out[5] = 2;
  out[7] = 1;
  PutLe32(out, 24, 32);
  PutLe32(out, 28, static_cast<uint32_t>(entries.size()));
  for (const auto& [name, value] : entries) {
    std::string data;
    uint32_t vector_length = 0;
    char type = 'J';
    if (const int64_t* v = std::get_if<int64_t>(&value)) {
      data.assign(8, '\0');
      for (int i = 0; i < 8; ++i) {
        data[i] = static_cast<char>((static_cast<uint64_t>(*v) >> (8 * i)) & 0xff);
      }
    } else {
      type = 'B';
      data = std::get<std::string>(value) + '\0';
      vector_length = static_cast<uint32_t>(data.size());
    }
    const std::size_t data_offset = (20 + name.size() + 1 + 7) / 8 * 8;
    const std::size_t length = (data_offset + data.size() + 7) / 8 * 8;
    std::string entry(length, '\0');
    PutLe32(entry, 0, static_cast<uint32_t>(length));
    PutLe32(entry, 4, 20);
    PutLe32(entry, 8, vector_length);
    entry[12] = type;
    PutLe32(entry, 16, static_cast<uint32_t>(data_offset));
    entry.replace(20, name.size(), name);
    entry.replace(data_offset, data.size(), data);
    out += entry;
  }
  PutLe32(out, 8, static_cast<uint32_t>(out.size()));  // used
  return out;
}

}  // namespace memtrimd::test

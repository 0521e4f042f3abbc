// Inflates a gzip body with zlib, independent of the code under test; the
// tests of gzip and of /metrics both read their output through it. zlib
// checks the trailer's CRC-32 and length, so a wrong one fails here.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

namespace memtrimd {

inline std::string Gunzip(const std::string& gz, std::size_t max_size = 8u << 20) {
  z_stream zs{};
  EXPECT_EQ(inflateInit2(&zs, 15 + 16), Z_OK);
  std::string out(max_size, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  zs.avail_in = static_cast<uInt>(gz.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  inflateEnd(&zs);
  return out;
}

}  // namespace memtrimd

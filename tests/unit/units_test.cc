#include "daemon/base/units.h"

#include <gtest/gtest.h>

namespace memtrimd {
namespace {

using std::chrono::milliseconds;

TEST(ParseDuration, AcceptsPrometheusForms) {
  EXPECT_EQ(ParseDuration("0"), milliseconds(0));
  EXPECT_EQ(ParseDuration("500ms"), milliseconds(500));
  EXPECT_EQ(ParseDuration("15s"), milliseconds(15000));
  EXPECT_EQ(ParseDuration("1m30s"), milliseconds(90000));
  EXPECT_EQ(ParseDuration("2h"), milliseconds(7200000));
  EXPECT_EQ(ParseDuration("1d"), milliseconds(86400000));
  EXPECT_EQ(ParseDuration("1h1m1s1ms"), milliseconds(3661001));
}

TEST(ParseDuration, RejectsMalformed) {
  for (const char* bad : {"", "10", "10x", "-5s", "s", "1.5s", "1s1m", "1s1s", " 1s", "1s ",
                          "99999999999999999999s", "5m ago"}) {
    EXPECT_FALSE(ParseDuration(bad).has_value()) << bad;
  }
}

TEST(FormatDuration, RoundTrips) {
  for (const char* s : {"500ms", "15s", "1m30s", "2h", "1d", "1h1m1s1ms"}) {
    auto d = ParseDuration(s);
    ASSERT_TRUE(d) << s;
    EXPECT_EQ(FormatDuration(*d), s);
  }
  EXPECT_EQ(FormatDuration(milliseconds(0)), "0s");
}

TEST(FormatByteSize, ParsesBackExactly) {
  EXPECT_EQ(FormatByteSize(64ull << 20), "64MiB");
  EXPECT_EQ(FormatByteSize(1ull << 30), "1GiB");
  EXPECT_EQ(FormatByteSize(3ull << 40), "3TiB");
  EXPECT_EQ(FormatByteSize(1536ull << 10), "1536KiB");
  EXPECT_EQ(FormatByteSize(4097), "4097");
  EXPECT_EQ(FormatByteSize(0), "0");
  for (uint64_t v :
       {0ull, 1ull, 1023ull, 1024ull, 32ull << 20, (1ull << 40) + 1024, (1ull << 62) + 1}) {
    EXPECT_EQ(ParseByteSize(FormatByteSize(v)), v) << v;
  }
}

TEST(ParseByteSize, AcceptsBytesAndSuffixes) {
  EXPECT_EQ(ParseByteSize("1073741824"), 1073741824u);
  EXPECT_EQ(ParseByteSize("512Mi"), 512ull << 20);
  EXPECT_EQ(ParseByteSize("2Gi"), 2ull << 30);
  EXPECT_EQ(ParseByteSize("64MiB"), 64ull << 20);
  EXPECT_EQ(ParseByteSize("1G"), 1000000000u);
  EXPECT_EQ(ParseByteSize("4KiB"), 4096u);
}

TEST(ParseByteSize, RejectsMalformed) {
  for (const char* bad : {"", "Mi", "1.5Gi", "-1", "12 Mi", "1Xi", "99999999999Ti"}) {
    EXPECT_FALSE(ParseByteSize(bad).has_value()) << bad;
  }
}

TEST(FormatBytes, PicksAReadableUnit) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(64.0 * (1 << 20)), "64.0 MiB");
  EXPECT_EQ(FormatBytes(-2.0 * (1 << 30)), "-2.0 GiB");
}

}  // namespace
}  // namespace memtrimd

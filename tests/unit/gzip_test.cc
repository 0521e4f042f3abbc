#include "daemon/exposition/gzip.h"

#include <gtest/gtest.h>

#include "tests/unit/gunzip.h"

namespace memtrimd {
namespace {

TEST(Gzip, RoundTrips) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "memtrimd_target_up 1\n";
  auto part = DeflatePart(text);
  ASSERT_TRUE(part);
  std::vector<const DeflatedPart*> one{&*part};
  std::optional<std::string> gz = GzipJoin(one);
  EXPECT_LT(gz->size(), text.size() / 10);
  EXPECT_EQ(static_cast<unsigned char>((*gz)[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>((*gz)[1]), 0x8b);
  EXPECT_EQ(Gunzip(*gz), text);
}

TEST(Gzip, PartsCompressedApartJoinIntoOneMember) {
  std::string a, b;
  for (int i = 0; i < 3000; ++i) a += "memtrimd_target_up{pid=\"" + std::to_string(i) + "\"} 1\n";
  b = "memtrimd_sample_age_seconds 0.25\n";
  auto pa = DeflatePart(a);
  auto pb = DeflatePart(b);
  auto empty = DeflatePart("");
  ASSERT_TRUE(pa && pb && empty);
  std::vector<const DeflatedPart*> parts{&*pb, &*empty, &*pa, &*pb};
  std::string gz = GzipJoin(parts);
  // zlib checks the trailer's CRC-32 and length: a wrong combination fails.
  EXPECT_EQ(Gunzip(gz), b + a + b);
  EXPECT_LT(gz.size(), a.size() / 5);
  EXPECT_EQ(Gunzip(GzipJoin({})), "");
  // A part is not a stream of its own: joined alone it is still one member.
  std::vector<const DeflatedPart*> one{&*pa};
  EXPECT_EQ(Gunzip(GzipJoin(one)), a);
}

TEST(Gzip, AcceptEncodingNegotiation) {
  EXPECT_TRUE(AcceptsGzip("gzip"));
  EXPECT_TRUE(AcceptsGzip("deflate, gzip"));
  EXPECT_TRUE(AcceptsGzip("gzip;q=0.5"));
  EXPECT_TRUE(AcceptsGzip("GZIP"));
  EXPECT_TRUE(AcceptsGzip("*"));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_FALSE(AcceptsGzip("identity"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzip; q=0.0"));
  EXPECT_FALSE(AcceptsGzip("x-gzip2"));
  // A named coding overrides "*" whatever the order (RFC 9110 12.5.3).
  EXPECT_TRUE(AcceptsGzip("*;q=0, gzip"));
  EXPECT_FALSE(AcceptsGzip("*, gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("*;q=0"));
  EXPECT_TRUE(AcceptsGzip("identity;q=0, *;q=0.1"));
  EXPECT_FALSE(AcceptsGzip("\xc7zip, \xffgzip"));
}

}  // namespace
}  // namespace memtrimd

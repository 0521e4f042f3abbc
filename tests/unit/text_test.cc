#include "collectors/common/text.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace memtrimd::text {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

std::vector<std::string> Lines(std::string_view text) {
  std::vector<std::string> out;
  ForEachLineIn(text, [&](std::string_view line) { out.emplace_back(line); });
  return out;
}

TEST(ParseUint, AcceptsPlainDecimals) {
  EXPECT_EQ(ParseUint("0"), 0u);
  EXPECT_EQ(ParseUint("7"), 7u);
  EXPECT_EQ(ParseUint("1234567890"), 1234567890u);
  EXPECT_EQ(ParseUint("000042"), 42u);
}

TEST(ParseUint, AcceptsTheLargestValue) {
  EXPECT_EQ(ParseUint("18446744073709551615"), kMax);
  EXPECT_EQ(ParseUint("18446744073709551610"), kMax - 5);
  // 2^63, a value the v1 cgroup files come close to.
  EXPECT_EQ(ParseUint("9223372036854775808"), uint64_t{1} << 63);
}

TEST(ParseUint, RejectsOverflowAt2To64) {
  EXPECT_FALSE(ParseUint("18446744073709551616").has_value());  // 2^64
  EXPECT_FALSE(ParseUint("18446744073709551620").has_value());
  EXPECT_FALSE(ParseUint("99999999999999999999").has_value());
  EXPECT_FALSE(ParseUint("100000000000000000000").has_value());  // 21 digits
  // Leading zeros are fine within 20 characters.
  EXPECT_EQ(ParseUint("00000000000000000001"), 1u);
}

TEST(ParseUint, RejectsEmpty) { EXPECT_FALSE(ParseUint("").has_value()); }

TEST(ParseUint, RejectsSigns) {
  EXPECT_FALSE(ParseUint("-1").has_value());
  EXPECT_FALSE(ParseUint("+1").has_value());
  EXPECT_FALSE(ParseUint("-0").has_value());
}

TEST(ParseUint, RejectsTrailingAndLeadingText) {
  EXPECT_FALSE(ParseUint("12 kB").has_value());
  EXPECT_FALSE(ParseUint("12kB").has_value());
  EXPECT_FALSE(ParseUint("12\n").has_value());
  EXPECT_FALSE(ParseUint(" 12").has_value());
  EXPECT_FALSE(ParseUint("1.5").has_value());
  EXPECT_FALSE(ParseUint("0x10").has_value());
  EXPECT_FALSE(ParseUint("abc").has_value());
}

TEST(ParseUint, StopsAtTheViewsEnd) {
  std::string_view s = "12345";
  EXPECT_EQ(ParseUint(s.substr(0, 3)), 123u);
}

TEST(ParseHex, AcceptsLowerCaseHex) {
  EXPECT_EQ(ParseHex("0"), 0u);
  EXPECT_EQ(ParseHex("ff"), 255u);
  EXPECT_EQ(ParseHex("7f0000021000"), 0x7f0000021000u);
  EXPECT_EQ(ParseHex("2000000101005ccf"), 0x2000000101005ccfu);
  EXPECT_EQ(ParseHex("ffffffffffffffff"), kMax);
  EXPECT_EQ(ParseHex("0000000000000006"), 6u);
}

TEST(ParseHex, RejectsWhatIsNotBareHex) {
  EXPECT_FALSE(ParseHex("").has_value());
  EXPECT_FALSE(ParseHex("0x10").has_value());
  EXPECT_FALSE(ParseHex("fg").has_value());
  EXPECT_FALSE(ParseHex("-1").has_value());
  EXPECT_FALSE(ParseHex(" 1").has_value());
  EXPECT_FALSE(ParseHex("1 ").has_value());
  EXPECT_FALSE(ParseHex("10000000000000000").has_value());  // 17 digits: 2^64
}

TEST(NextToken, SplitsOnSpacesAndTabs) {
  std::string_view s = "  VmRSS:\t  105152 kB";
  EXPECT_EQ(NextToken(s), "VmRSS:");
  EXPECT_EQ(NextToken(s), "105152");
  EXPECT_EQ(NextToken(s), "kB");
  EXPECT_EQ(NextToken(s), "");
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(NextToken(s), "");
}

TEST(NextToken, TakesOtherBlanks) {
  std::string_view s = "\r-XX:+A\r\r -XX:B=1\r";
  EXPECT_EQ(NextToken(s, " \t\r"), "-XX:+A");
  EXPECT_EQ(NextToken(s, " \t\r"), "-XX:B=1");
  EXPECT_EQ(NextToken(s, " \t\r"), "");
  EXPECT_TRUE(s.empty());
  std::string_view keep = "a\rb c";
  EXPECT_EQ(NextToken(keep), "a\rb");  // the default blanks are space and tab
}

TEST(NextToken, AdvancesPastTheTokenOnly) {
  std::string_view s = "a  b";
  EXPECT_EQ(NextToken(s), "a");
  EXPECT_EQ(s, "  b");
  EXPECT_EQ(NextToken(s), "b");
  EXPECT_EQ(s, "");
}

TEST(NextToken, OnlyWhitespaceGivesEmpty) {
  std::string_view s = " \t \t";
  EXPECT_EQ(NextToken(s), "");
  EXPECT_TRUE(s.empty());
}

TEST(EqualsIgnoreCase, FoldsAsciiLettersOnly) {
  EXPECT_TRUE(EqualsIgnoreCase("Keep-Alive", "keep-alive"));
  EXPECT_TRUE(EqualsIgnoreCase("", ""));
  EXPECT_FALSE(EqualsIgnoreCase("gzip", "gzip "));
  EXPECT_FALSE(EqualsIgnoreCase("gzip", "gzi"));
  EXPECT_FALSE(EqualsIgnoreCase("@", "`"));                // 0x40 and 0x60 differ by the case bit
  EXPECT_FALSE(EqualsIgnoreCase("\xc3\x89", "\xc3\xa9"));  // no folding beyond ASCII
}

TEST(Trim, StripsSpacesTabsAndLineEnds) {
  EXPECT_EQ(Trim("  x y \t\r\n"), "x y");
  EXPECT_EQ(Trim("\n\tmax\n"), "max");
  EXPECT_EQ(Trim("abc"), "abc");
  EXPECT_EQ(Trim(""), "");
  EXPECT_EQ(Trim(" \t\r\n "), "");
}

TEST(ForEachLineIn, SplitsLinesWithoutNewlines) {
  EXPECT_EQ(Lines("a\nbb\nccc\n"), (std::vector<std::string>{"a", "bb", "ccc"}));
}

TEST(ForEachLineIn, DeliversTheLastLineWithoutNewline) {
  EXPECT_EQ(Lines("a\nlast"), (std::vector<std::string>{"a", "last"}));
  EXPECT_EQ(Lines("only"), (std::vector<std::string>{"only"}));
}

TEST(ForEachLineIn, KeepsEmptyLinesInside) {
  EXPECT_EQ(Lines("a\n\nb\n"), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(Lines("\n"), (std::vector<std::string>{""}));
}

TEST(ForEachLineIn, EmptyTextGivesNoLines) { EXPECT_TRUE(Lines("").empty()); }

constexpr const char* kFffd = "\xEF\xBF\xBD";

TEST(ToValidUtf8, KeepsValidTextAsItIs) {
  for (const char* ok : {"", "java", "a b\tc\n\"<&>", "\xC3\xA9t\xC3\xA9",  // été
                         "\xE2\x82\xAC", "\xF0\x9F\x98\x80",                // euro, an emoji
                         "\xED\x9F\xBF", "\xEF\xBF\xBF", "\xF4\x8F\xBF\xBF"}) {
    SCOPED_TRACE(ok);
    EXPECT_TRUE(IsValidUtf8(ok));
    EXPECT_EQ(ToValidUtf8(ok), ok);
  }
  EXPECT_EQ(ToValidUtf8(std::string("a\0b", 3)), std::string("a\0b", 3));
}

// The kernel cuts comm at 15 bytes: "ééééééééé" (18 bytes) becomes seven
// é and the first byte of the eighth.
TEST(ToValidUtf8, ACommCutInsideACharacter) {
  const std::string cut =
      std::string("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3");
  ASSERT_EQ(cut.size(), 15u);
  EXPECT_FALSE(IsValidUtf8(cut));
  EXPECT_EQ(ToValidUtf8(cut), cut.substr(0, 14) + kFffd);
  EXPECT_TRUE(IsValidUtf8(ToValidUtf8(cut)));
}

// Each byte outside a well-formed sequence is one U+FFFD.
TEST(ToValidUtf8, EachInvalidByteBecomesOneReplacementCharacter) {
  const std::string f = kFffd;
  struct Case {
    std::string in, out;
  };
  const Case cases[] = {
      {"\xFF", f},
      {"a\xFE"
       "b",
       "a" + f + "b"},
      {"\x80\xBF", f + f},                  // continuation bytes alone
      {"\xC0\xAF", f + f},                  // overlong '/'
      {"\xC1\xBF", f + f},                  // overlong
      {"\xE0\x80\xAF", f + f + f},          // overlong, 3 bytes
      {"\xED\xA0\x80", f + f + f},          // a UTF-16 surrogate
      {"\xF4\x90\x80\x80", f + f + f + f},  // above U+10FFFF
      {"\xF5\x80", f + f},
      {"\xE2\x82", f + f},  // cut 3-byte sequence
      {"\xE2\x82x", f + f + "x"},
      {"\xC3\xA9\xC3", "\xC3\xA9" + f},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.in);
    EXPECT_FALSE(IsValidUtf8(c.in));
    EXPECT_EQ(ToValidUtf8(c.in), c.out);
    EXPECT_TRUE(IsValidUtf8(c.out));
  }
}

}  // namespace
}  // namespace memtrimd::text

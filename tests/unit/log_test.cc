#include "daemon/base/log.h"

#include <gtest/gtest.h>

namespace memtrimd::log {
namespace {

TEST(Log, LogfmtQuotesOnlyWhenNeeded) {
  std::string line = RenderLogfmt("2026-01-01T00:00:00.000Z", "warn", "collector failed",
                                  {{"collector", "glibc"}, {"err", "open \"x\": denied"}});
  EXPECT_EQ(line,
            "ts=2026-01-01T00:00:00.000Z level=warn msg=\"collector failed\" collector=glibc "
            "err=\"open \\\"x\\\": denied\"");
}

TEST(Log, LogfmtEscapesNewlinesSoOneEventIsOneLine) {
  std::string line = RenderLogfmt("t", "info", "a\nb", {{"k", ""}});
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_NE(line.find("k=\"\""), std::string::npos);
}

// A target's comm is cut by the kernel at 15 bytes, possibly inside a
// character: log lines stay valid UTF-8 (the bytes become U+FFFD), as
// every other writer makes them.
TEST(Log, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  const std::string comm = "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3";
  for (const std::string& line : {RenderLogfmt("t", "info", "target selected", {{"comm", comm}}),
                                  RenderJson("t", "info", "target selected", {{"comm", comm}})}) {
    EXPECT_NE(line.find("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xef\xbf\xbd"),
              std::string::npos)
        << line;
    EXPECT_EQ(line.find("\xc3\""), std::string::npos) << line;
  }
}

TEST(Log, JsonIsOneObject) {
  std::string line = RenderJson("t", "info", "target selected", {{"pid", "42"}, {"q", "a\"b"}});
  EXPECT_EQ(line, R"({"ts":"t","level":"info","msg":"target selected","pid":"42","q":"a\"b"})");
}

}  // namespace
}  // namespace memtrimd::log

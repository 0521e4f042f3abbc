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

TEST(Log, JsonIsOneObject) {
  std::string line = RenderJson("t", "info", "target selected", {{"pid", "42"}, {"q", "a\"b"}});
  EXPECT_EQ(line, R"({"ts":"t","level":"info","msg":"target selected","pid":"42","q":"a\"b"})");
}

}  // namespace
}  // namespace memtrimd::log

#include "daemon/web/http_server.h"

#include <gtest/gtest.h>

namespace memtrimd {
namespace {

TEST(CivetwebPorts, JoinsPrometheusStyleAddresses) {
  EXPECT_EQ(CivetwebPorts({":8486"}), "8486");
  EXPECT_EQ(CivetwebPorts({"127.0.0.1:8486", "[::1]:8486"}), "127.0.0.1:8486,[::1]:8486");
}

TEST(KeepsConnection, FollowsTheConnectionHeaderThenTheVersion) {
  EXPECT_TRUE(KeepsConnection(std::nullopt, "1.1"));
  EXPECT_FALSE(KeepsConnection(std::nullopt, "1.0"));
  EXPECT_FALSE(KeepsConnection(std::nullopt, ""));
  EXPECT_FALSE(KeepsConnection("close", "1.1"));
  EXPECT_FALSE(KeepsConnection("Close", "1.1"));
  EXPECT_TRUE(KeepsConnection("keep-alive", "1.0"));
  EXPECT_TRUE(KeepsConnection("TE, Keep-Alive", "1.1"));
  EXPECT_TRUE(KeepsConnection(" \tKEEP-ALIVE\t ", "1.0"));
  // A header that names other options only: civetweb closes.
  EXPECT_FALSE(KeepsConnection("TE", "1.1"));
  EXPECT_FALSE(KeepsConnection("", "1.1"));
  EXPECT_FALSE(KeepsConnection("keep-alived, keep", "1.1"));
}

// What memtrimd answers for the requests civetweb parses but routes to no
// handler (and would close in silence).
TEST(ReplyToUnrouted, OptionsStarForeignTargetsAndTheRest) {
  auto r = ReplyToUnrouted("OPTIONS", "*", "1.1", false);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, 200);
  EXPECT_EQ(r->headers, "Allow: GET, HEAD\r\n");
  EXPECT_EQ(ReplyToUnrouted("OPTIONS", "*", "1.0", true)->headers, "Allow: GET, HEAD, POST\r\n");
  EXPECT_EQ(ReplyToUnrouted("GET", "*", "1.1", false)->code, 400);
  EXPECT_EQ(ReplyToUnrouted("GET", "http://127.0.0.1:1/metrics", "1.1", false)->code, 400);
  EXPECT_EQ(ReplyToUnrouted("GET", "HTTPS://example.com/", "1.1", false)->code, 400);
  // civetweb answered these itself: 505 for the version, 400 for a target
  // it finds malformed (an absolute URI without a path).
  EXPECT_FALSE(ReplyToUnrouted("OPTIONS", "*", "2.0", false));
  EXPECT_FALSE(ReplyToUnrouted("GET", "http://example.com", "1.1", false));
  EXPECT_FALSE(ReplyToUnrouted("GET", "nonsense", "1.1", false));
  EXPECT_FALSE(ReplyToUnrouted("GET", "/metrics", "1.1", false));
}

}  // namespace
}  // namespace memtrimd

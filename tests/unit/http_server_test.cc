#include "daemon/http_server.h"

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

}  // namespace
}  // namespace memtrimd

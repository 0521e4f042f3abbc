#include "daemon/http_server.h"

#include <gtest/gtest.h>

namespace memtrimd {
namespace {

TEST(CivetwebPorts, JoinsPrometheusStyleAddresses) {
  EXPECT_EQ(CivetwebPorts({":8486"}), "8486");
  EXPECT_EQ(CivetwebPorts({"127.0.0.1:8486", "[::1]:8486"}), "127.0.0.1:8486,[::1]:8486");
}

TEST(AsksToClose, FindsTheCloseOptionInAnyCaseAndPlace) {
  EXPECT_TRUE(AsksToClose("close"));
  EXPECT_TRUE(AsksToClose("Close"));
  EXPECT_TRUE(AsksToClose("TE, CLOSE"));
  EXPECT_TRUE(AsksToClose("close,TE"));
  EXPECT_TRUE(AsksToClose(" \tclose\t "));
  EXPECT_FALSE(AsksToClose(""));
  EXPECT_FALSE(AsksToClose("keep-alive"));
  EXPECT_FALSE(AsksToClose("closed, enclose"));
  EXPECT_FALSE(AsksToClose(",,"));
}

}  // namespace
}  // namespace memtrimd

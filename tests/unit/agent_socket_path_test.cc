// Where memtrimd looks for the preload agent's socket (AgentSocketPath):
// the agent's own naming rules, read from a target's environ in a small
// /proc-like tree.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "collectors/agent/client/agent_client.h"
#include "collectors/agent/client/socket_sweep.h"

namespace memtrimd::agent {
namespace {

namespace fs = std::filesystem;

class AgentSocketPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "memtrimd-agent-path.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    target_.pid = 4242;
    target_.nspid = 7;
    target_.start_ticks = 123456;
    target_.proc_dir = dir_;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes the NUL-separated environ of the target.
  void Environ(const std::vector<std::string>& vars) {
    std::ofstream out(dir_ + "/environ", std::ios::binary);
    for (const std::string& v : vars) out << v << '\0';
  }

  std::string dir_;
  Target target_;
};

TEST_F(AgentSocketPathTest, DefaultIsNamedByPidInItsNamespaceAndStartTime) {
  Environ({"PATH=/usr/bin", "LD_PRELOAD=/usr/local/lib/libmemtrimd_agent.so"});
  Result<std::string> p = AgentSocketPath(target_);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(*p, dir_ + "/root/tmp/.memtrimd_agent.7.123456");
}

TEST_F(AgentSocketPathTest, OverrideExpandsPidAndStartTime) {
  Environ({"MEMTRIMD_AGENT_SOCKET=/run/app/agent.%p.%t.sock"});
  Result<std::string> p = AgentSocketPath(target_);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(*p, dir_ + "/root/run/app/agent.7.123456.sock");
}

TEST_F(AgentSocketPathTest, OverrideWithoutPatternsAndAStrayPercent) {
  Environ({"MEMTRIMD_AGENT_SOCKET=/run/agent%x%"});
  Result<std::string> p = AgentSocketPath(target_);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(*p, dir_ + "/root/run/agent%x%");
}

TEST_F(AgentSocketPathTest, RelativeOverrideIsRefused) {
  Environ({"MEMTRIMD_AGENT_SOCKET=agent.sock"});
  Result<std::string> p = AgentSocketPath(target_);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), ErrorCode::kInvalidArgument);
}

TEST_F(AgentSocketPathTest, DisabledAgentHasNoSocket) {
  Environ({"MEMTRIMD_AGENT_DISABLE=1"});
  Result<std::string> p = AgentSocketPath(target_);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), ErrorCode::kUnavailable);
}

// The names memtrimd's sweep of stale sockets may consider: the agent's
// default name and its random variant, nothing else.
TEST(AgentSocketNameTest, OnlyTheAgentsOwnFormsAreItsSockets) {
  std::optional<AgentSocketName> n = ParseAgentSocketName(".memtrimd_agent.7.123456");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->pid, 7u);
  EXPECT_EQ(n->start, 123456u);
  n = ParseAgentSocketName(".memtrimd_agent.7.123456.0123456789abcdef");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->start, 123456u);
  for (const char* other :
       {"", ".memtrimd_agent.", ".memtrimd_agent.7", ".memtrimd_agent.7.", ".memtrimd_agent..1",
        ".memtrimd_agent.7.12x", ".memtrimd_agent.+7.1", ".memtrimd_agent.7.1.0123456789ABCDEF",
        ".memtrimd_agent.7.1.0123456789abcde", ".memtrimd_agent.7.1.0123456789abcdef0",
        ".memtrimd_agent.7.1.", ".memtrimd_agent.7.1.0123456789abcdef.x", "memtrimd_agent.7.1",
        ".memtrimd_agent.7.1/x", ".memtrimd_agent.99999999999999999999.1", ".java_pid7"}) {
    EXPECT_FALSE(ParseAgentSocketName(other).has_value()) << other;
  }
}

}  // namespace
}  // namespace memtrimd::agent

// No agent socket is left on disk, however a program with the agent ends.
// A shell ending through _exit (every `sh -c` of kubectl exec in a container
// whose environment holds LD_PRELOAD) removes its own socket, while its
// forked children, which call _exit too, leave their parent's alone.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/integration/harness.h"
#include "tests/integration/node_agent.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

bool IsSocket(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

TEST(AgentSocketExitTest, AShellEndingThroughExitLeavesNoSocketAndItsChildrenKeepIt) {
  if (!IsRoot()) GTEST_SKIP() << "needs root to act as uid " << kNobodyUid;
  TempDir dir;
  fs::permissions(dir.path(), fs::perms::all);
  const std::string forked = dir / "forked";
  StdinPipe in(dir / "in");
  ASSERT_TRUE(in.ok());
  SpawnOptions o;
  o.uid = kNobodyUid;
  o.gid = kNobodyUid;
  o.stdin_path = in.path();
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  // A subshell (a forked child that ends through _exit), then a builtin
  // read that waits for the test, then exit: dash (Debian's /bin/sh) ends
  // both through _exit.
  Process sh({"/bin/sh", "-c", "(exit 0); : > \"$1\"; read line; exit 3", "sh", forked}, o);
  ASSERT_TRUE(sh.running());
  const std::string socket = AgentSocketOf(sh.pid());
  ASSERT_TRUE(WaitFor([&] { return fs::exists(forked) || !sh.running(); }, 30s));
  ASSERT_TRUE(sh.running());
  // The child's _exit left the parent's socket alone.
  EXPECT_TRUE(IsSocket(socket)) << socket;
  ASSERT_TRUE(in.Write("go\n"));
  EXPECT_EQ(sh.Wait(30s), 3);
  EXPECT_FALSE(fs::exists(fs::symlink_status(socket))) << socket << " left behind";
  RemoveStaleAgentSocket(sh.pid());
}

}  // namespace
}  // namespace memtrimd::testing

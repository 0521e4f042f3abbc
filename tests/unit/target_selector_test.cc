#include "daemon/sampling/target_selector.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

namespace memtrimd {
namespace {

TEST(PickAutomatic, LargestRssThatIsNotPid1MemtrimdOrPause) {
  std::vector<Candidate> c = {
      {1, "pause", 900}, {7, "pause", 800},  {8, "memtrimd", 700},
      {9, "java", 600},  {10, "envoy", 500}, {11, "self-named", 999},
  };
  EXPECT_EQ(PickAutomatic(c, /*self=*/11), 9);
  // Pid 1 is skipped whatever its name (a shell or an init as pid 1).
  c.push_back({1, "sh", 10000});
  EXPECT_EQ(PickAutomatic(c, 11), 9);
}

TEST(PickAutomatic, TiesGoToTheLowerPidAndEmptyGivesNothing) {
  std::vector<Candidate> c = {{20, "b", 5}, {12, "a", 5}};
  EXPECT_EQ(PickAutomatic(c, 1), 12);
  EXPECT_FALSE(PickAutomatic({}, 1).has_value());
  std::vector<Candidate> only_excluded = {{1, "init", 5}, {2, "pause", 9}, {3, "memtrimd", 9}};
  EXPECT_FALSE(PickAutomatic(only_excluded, 3).has_value());
}

TEST(TargetSelector, FixedPidIsThisProcess) {
  TargetRule r;
  r.mode = TargetRule::Mode::kPid;
  r.pid = getpid();
  TargetSelector s(r);
  Result<Target> t = s.Select();
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->pid, getpid());
  EXPECT_EQ(t->proc_dir, "/proc/" + std::to_string(getpid()));
  EXPECT_GT(t->start_ticks, 0u);
  EXPECT_EQ(s.Describe(), "pid " + std::to_string(getpid()));
}

TEST(TargetSelector, PidfileIsReadAndValidated) {
  std::string path = ::testing::TempDir() + "selector.pid";
  TargetRule r;
  r.mode = TargetRule::Mode::kPidfile;
  r.pidfile = path;
  TargetSelector s(r);
  ::unlink(path.c_str());
  EXPECT_EQ(s.Select().status().code(), ErrorCode::kNotFound);
  std::ofstream(path) << "not a pid\n";
  EXPECT_EQ(s.Select().status().code(), ErrorCode::kParseError);
  std::ofstream(path) << getpid() << "\n";
  Result<Target> t = s.Select();
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->pid, getpid());
  ::unlink(path.c_str());
}

TEST(TargetSelector, MatchFindsAChildByCommandLineAndNeverItself) {
  // A child with a command line nothing else on the machine has.
  // sleep adds up its arguments, so a tiny extra interval makes a unique tag.
  std::string tag = "0.0000" + std::to_string(getpid());
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    execlp("sleep", "sleep", "300", tag.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait (with a deadline) until the child has exec'd, so one Select must
  // find it.
  std::string cmdline_path = "/proc/" + std::to_string(child) + "/cmdline";
  bool execd = false;
  for (int i = 0; i < 3000 && !execd; ++i) {
    std::ifstream in(cmdline_path);
    std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    execd = raw.find(tag) != std::string::npos;
    if (!execd) usleep(10000);
  }
  TargetRule r;
  r.mode = TargetRule::Mode::kMatch;
  r.match = "^sleep 300 " + tag + "$";
  TargetSelector s(r);
  Result<Target> t = s.Select();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_TRUE(execd) << "child did not exec";
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->pid, child);
  EXPECT_EQ(t->comm, "sleep");

  TargetRule none;
  none.mode = TargetRule::Mode::kMatch;
  none.match = "^no-process-has-this " + tag + "$";
  EXPECT_EQ(TargetSelector(none).Select().status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace memtrimd

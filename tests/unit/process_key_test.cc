// ProcessKey, the one identity of a process instance, and the records kept
// by it: the still-running check their pruning relies on, the JVMs signalled
// in vain, and the agent loads.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_set>

#include "collectors/common/process_key.h"
#include "collectors/common/target.h"
#include "collectors/jvm/agent_load_record.h"
#include "collectors/jvm/signal_record.h"
#include "collectors/procfs/proc_stat.h"
#include "collectors/procfs/target_reader.h"

namespace memtrimd {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

ProcessKey Self() {
  Result<procfs::ProcStat> st = procfs::ParseProcStat(ReadAll("/proc/self/stat"));
  EXPECT_TRUE(st.ok()) << st.status().message();
  return {getpid(), st.ok() ? st->start_ticks : 0};
}

// One more than the largest pid the kernel hands out: never a process.
pid_t NoSuchPid() {
  const long pid_max = std::strtol(ReadAll("/proc/sys/kernel/pid_max").c_str(), nullptr, 10);
  EXPECT_GT(pid_max, 1);
  return static_cast<pid_t>(pid_max);
}

TEST(ProcessKey, PidAndStartTimeAreTheIdentity) {
  const ProcessKey a{10, 500};
  EXPECT_EQ(a, (ProcessKey{10, 500}));
  // A recycled pid is another instance.
  EXPECT_NE(a, (ProcessKey{10, 900}));
  EXPECT_NE(a, (ProcessKey{11, 500}));
  // Ordered by pid first (the order records list their entries in).
  EXPECT_LT(a, (ProcessKey{10, 900}));
  EXPECT_LT((ProcessKey{9, 900}), a);

  std::unordered_set<ProcessKey> set{a, {10, 900}, {10, 500}};
  EXPECT_EQ(set.size(), 2u);
  EXPECT_EQ(std::hash<ProcessKey>{}(a), std::hash<ProcessKey>{}(ProcessKey{10, 500}));

  EXPECT_EQ(a.ToString(), "pid 10 (started at tick 500)");
  std::ostringstream out;
  out << a;
  EXPECT_EQ(out.str(), a.ToString());
}

TEST(ProcessKey, TargetKeyLeavesTheProgramOut) {
  Target t;
  t.pid = 42;
  t.start_ticks = 7;
  t.exec_mark = 3;
  EXPECT_EQ(t.Key(), (ProcessKey{42, 7}));
  // An exec keeps the key: the records kept by it (a signal, an agent load)
  // are the process's, whatever program it runs.
  Target execd = t;
  execd.exec_mark = 4;
  EXPECT_FALSE(execd.SameProcess(t));
  EXPECT_EQ(execd.Key(), t.Key());
}

TEST(StillRunning, ThisProcessIsAndAnotherStartTimeIsNot) {
  const ProcessKey me = Self();
  EXPECT_TRUE(procfs::StillRunning(me));
  EXPECT_FALSE(procfs::StillRunning({me.pid, me.start_ticks + 1}));
  EXPECT_FALSE(procfs::StillRunning({NoSuchPid(), 1}));
}

TEST(StillRunning, UnderAnotherProcRoot) {
  const ProcessKey me = Self();
  const std::string root = ::testing::TempDir() + "/still_running_" + std::to_string(getpid());
  std::filesystem::create_directories(root + "/" + std::to_string(me.pid));
  std::ofstream(root + "/" + std::to_string(me.pid) + "/stat") << ReadAll("/proc/self/stat");
  EXPECT_TRUE(procfs::StillRunning(me, root));
  // Not there: gone.
  EXPECT_FALSE(procfs::StillRunning({me.pid + 1, me.start_ticks}, root));
  std::filesystem::remove_all(root);
}

TEST(SignalRecord, RecordsAnInstanceNotItsPid) {
  jvm::SignalRecord record;
  const ProcessKey key{1234, 99};
  EXPECT_FALSE(record.SignalledWithoutListener(key));
  record.RecordSignalWithoutListener(key);
  EXPECT_TRUE(record.SignalledWithoutListener(key));
  // The pid reused by a later process: not signalled.
  EXPECT_FALSE(record.SignalledWithoutListener({1234, 100}));
  // Each record is its own: nothing is process-wide.
  jvm::SignalRecord other;
  EXPECT_FALSE(other.SignalledWithoutListener(key));
}

TEST(SignalRecord, PruningKeepsLiveProcessesAndDropsGoneOnes) {
  jvm::SignalRecord record;
  const ProcessKey me = Self();
  record.RecordSignalWithoutListener(me);
  const pid_t gone = NoSuchPid();
  for (uint64_t i = 0; i < 100; ++i) record.RecordSignalWithoutListener({gone, i});
  EXPECT_TRUE(record.SignalledWithoutListener(me));
  // Pruned as the record grew: the gone instances recorded early are dropped.
  EXPECT_FALSE(record.SignalledWithoutListener({gone, 0}));
  EXPECT_TRUE(record.SignalledWithoutListener({gone, 99}));
}

TEST(AgentLoadRecord, NothingRecordedBeforeALoad) {
  jvm::AgentLoadRecord record;
  EXPECT_FALSE(record.Recorded(Self()).has_value());
}

}  // namespace
}  // namespace memtrimd

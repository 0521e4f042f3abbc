#include "collectors/procfs/proc_stat.h"

#include <gtest/gtest.h>

#include "tests/unit/fixtures.h"

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace memtrimd::procfs {
namespace {

using test::ReadFixture;
std::map<std::string, uint64_t> ReadExpected(const std::string& dir) {
  return test::ReadProcExpected(dir);
}

// A /proc/<pid>/stat line with the given comm and 52 fields in all.
std::string StatLine(const std::string& comm) {
  return "4242 (" + comm +
         ") R 1 4242 4242 0 -1 4194304 100 0 0 0 11 22 0 0 20 0 3 0 987654 123456789 321 "
         "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
}

class ProcStatFixture : public testing::TestWithParam<const char*> {};

TEST_P(ProcStatFixture, StartTicksMatchExpected) {
  const std::string dir = GetParam();
  auto expected = ReadExpected(dir);
  Result<ProcStat> st = ParseProcStat(ReadFixture("proc/" + dir + "/stat"));
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->start_ticks, expected.at("start_time_ticks"));
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->ppid, 5323);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ProcStatFixture,
                         testing::Values("fragmenter", "jvm17", "sleep"));

TEST(ParseProcStat, JvmFields) {
  Result<ProcStat> st = ParseProcStat(ReadFixture("proc/jvm17/stat"));
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->pid, 5426);
  EXPECT_EQ(st->comm, "java");
  EXPECT_EQ(st->utime_ticks, 663u);
  EXPECT_EQ(st->stime_ticks, 32u);
  EXPECT_EQ(st->start_ticks, 50994u);
  EXPECT_EQ(st->vsize_bytes, 2715873280u);
  EXPECT_EQ(st->rss_pages, 18687u);
  // Fields 26-28, recorded with the process's memory readable.
  EXPECT_EQ(st->start_code, 94192937050112u);
  EXPECT_EQ(st->end_code, 94192937050997u);
  EXPECT_EQ(st->start_stack, 140735804898672u);
  EXPECT_NE(st->ExecMark(), 0u);
}

TEST(ParseProcStat, ExecMarkTellsProgramImagesApart) {
  // Another program image differs in at least one of the three fields.
  Result<ProcStat> a = ParseProcStat(ReadFixture("proc/jvm17/stat"));
  ASSERT_TRUE(a.ok());
  for (uint64_t ProcStat::*field :
       {&ProcStat::start_code, &ProcStat::end_code, &ProcStat::start_stack}) {
    ProcStat b = *a;
    b.*field += 4096;
    EXPECT_NE(a->ExecMark(), b.ExecMark());
  }
  // Without permission to read the layout the kernel shows zeros: all such
  // reads agree (no exec can be seen, none is made up).
  ProcStat hidden;
  EXPECT_EQ(hidden.ExecMark(), 0u);
}

// A task that is exiting has released its memory before it becomes a
// zombie: its stat shows zeros for a moment. That is not another program.
TEST(ParseProcStat, AnUnknownExecMarkNeverSaysExec) {
  Result<ProcStat> a = ParseProcStat(ReadFixture("proc/jvm17/stat"));
  ASSERT_TRUE(a.ok());
  ProcStat exiting = *a;
  exiting.start_code = exiting.end_code = exiting.start_stack = 0;
  EXPECT_EQ(exiting.ExecMark(), 0u);
  EXPECT_FALSE(ExecMarksDiffer(a->ExecMark(), exiting.ExecMark()));
  EXPECT_FALSE(ExecMarksDiffer(0, a->ExecMark()));
  EXPECT_FALSE(ExecMarksDiffer(a->ExecMark(), a->ExecMark()));
  ProcStat other = *a;
  other.start_code += 4096;
  EXPECT_TRUE(ExecMarksDiffer(a->ExecMark(), other.ExecMark()));
}

TEST(ParseProcStat, OwnExecMarkIsStableAndNotZero) {
  Result<ProcStat> self1 = ParseProcStat(test::ReadWhole("/proc/self/stat"));
  Result<ProcStat> self2 = ParseProcStat(test::ReadWhole("/proc/self/stat"));
  ASSERT_TRUE(self1.ok() && self2.ok());
  EXPECT_NE(self1->start_code, 0u);
  EXPECT_EQ(self1->ExecMark(), self2->ExecMark());
}

TEST(ParseProcStat, SyntheticLineFields) {
  Result<ProcStat> st = ParseProcStat(StatLine("worker"));
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->pid, 4242);
  EXPECT_EQ(st->comm, "worker");
  EXPECT_EQ(st->state, 'R');
  EXPECT_EQ(st->ppid, 1);
  EXPECT_EQ(st->utime_ticks, 11u);
  EXPECT_EQ(st->stime_ticks, 22u);
  EXPECT_EQ(st->start_ticks, 987654u);
  EXPECT_EQ(st->vsize_bytes, 123456789u);
  EXPECT_EQ(st->rss_pages, 321u);
}

TEST(ParseProcStat, CommWithSpacesAndParens) {
  // A process may name itself anything (prctl(PR_SET_NAME)), even ") (".
  Result<ProcStat> st = ParseProcStat(StatLine("a) (b c) S 9"));
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->comm, "a) (b c) S 9");
  EXPECT_EQ(st->state, 'R');
  EXPECT_EQ(st->ppid, 1);
  EXPECT_EQ(st->start_ticks, 987654u);
}

TEST(ParseProcStat, EmptyComm) {
  Result<ProcStat> st = ParseProcStat(StatLine(""));
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->comm, "");
  EXPECT_EQ(st->start_ticks, 987654u);
}

TEST(ParseProcStat, ExactlyTwentyFourFieldsIsEnough) {
  Result<ProcStat> st = ParseProcStat("1 (x) S 0 1 1 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 777 4096 2");
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->start_ticks, 777u);
  EXPECT_EQ(st->vsize_bytes, 4096u);
  EXPECT_EQ(st->rss_pages, 2u);
}

TEST(ParseProcStat, TooFewFieldsIsAnError) {
  // 23 fields: rss (field 24) missing.
  Result<ProcStat> st = ParseProcStat("1 (x) S 0 1 1 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 777 4096");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().code(), ErrorCode::kParseError);
  EXPECT_FALSE(ParseProcStat("1 (x) S 0").ok());
  EXPECT_FALSE(ParseProcStat("1 (x)").ok());
}

TEST(ParseProcStat, MalformedInputIsAnError) {
  EXPECT_FALSE(ParseProcStat("").ok());
  EXPECT_FALSE(ParseProcStat("1 x S 0").ok());        // no parentheses
  EXPECT_FALSE(ParseProcStat("abc (x) S 0 1").ok());  // bad pid
  EXPECT_FALSE(ParseProcStat(") 1 (x").ok());         // ')' before '('
  std::string bad_start = StatLine("x");
  bad_start.replace(bad_start.find("987654"), 6, "98x654");
  Result<ProcStat> st = ParseProcStat(bad_start);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("22"), std::string::npos) << st.status().message();
}

TEST(ParseBootTime, FindsBtime) {
  const char* proc_stat =
      "cpu  10132153 290696 3084719 46828483 16683 0 25195 0 0 0\n"
      "cpu0 1393280 32966 572056 13343292 6130 0 17875 0 0 0\n"
      "intr 1462898 0 0 0\n"
      "ctxt 115315342\n"
      "btime 1764455000\n"
      "processes 2349\n"
      "procs_running 1\n";
  Result<uint64_t> bt = ParseBootTime(proc_stat);
  ASSERT_TRUE(bt.ok()) << bt.status().message();
  EXPECT_EQ(*bt, 1764455000u);
}

TEST(ParseBootTime, LastLineWithoutNewline) {
  Result<uint64_t> bt = ParseBootTime("ctxt 1\nbtime 42");
  ASSERT_TRUE(bt.ok()) << bt.status().message();
  EXPECT_EQ(*bt, 42u);
}

TEST(ParseBootTime, MissingOrMalformedIsAnError) {
  EXPECT_FALSE(ParseBootTime("cpu 1 2 3\nctxt 5\n").ok());
  EXPECT_FALSE(ParseBootTime("").ok());
  EXPECT_FALSE(ParseBootTime("btime abc\n").ok());
  EXPECT_FALSE(ParseBootTime("xbtime 12\n").ok());
}

TEST(ParseBootTime, ReadsTheLiveFile) {
  std::ifstream in("/proc/stat");
  ASSERT_TRUE(in.good());
  std::ostringstream ss;
  ss << in.rdbuf();
  Result<uint64_t> bt = ParseBootTime(ss.str());
  ASSERT_TRUE(bt.ok()) << bt.status().message();
  EXPECT_GT(*bt, 946684800u);  // after 2000-01-01
}

// /proc/<pid>/stat of a program whose main thread called pthread_exit while
// a second thread ran (recorded on the test machine, kernel 6.18): the
// leader is a zombie, field 20 counts both threads. Then the same line with
// field 20 at 1, as once the last thread has ended (unreaped): exited.
TEST(ParseProcStat, ZombieLeaderOfALiveGroup) {
  Result<ProcStat> st = ParseProcStat(
      "16257 (probe) Z 16250 16246 15008 0 -1 4227084 91 0 0 0 0 0 0 0 20 0 2 0 81417 0 0 "
      "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n");
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->num_threads, 2u);
  EXPECT_EQ(st->start_ticks, 81417u);
  EXPECT_TRUE(st->Exited());
  EXPECT_TRUE(st->LeaderOfLiveGroup());
  Result<ProcStat> done = ParseProcStat(
      "16257 (probe) Z 16250 16246 15008 0 -1 4227084 91 0 0 0 0 0 0 0 20 0 1 0 81417 0 0 "
      "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n");
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->num_threads, 1u);
  EXPECT_FALSE(done->LeaderOfLiveGroup());
}

TEST(StartTimeSeconds, AddsTicksToBootTime) {
  EXPECT_DOUBLE_EQ(StartTimeSeconds(50908, 1764455000, 100), 1764455509.08);
  EXPECT_DOUBLE_EQ(StartTimeSeconds(0, 1764455000, 100), 1764455000.0);
  EXPECT_DOUBLE_EQ(StartTimeSeconds(250, 1000, 250), 1001.0);
  EXPECT_DOUBLE_EQ(StartTimeSeconds(150, 0, 100), 1.5);
}

TEST(StartTimeSeconds, NonPositiveTickRateGivesZero) {
  EXPECT_EQ(StartTimeSeconds(100, 1764455000, 0), 0.0);
  EXPECT_EQ(StartTimeSeconds(100, 1764455000, -1), 0.0);
}

}  // namespace
}  // namespace memtrimd::procfs

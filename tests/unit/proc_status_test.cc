#include "collectors/procfs/proc_status.h"

#include <gtest/gtest.h>

#include "tests/unit/fixtures.h"

#include <csignal>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace memtrimd::procfs {
namespace {

using test::FixturePath;
using test::ReadFixture;
std::map<std::string, uint64_t> ReadExpected(const std::string& dir) {
  return test::ReadProcExpected(dir);
}

// expected.txt: "key value" per line.

uint64_t SigBit(int signo) { return uint64_t{1} << (signo - 1); }

class ProcStatusFixture : public testing::TestWithParam<const char*> {};

TEST_P(ProcStatusFixture, MemoryAndThreadsMatchExpected) {
  const std::string dir = GetParam();
  auto expected = ReadExpected(dir);
  Result<ProcStatus> st = ParseProcStatus(ReadFixture("proc/" + dir + "/status"));
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->rss_anon, expected.at("rss_anon_bytes"));
  EXPECT_EQ(st->rss_file, expected.at("rss_file_bytes"));
  EXPECT_EQ(st->rss_shmem, expected.at("rss_shmem_bytes"));
  EXPECT_EQ(st->vm_swap, expected.at("vm_swap_bytes"));
  EXPECT_EQ(st->vm_hwm, expected.at("vm_hwm_bytes"));
  EXPECT_EQ(st->threads, expected.at("threads"));
  EXPECT_TRUE(st->has_memory);
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->euid, 0u);
  EXPECT_EQ(st->egid, 0u);
  // VmRSS = RssAnon + RssFile + RssShmem in every recorded file.
  EXPECT_EQ(st->vm_rss, st->rss_anon + st->rss_file + st->rss_shmem);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ProcStatusFixture,
                         testing::Values("fragmenter", "jvm17", "sleep"));

TEST(ParseProcStatus, FragmenterIdentity) {
  Result<ProcStatus> st = ParseProcStatus(ReadFixture("proc/fragmenter/status"));
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->name, "fragmenter");
  EXPECT_EQ(st->tgid, 5364);
  EXPECT_EQ(st->nspid, 5364);
  EXPECT_EQ(st->vm_rss, 105152u << 10);
  EXPECT_EQ(st->vm_size, 481760u << 10);
  EXPECT_EQ(st->sig_ignored, 0u);
  EXPECT_EQ(st->sig_caught, 0x0000000100000000u);
}

TEST(ParseProcStatus, JvmNameAndSignals) {
  Result<ProcStatus> st = ParseProcStatus(ReadFixture("proc/jvm17/status"));
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->name, "java");
  EXPECT_EQ(st->tgid, 5426);
  EXPECT_EQ(st->nspid, 5426);
  EXPECT_EQ(st->sig_caught, 0x2000000101005ccfu);
  EXPECT_EQ(st->sig_ignored, 0u);
  // The JVM catches SIGQUIT (thread dumps): bit 0x4.
  EXPECT_EQ(SigBit(SIGQUIT), 0x4u);
  EXPECT_NE(st->sig_caught & SigBit(SIGQUIT), 0u);
}

TEST(ParseProcStatus, SleepIgnoresSignalsItDoesNotCatch) {
  Result<ProcStatus> st = ParseProcStatus(ReadFixture("proc/sleep/status"));
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->name, "sleep");
  EXPECT_EQ(st->nspid, 5538);
  EXPECT_EQ(st->sig_ignored, 0x6u);  // SIGINT, SIGQUIT: a background job of a script
  EXPECT_EQ(st->sig_caught, 0u);
  EXPECT_EQ(st->sig_caught & SigBit(SIGQUIT), 0u);
}

TEST(ParseProcStatus, NspidIsTheInnermostPid) {
  Result<ProcStatus> st = ParseProcStatus(
      "Name:\tapp\nState:\tS (sleeping)\nTgid:\t31337\nPid:\t31337\nNSpid:\t31337\t812\t1\n"
      "Uid:\t1000\t1001\t1002\t1003\nGid:\t2000\t2001\t2002\t2003\n"
      "VmRSS:\t     100 kB\nThreads:\t3\n");
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->tgid, 31337);
  EXPECT_EQ(st->nspid, 1);
  EXPECT_EQ(st->euid, 1001u);  // the second (effective) field
  EXPECT_EQ(st->egid, 2001u);
  EXPECT_EQ(st->threads, 3u);
  EXPECT_EQ(st->vm_rss, 100u * 1024);
}

// Recorded from a 6.18 kernel: a process that named itself a"b\c d (with
// prctl(PR_SET_NAME)), and one named x<tab>y<newline>z. /proc/<pid>/comm
// shows both as they are.
TEST(ParseProcStatus, NameWithoutTheKernelsEscapes) {
  Result<ProcStatus> st =
      ParseProcStatus("Name:\ta\"b\\\\c d\nTgid:\t5\nPid:\t5\nVmRSS:\t4 kB\nThreads:\t1\n");
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->name, "a\"b\\c d");
  st = ParseProcStatus("Name:\tx\ty\\nz\nTgid:\t5\nPid:\t5\nVmRSS:\t4 kB\nThreads:\t1\n");
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->name, "x\ty\nz");
}

TEST(ParseProcStatus, NoNspidLineFallsBackToTgid) {
  Result<ProcStatus> st = ParseProcStatus("Name:\told\nTgid:\t77\nVmRSS:\t4 kB\nThreads:\t1\n");
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->nspid, 77);
}

TEST(ParseProcStatus, KernelThreadHasNoMemory) {
  // /proc/2/status (kthreadd) of a 6.x kernel: no Vm*/Rss* lines.
  const char* kthread =
      "Name:\tkthreadd\n"
      "Umask:\t0000\n"
      "State:\tS (sleeping)\n"
      "Tgid:\t2\n"
      "Ngid:\t0\n"
      "Pid:\t2\n"
      "PPid:\t0\n"
      "TracerPid:\t0\n"
      "Uid:\t0\t0\t0\t0\n"
      "Gid:\t0\t0\t0\t0\n"
      "FDSize:\t64\n"
      "Groups:\t \n"
      "NStgid:\t2\n"
      "NSpid:\t2\n"
      "NSpgid:\t0\n"
      "NSsid:\t0\n"
      "Kthread:\t1\n"
      "Threads:\t1\n"
      "SigQ:\t0/96364\n"
      "SigPnd:\t0000000000000000\n"
      "ShdPnd:\t0000000000000000\n"
      "SigBlk:\t0000000000000000\n"
      "SigIgn:\tffffffffffffffff\n"
      "SigCgt:\t0000000000000000\n";
  Result<ProcStatus> st = ParseProcStatus(kthread);
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_FALSE(st->has_memory);
  EXPECT_EQ(st->name, "kthreadd");
  EXPECT_EQ(st->vm_rss, 0u);
  EXPECT_EQ(st->rss_anon, 0u);
  EXPECT_EQ(st->sig_ignored, ~uint64_t{0});
}

TEST(ParseProcStatus, MissingThreadsIsAnError) {
  Result<ProcStatus> st = ParseProcStatus("Name:\tx\nTgid:\t1\nPid:\t1\nVmRSS:\t4 kB\n");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().code(), ErrorCode::kParseError);
}

TEST(ParseProcStatus, MissingNameOrPidIsAnError) {
  EXPECT_FALSE(ParseProcStatus("Tgid:\t1\nVmRSS:\t4 kB\nThreads:\t1\n").ok());
  EXPECT_FALSE(ParseProcStatus("Name:\tx\nVmRSS:\t4 kB\nThreads:\t1\n").ok());
  EXPECT_FALSE(ParseProcStatus("").ok());
}

TEST(ParseProcStatus, MalformedVmRssIsAnError) {
  Result<ProcStatus> st =
      ParseProcStatus("Name:\tx\nTgid:\t1\nPid:\t1\nVmRSS:\t    abc kB\nThreads:\t1\n");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().code(), ErrorCode::kParseError);
  EXPECT_NE(st.status().message().find("VmRSS"), std::string::npos) << st.status().message();
}

TEST(ParseProcStatus, MalformedThreadsOrSignalMaskIsAnError) {
  EXPECT_FALSE(ParseProcStatus("Name:\tx\nTgid:\t1\nVmRSS:\t4 kB\nThreads:\tmany\n").ok());
  EXPECT_FALSE(
      ParseProcStatus("Name:\tx\nTgid:\t1\nVmRSS:\t4 kB\nThreads:\t1\nSigCgt:\tzz\n").ok());
  EXPECT_FALSE(ParseProcStatus("Name:\tx\nTgid:\t1\nVmRSS:\t-4 kB\nThreads:\t1\n").ok());
}

TEST(ParseProcStatus, NameWithSpacesAndParenIsKeptWhole) {
  Result<ProcStatus> st =
      ParseProcStatus("Name:\tmy (odd) name)\nTgid:\t9\nVmRSS:\t8 kB\nThreads:\t2\n");
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->name, "my (odd) name)");
  EXPECT_EQ(st->tgid, 9);
}

TEST(ParseProcStatus, NameWithColonIsKeptWhole) {
  Result<ProcStatus> st =
      ParseProcStatus("Name:\tkworker:1 x\nTgid:\t9\nVmRSS:\t8 kB\nThreads:\t2\n");
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->name, "kworker:1 x");
}

TEST(ParseProcStatus, LastLineWithoutNewline) {
  Result<ProcStatus> st = ParseProcStatus("Name:\tx\nTgid:\t1\nVmRSS:\t4 kB\nThreads:\t12");
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(st->threads, 12u);
}

}  // namespace
}  // namespace memtrimd::procfs

// The node agent and hsperfdata files an unprivileged user controls (issue
// attacks 3 and 9). Fake JVMs (attach_server --fake-libjvm: a mapped file
// named libjvm.so) run as nobody, with perf data files the test writes in
// the layout HotSpot uses, under directories of /tmp named hsperfdata_*.
//
//  - Symlink swap: once memtrimd reads the user's own file, the user swaps
//    its hsperfdata directory for a symlink to a root-owned one holding a
//    0600 file of root's under the same pid: memtrimd must publish nothing
//    from it (it followed the directory symlink before).
//  - Amplification: 20 fake JVMs share one file through hard links, a 4 MiB
//    one of 131k minimal entries, then the largest one memtrimd accepts
//    (2 MiB, 4096 entries of the names it reads, long strings): its VmHWM
//    stays under the DaemonSet's 64 MiB limit. Prints the figure
//    (docs/benchmarks.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "tests/integration/harness.h"
#include "tests/integration/node_agent.h"
#include "tests/support/perf_image.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

using Entry = test::PerfImageEntry;
using test::PerfImage;

// A heap of `committed` bytes, as the hsperfdata collector reads it.
std::string HeapImage(int64_t committed) {
  return PerfImage({{"sun.gc.generation.0.capacity", committed},
                    {"sun.gc.generation.0.maxCapacity", committed},
                    {"sun.gc.generation.0.space.0.used", int64_t{4096}}});
}

void WriteAs(const std::string& path, const std::string& bytes, uid_t uid, mode_t mode) {
  WriteFile(path, bytes);
  ASSERT_EQ(::chown(path.c_str(), uid, uid), 0) << path;
  ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
}

void MkdirAs(const std::string& path, uid_t uid, mode_t mode) {
  ASSERT_EQ(::mkdir(path.c_str(), mode), 0) << path;
  ASSERT_EQ(::chown(path.c_str(), uid, uid), 0) << path;
  ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
}

std::string Pid(pid_t p) { return "pid=\"" + std::to_string(p) + "\""; }

// Directories removed whatever happens, symlinks and all.
struct Cleanup {
  std::vector<std::string> paths;
  ~Cleanup() {
    for (const std::string& p : paths) {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  }
};

class HsperfdataNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!IsRoot()) GTEST_SKIP() << "needs root (memtrimd as the node agent, a user to become)";
    base_ = "/dev/shm/memtrimd-hsperf-" + std::to_string(::getpid());
    cleanup_.paths.push_back(base_);
    fs::remove_all(base_);
    MkdirAs(base_, kNobodyUid, 0755);
  }

  // A fake JVM as nobody, its libjvm.so in its own directory under base_.
  Process StartFake(int n) {
    const std::string sub = base_ + "/fake" + std::to_string(n);
    MkdirAs(sub, kNobodyUid, 0755);
    std::vector<std::string> argv = AsUser(kNobodyUid);
    for (std::string a : {WorkloadBin("attach_server"), std::string("--fake-libjvm"), sub,
                          std::string("--ready-file"), sub + "/ready"}) {
      argv.push_back(a);
    }
    Process p(argv);
    WaitFor([&] { return fs::exists(sub + "/ready") || !p.running(); }, 10s);
    return p;
  }

  std::string Tmp(const std::string& name) {
    std::string path = "/tmp/hsperfdata_" + name + "." + std::to_string(::getpid());
    cleanup_.paths.push_back(path);
    fs::remove_all(path);
    return path;
  }

  std::vector<std::string> Flags() const {
    return {"--targets=node",       "--targets.match=" + base_,   "--targets.min-rss=0",
            "--metrics.detail=all", "--discovery.interval=500ms", "--sample.interval=200ms",
            "--trim.interval=0"};
  }

  std::string base_;
  Cleanup cleanup_;
};

TEST_F(HsperfdataNodeTest, SymlinkSwapToRootsDirectoryPublishesNothingOfRoots) {
  constexpr int64_t kUsers = 111ll << 20, kRoots = 222ll << 20;
  Process fake = StartFake(0);
  ASSERT_TRUE(fake.running());
  const std::string file = std::to_string(fake.pid());
  const std::string users = Tmp("mtduser"), roots = Tmp("mtdroot"), moved = Tmp("mtdmoved");
  MkdirAs(users, kNobodyUid, 0700);
  WriteAs(users + "/" + file, HeapImage(kUsers), kNobodyUid, 0600);
  MkdirAs(roots, 0, 0755);
  WriteAs(roots + "/" + file, HeapImage(kRoots), 0, 0600);

  Memtrimd m(Flags());
  ASSERT_TRUE(m.started()) << m.log();
  Series s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return Find(s, "memtrimd_jvm_heap_committed_bytes", {Pid(fake.pid())}) ==
               static_cast<double>(kUsers);
      },
      30s))
      << m.log();

  // What the user may do to its own directory in the sticky /tmp.
  ASSERT_EQ(::rename(users.c_str(), moved.c_str()), 0);
  ASSERT_EQ(::symlink(roots.c_str(), users.c_str()), 0);
  // The collector's next read fails (the symlink is not followed, root's
  // directory is not the JVM's uid's; before, it parsed root's file). The
  // next may find the user's directory where it moved it: that failure
  // can last a single sample, so it is told from the log, and every
  // scrape meanwhile is checked for root's figure.
  const double samples = Find(s, "memtrimd_samples_total").value_or(0);
  bool roots_seen = false;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        roots_seen = roots_seen || Find(s, "memtrimd_jvm_heap_committed_bytes",
                                        {Pid(fake.pid())}) == static_cast<double>(kRoots);
        return Find(s, "memtrimd_samples_total").value_or(0) >= samples + 5 &&
               LogHas(m.log(), {"collector failed", "hsperfdata", file});
      },
      30s))
      << m.log();
  EXPECT_FALSE(roots_seen);
  HttpResponse report = Curl(m.url("/report"));
  EXPECT_EQ(report.body.find(std::to_string(kRoots)), std::string::npos) << report.body;
  // The user's own file, where it moved it (found again, as its uid's), or
  // nothing; never root's.
  EXPECT_EQ(Find(s, "memtrimd_jvm_heap_committed_bytes", {Pid(fake.pid())}).value_or(kUsers),
            static_cast<double>(kUsers));
}

// memtrimd's VmHWM with 20 fake JVMs of one user sharing one hard-linked
// perf data file of `bytes`, after 10 samples of each.
uint64_t PeakWithSharedFile(const std::string& dir, const std::string& bytes, bool accepted,
                            const std::vector<std::string>& flags,
                            const std::function<Process(int)>& start) {
  constexpr int kFakes = 20;
  std::vector<Process> fakes;
  for (int i = 0; i < kFakes; ++i) {
    fakes.push_back(start(i));
    if (!fakes.back().running()) ADD_FAILURE() << "fake JVM " << i << " did not start";
  }
  MkdirAs(dir, kNobodyUid, 0700);
  const std::string shared = dir + "/shared";
  WriteAs(shared, bytes, kNobodyUid, 0600);
  for (Process& p : fakes) {
    EXPECT_EQ(::link(shared.c_str(), (dir + "/" + std::to_string(p.pid())).c_str()), 0);
  }
  Memtrimd m(flags);
  if (!m.started()) {
    ADD_FAILURE() << m.log();
    return 0;
  }
  Series s;
  bool all = WaitFor(
      [&] {
        s = m.Scrape();
        for (Process& p : fakes) {
          if (Find(s, "memtrimd_collector_success", {Pid(p.pid()), "hsperfdata"}) !=
              (accepted ? 1.0 : 0.0)) {
            return false;
          }
        }
        return true;
      },
      60s);
  EXPECT_TRUE(all) << m.log();
  const double samples = Find(s, "memtrimd_samples_total").value_or(0);
  EXPECT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return Find(s, "memtrimd_samples_total").value_or(0) >= samples + 10;
      },
      60s));
  return StatusValue(m.process().pid(), "VmHWM").value_or(0);
}

TEST_F(HsperfdataNodeTest, TwentyJvmsSharingOneLargeFileStayUnderTheDaemonSetLimit) {
  constexpr uint64_t kLimitKiB = 64 << 10;  // the DaemonSet's memory limit
  int n = 0;
  auto start = [&](int) { return StartFake(n++); };

  // 4 MiB of 131k minimal entries: larger than any JVM makes, refused.
  std::vector<Entry> minimal(131071, {"e", int64_t{1}});
  std::string four = PerfImage(minimal);
  ASSERT_EQ(four.size(), 4u << 20);
  const uint64_t refused = PeakWithSharedFile(Tmp("mtdfour"), four, false, Flags(), start);

  // The largest file accepted: 2 MiB, at most 4096 entries, every one a
  // name memtrimd reads, with long strings.
  std::vector<Entry> wanted = {{"sun.gc.generation.0.capacity", int64_t{64} << 20}};
  while (wanted.size() < 4096) {
    wanted.push_back(
        {"sun.gc.collector." + std::to_string(wanted.size()) + ".name", std::string(400, 'x')});
  }
  std::string two = PerfImage(wanted);
  ASSERT_LE(two.size(), 2u << 20);
  two.resize(2u << 20, '\0');
  const uint64_t accepted = PeakWithSharedFile(Tmp("mtdtwo"), two, true, Flags(), start);

  std::cout << "memtrimd VmHWM, 20 fake JVMs sharing one hsperfdata file: 4 MiB of 131071 "
               "minimal entries "
            << refused << " KiB; 2 MiB of 4096 kept-name entries " << accepted << " KiB\n";
  if (RunsWithAsan(::getpid())) GTEST_SKIP() << "AddressSanitizer's shadow memory counts in VmHWM";
  EXPECT_GT(refused, 0u);
  EXPECT_LT(refused, kLimitKiB);
  EXPECT_GT(accepted, 0u);
  EXPECT_LT(accepted, kLimitKiB);
}

}  // namespace
}  // namespace memtrimd::testing

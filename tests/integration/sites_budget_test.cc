// Neighbours that serve the agent's protocol themselves, as an ordinary
// user, against a root node-mode memtrimd with --collector.sites: one maps
// a function with a 16 KiB name and answers 256 stacks of 64 distinct
// addresses in it, eight more do the same with 1 KiB names, and profiles
// are asked for four at a time. Before the sites budget each frame copied
// its function's name, again for each profile request, and nothing added
// the targets up: memtrimd went to hundreds of MiB. Now names are held once
// and cut, every target's sites are charged to --sites.memory-budget, what
// does not fit is counted, and at most two profiles are built at once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

constexpr uid_t kNobody = 65534;

std::string Str(pid_t pid) { return std::to_string(pid); }

// A field of /proc/<pid>/status in KiB ("VmHWM:     1234 kB"); 0 if absent.
uint64_t StatusKib(pid_t pid, const std::string& field) {
  const std::string status = ReadFile("/proc/" + std::to_string(pid) + "/status");
  const std::size_t at = status.find(field + ":");
  if (at == std::string::npos) return 0;
  return std::stoull(status.substr(at + field.size() + 1));
}

TEST(SitesBudgetTest, HostileSitesAnswersStayWithinTheBudget) {
  if (!IsRoot()) GTEST_SKIP() << "needs root to run targets as uid " << kNobody;
  // The command-line tag memtrimd selects the test's own processes by.
  const std::string tag = "sites-budget-test-" + std::to_string(::getpid());
  SpawnOptions as_nobody;
  as_nobody.uid = kNobody;
  as_nobody.gid = kNobody;
  as_nobody.env = {"MEMTRIMD_AGENT_SOCKET=/tmp/.memtrimd_fake_sites.%p"};
  std::vector<std::unique_ptr<Process>> fakes;
  std::vector<std::unique_ptr<ScopedUnlink>> sockets;
  for (int i = 0; i < 9; ++i) {
    const std::string name_bytes = i == 0 ? "16384" : "1024";
    fakes.push_back(std::make_unique<Process>(
        std::vector<std::string>{WorkloadBin("fake_sites_agent"), "--name-bytes", name_bytes,
                                 "--stacks", "256", "--frames", "64", "--tag", tag},
        as_nobody));
    ASSERT_TRUE(fakes.back()->running());
    const std::string socket = "/tmp/.memtrimd_fake_sites." + std::to_string(fakes.back()->pid());
    sockets.push_back(std::unique_ptr<ScopedUnlink>(new ScopedUnlink{socket}));
    ASSERT_TRUE(WaitFor([&] { return ::access(socket.c_str(), F_OK) == 0; }, 10s)) << socket;
  }
  const pid_t big = fakes[0]->pid();

  // 16 MiB: the symbol cache gets 8, every profile 1 at most, so nine such
  // profiles cannot all be kept whole.
  constexpr uint64_t kBudgetMib = 16;
  // Through the environment: a memtrimd from before the budget ignores it
  // and runs (the test then fails on what it measures, not on a flag).
  SpawnOptions budget;
  budget.env = {"MEMTRIMD_SITES_MEMORY_BUDGET=" + std::to_string(kBudgetMib) + "MiB"};
  Memtrimd m(
      {"--targets=node", "--targets.match=" + tag, "--targets.min-rss=0", "--collector.sites",
       "--sites.interval=1s", "--sample.interval=200ms", "--discovery.interval=1s"},
      budget);
  ASSERT_TRUE(m.started()) << m.log();

  auto read_by_all = [&](const Series& s) {
    for (const auto& f : fakes) {
      if (!Find(s, "memtrimd_native_sites_sampler_bytes", {"pid=\"" + Str(f->pid()) + "\""})) {
        return false;
      }
    }
    return true;
  };
  Series s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return read_by_all(s) ||
               Find(s, "memtrimd_sites_dropped_total", {"reason=\"target\""}).value_or(0) > 0;
      },
      30s))
      << m.log();
  // Each profile was cut to its share: the stacks left out are counted.
  EXPECT_GT(Find(s, "memtrimd_sites_dropped_total", {"reason=\"stacks\""}).value_or(0), 0.0);
  const double held = Find(s, "memtrimd_sites_memory_bytes", {"kind=\"held\""}).value_or(-1);
  EXPECT_GT(held, 0.0);
  EXPECT_LE(held, static_cast<double>(kBudgetMib << 20));

  // Four profile requests at once: each served, or refused for a while.
  std::vector<std::future<HttpResponse>> asks;
  for (int i = 0; i < 4; ++i) {
    asks.push_back(std::async(std::launch::async,
                              [&] { return Curl(m.url("/debug/pprof/heap?pid=" + Str(big))); }));
  }
  int served = 0;
  for (auto& a : asks) {
    HttpResponse r = a.get();
    EXPECT_TRUE(r.status == 200 || r.status == 503) << r.status << " " << r.body;
    if (r.status == 200) ++served;
    if (r.status == 503) {
      EXPECT_NE(r.headers.find("Retry-After: 1"), std::string::npos);
    }
  }
  EXPECT_GE(served, 1);

  // The budget and the stacks it left out are said where people look; no
  // name is served whole.
  const std::string report = Curl(m.url("/report")).body;
  EXPECT_NE(report.find("sites memory: "), std::string::npos) << report;
  EXPECT_NE(report.find("not kept: "), std::string::npos) << report;
  EXPECT_EQ(report.find(std::string(1024, 'x')), std::string::npos);

  // Still serving, and within the bound: the budget, memtrimd's own memory
  // (about 8 MiB), two profiles being built (a target's share each) and
  // one answer being parsed, with room for the allocator's slack.
  EXPECT_EQ(Curl(m.url("/healthz")).status, 200);
  ASSERT_TRUE(m.process().running()) << m.log();
  const uint64_t hwm_kib = StatusKib(m.process().pid(), "VmHWM");
  const uint64_t rss_kib = StatusKib(m.process().pid(), "VmRSS");
  RecordProperty("memtrimd_vmhwm_kib", static_cast<int>(hwm_kib));
  RecordProperty("memtrimd_vmrss_kib", static_cast<int>(rss_kib));
#if defined(__SANITIZE_ADDRESS__)
  GTEST_LOG_(INFO) << "AddressSanitizer's shadow memory is in VmHWM: the bound is not checked";
#else
  const uint64_t bound_kib = (kBudgetMib + 24) << 10;
  EXPECT_LT(hwm_kib, bound_kib) << "VmRSS " << rss_kib << " KiB";
#endif
}

}  // namespace
}  // namespace memtrimd::testing

// The agent's allocation sampler (collectors/agent/in_target/sampler_hooks.c) in real
// processes, driven through the agent's socket with memtrimd's client:
// site_holder's three known sites found with the right sizes and ranks, a
// freed block no longer live; a churning program's live bytes staying small
// while its allocated bytes grow; fork storms, dlopen/dlclose loops, thread
// churn and 1,000 on/off switches under malloc stress with every request
// answered and the workload's own checks passing; the same under a preloaded
// jemalloc and tcmalloc; and the agent loaded into a running JVM, on every
// JDK found.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "collectors/agent/client/agent_client.h"
#include "collectors/common/unique_fd.h"
#include "collectors/jvm/agent_load.h"
#include "collectors/jvm/attach_client.h"
#include "collectors/procfs/target_reader.h"
#include "tests/integration/buffer_pools_workload.h"
#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMiB = 1 << 20;

struct Stack {
  uint64_t live_samples = 0, live_bytes = 0, live_objects = 0;
  uint64_t alloc_samples = 0, alloc_bytes = 0, alloc_objects = 0;
  std::vector<std::string> pcs;  // lowercase hex, innermost first
};

struct Sites {
  std::map<std::string, uint64_t> keys;
  std::vector<Stack> stacks;
};

// The "sites" body: key=value lines, then "stack ..." lines.
Sites ParseSites(const std::string& body) {
  Sites s;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("stack ", 0) == 0) {
      std::istringstream l(line.substr(6));
      Stack st;
      l >> st.live_samples >> st.live_bytes >> st.live_objects >> st.alloc_samples >>
          st.alloc_bytes >> st.alloc_objects;
      for (std::string pc; l >> pc;) st.pcs.push_back(pc);
      s.stacks.push_back(st);
    } else if (std::size_t eq = line.find('='); eq != std::string::npos) {
      s.keys[line.substr(0, eq)] = std::stoull(line.substr(eq + 1));
    }
  }
  return s;
}

Target TargetOf(pid_t pid) {
  Result<Target> t = procfs::ReadTarget("/proc", pid);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : Target{};
}

// One request with a deadline of its own: a sampler that deadlocked the
// agent thread fails here instead of hanging the test.
Result<std::string> Ask(const Target& t, const std::string& command) {
  agent::AgentOptions o;
  o.timeout = std::chrono::milliseconds(5000);
  return agent::AgentCommand(t, command, o);
}

Sites AskSites(const Target& t) {
  Result<std::string> body = Ask(t, "sites");
  EXPECT_TRUE(body.ok()) << body.status().message();
  return body.ok() ? ParseSites(*body) : Sites{};
}

bool HasPc(const Stack& s, const std::string& pc) {
  return std::find(s.pcs.begin(), s.pcs.end(), pc) != s.pcs.end();
}

// site_holder's "site <name> 0x<hex>" lines, as the sampler spells pcs.
std::map<std::string, std::string> SiteAddresses(const std::string& out) {
  std::map<std::string, std::string> sites;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream l(line);
    std::string kind, name, hex;
    if (l >> kind >> name >> hex && kind == "site" && hex.rfind("0x", 0) == 0) {
      sites[name] = hex.substr(2);
    }
  }
  return sites;
}

const Stack* StackWith(const Sites& s, const std::string& pc) {
  for (const Stack& st : s.stacks) {
    if (HasPc(st, pc)) return &st;
  }
  return nullptr;
}

// A site held in blocks is reached through more than one call in hold()
// (site_holder.c): its live bytes are those of every stack through it.
uint64_t LiveBytesThrough(const Sites& s, const std::string& pc) {
  uint64_t bytes = 0;
  for (const Stack& st : s.stacks) {
    if (HasPc(st, pc)) bytes += st.live_bytes;
  }
  return bytes;
}

class AgentSamplerTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (pid_t pid : started_) RemoveStaleAgentSocket(pid);
  }

  // 1,000 on/off switches beside fork storms, thread churn and a
  // dlopen/dlclose loop (below).
  void Stress(const std::string& binary, std::vector<std::string> env, bool fork_storm);

  // Waits until the agent of `pid` answers ping.
  static bool AgentUp(pid_t pid) {
    return WaitFor([&] { return agent::AgentCommand(TargetOf(pid), "ping").ok(); }, 20s);
  }

  // site_holder (1 MiB units) with `preload` (the agent last), armed: it
  // holds nothing until the trigger file exists.
  Process StartHolder(const std::string& preload, std::string* out_path, std::string* trigger) {
    *out_path = dir_ / ("holder." + std::to_string(++count_) + ".out");
    *trigger = dir_ / ("holder." + std::to_string(count_) + ".go");
    SpawnOptions o;
    o.stdout_path = *out_path;
    o.env = {"LD_PRELOAD=" + preload};
    Process p({WorkloadBin("site_holder"), std::to_string(kMiB), *trigger}, o);
    started_.push_back(p.pid());
    const std::string& path = *out_path;
    EXPECT_TRUE(WaitFor([&] { return ReadFile(path).find("armed\n") != std::string::npos; }, 20s));
    return p;
  }

  // The whole site_holder scene: sampling on at the default period before
  // it holds, its three sites measured, then hold_50's block freed.
  void CheckHolder(const std::string& preload) {
    std::string out, trigger;
    Process holder = StartHolder(preload, &out, &trigger);
    ASSERT_TRUE(holder.running());
    ASSERT_TRUE(AgentUp(holder.pid()));
    Target t = TargetOf(holder.pid());
    Result<std::string> on = Ask(t, "sampling on 524288");
    ASSERT_TRUE(on.ok()) << on.status().message();
    EXPECT_NE(on->find("period=524288\n"), std::string::npos) << *on;
    EXPECT_NE(on->find("hooked_objects="), std::string::npos) << *on;
    WriteFile(trigger, "");
    ASSERT_TRUE(WaitFor([&] { return ReadFile(out).find("ready\n") != std::string::npos; }, 20s));
    std::map<std::string, std::string> sites = SiteAddresses(ReadFile(out));
    ASSERT_EQ(sites.size(), 3u) << ReadFile(out);

    Sites s = AskSites(t);
    EXPECT_EQ(s.keys["on"], 1u);
    EXPECT_EQ(s.keys["period"], 524288u);
    EXPECT_EQ(s.keys["stacks"], s.stacks.size());
    EXPECT_LE(s.keys["sampler_bytes"], 4 * kMiB);
    const Stack* s200 = StackWith(s, sites["hold_200"]);
    const Stack* s50 = StackWith(s, sites["hold_50"]);
    const Stack* s10 = StackWith(s, sites["hold_10"]);
    ASSERT_TRUE(s200 && s50 && s10) << ReadFile(out);
    const double est = static_cast<double>(s200->live_bytes);
    std::cout << "hold_200 live " << est / kMiB << " MiB, hold_50 " << s50->live_bytes / kMiB
              << " MiB, hold_10 " << s10->live_bytes / kMiB << " MiB; " << s.stacks.size()
              << " stacks\n";
    EXPECT_NEAR(est, 200.0 * kMiB, 20.0 * kMiB);
    // Ranked by live bytes: the three sites first, in their order.
    std::vector<Stack> ranked = s.stacks;
    std::sort(ranked.begin(), ranked.end(),
              [](const Stack& a, const Stack& b) { return a.live_bytes > b.live_bytes; });
    ASSERT_GE(ranked.size(), 3u);
    EXPECT_TRUE(HasPc(ranked[0], sites["hold_200"]));
    EXPECT_TRUE(HasPc(ranked[1], sites["hold_50"]));
    EXPECT_TRUE(HasPc(ranked[2], sites["hold_10"]));

    // hold_50's block freed: no longer live, still counted as allocated.
    WriteFile(trigger + ".free", "");
    ASSERT_TRUE(WaitFor([&] { return ReadFile(out).find("freed\n") != std::string::npos; }, 20s));
    Sites after = AskSites(t);
    const Stack* a50 = StackWith(after, sites["hold_50"]);
    ASSERT_NE(a50, nullptr);
    EXPECT_EQ(a50->live_bytes, 0u);
    EXPECT_EQ(a50->live_samples, 0u);
    EXPECT_GE(a50->alloc_bytes, 50 * kMiB);
    const Stack* a200 = StackWith(after, sites["hold_200"]);
    ASSERT_NE(a200, nullptr);
    EXPECT_EQ(a200->live_bytes, s200->live_bytes);

    Result<std::string> off = Ask(t, "sampling off");
    ASSERT_TRUE(off.ok()) << off.status().message();
    EXPECT_EQ(*off, "was_on=1\n");
    EXPECT_TRUE(holder.running());
  }

  TempDir dir_;
  int count_ = 0;
  std::vector<pid_t> started_;
};

TEST_F(AgentSamplerTest, SiteHolderSitesSizedRankedAndFreed) { CheckHolder(AGENT_LIB); }

TEST_F(AgentSamplerTest, UnderPreloadedJemallocAndTcmalloc) {
  int ran = 0;
  for (const std::string& so : {std::string(JEMALLOC_SO), std::string(TCMALLOC_SO)}) {
    if (so.empty()) continue;
    SCOPED_TRACE(so);
    CheckHolder(so + " " + AGENT_LIB);
    ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "neither jemalloc nor tcmalloc found at build time";
}

TEST_F(AgentSamplerTest, BadPeriodAndOptOut) {
  std::string out, trigger;
  Process holder = StartHolder(AGENT_LIB, &out, &trigger);
  ASSERT_TRUE(AgentUp(holder.pid()));
  Target t = TargetOf(holder.pid());
  for (const char* bad :
       {"sampling on 4095", "sampling on 1073741825", "sampling on 12x", "sampling on 0"}) {
    Result<std::string> r = Ask(t, bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("bad sampling period"), std::string::npos)
        << r.status().message();
  }
  Result<std::string> off = Ask(t, "sampling off");
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(*off, "was_on=0\n");

  SpawnOptions o;
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB, "MEMTRIMD_AGENT_SAMPLING=0"};
  Process out_opted({WorkloadBin("site_holder"), "4096"}, o);
  started_.push_back(out_opted.pid());
  ASSERT_TRUE(AgentUp(out_opted.pid()));
  Result<std::string> r = Ask(TargetOf(out_opted.pid()), "sampling on 524288");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("MEMTRIMD_AGENT_SAMPLING=0"), std::string::npos)
      << r.status().message();
}

TEST_F(AgentSamplerTest, ChurnKeepsLiveSmallWhileAllocatedGrows) {
  const std::string ready = dir_ / "churn.ready";
  const std::string out = dir_ / "churn.out";
  SpawnOptions o;
  o.stdout_path = out;
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Process p({MALLOC_STRESS_BIN, "--threads", "2", "--seconds", "60", "--ready-file", ready}, o);
  started_.push_back(p.pid());
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready) || !p.running(); }, 20s) && p.running());
  Target t = TargetOf(p.pid());
  ASSERT_TRUE(Ask(t, "sampling on 524288").ok());
  auto total = [](const Sites& s, uint64_t Stack::*field) {
    uint64_t sum = 0;
    for (const Stack& st : s.stacks) sum += st.*field;
    return sum;
  };
  Sites first;
  ASSERT_TRUE(WaitFor(
      [&] {
        first = AskSites(t);
        return total(first, &Stack::alloc_bytes) > 256 * kMiB;
      },
      20s));
  Sites second;
  ASSERT_TRUE(WaitFor(
      [&] {
        second = AskSites(t);
        return total(second, &Stack::alloc_bytes) > 2 * total(first, &Stack::alloc_bytes);
      },
      20s));
  // Each worker holds at most 64 chunks of at most 64 KiB: 8 MiB in all.
  const uint64_t live = total(second, &Stack::live_bytes);
  std::cout << "churn: alloc " << total(second, &Stack::alloc_bytes) / kMiB << " MiB, live "
            << live / kMiB << " MiB, samples " << second.keys["samples"] << "\n";
  EXPECT_LT(live, 32 * kMiB);
  EXPECT_EQ(second.keys["dropped_live"], 0u);
  ASSERT_TRUE(Ask(t, "sampling off").ok());
  std::optional<int> rc = p.Stop(SIGTERM, 20s);
  EXPECT_EQ(rc, 0) << ReadFile(out);
  EXPECT_NE(ReadFile(out).find(" errors=0\n"), std::string::npos) << ReadFile(out);
}

// The value the executable's GOT entry for malloc holds now, read from
// outside the program: the entry's offset from `readelf -rW` of the file, the
// executable's load address from /proc/<pid>/maps, 8 bytes of
// /proc/<pid>/mem. nullopt when any of those cannot be read.
std::optional<uint64_t> ExeMallocEntry(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::error_code ec;
  const fs::path exe = fs::read_symlink(proc + "/exe", ec);
  if (ec) return std::nullopt;
  RunResult r = RunCommand({"readelf", "-rW", exe.string()});
  std::optional<uint64_t> offset;
  std::istringstream rel(r.out);
  for (std::string line; std::getline(rel, line);) {
    std::istringstream words(line);
    std::string at, info, type, value, name;
    if (!(words >> at >> info >> type >> value >> name)) continue;
    // "malloc@GLIBC_2.2.5", or "malloc" where the definition is unversioned
    // (a sanitizer's runtime linked in).
    if ((type == "R_X86_64_JUMP_SLOT" || type == "R_X86_64_GLOB_DAT") &&
        (name == "malloc" || name.rfind("malloc@", 0) == 0)) {
      offset = std::stoull(at, nullptr, 16);
    }
  }
  if (!offset) return std::nullopt;
  // A non-PIE executable (ELF type 2, EXEC: how the sanitizer builds link
  // it) has absolute addresses in its relocations; a PIE's are relative to
  // where its offset 0 is mapped.
  const std::string head = ReadFile(exe.string()).substr(0, 18);
  std::optional<uint64_t> base;
  if (head.size() == 18 && head[16] == 2 && head[17] == 0) base = 0;
  std::istringstream maps(ReadFile(proc + "/maps"));
  for (std::string line; !base && std::getline(maps, line);) {
    std::istringstream words(line);
    std::string range, perms, off, dev, inode, path;
    if (!(words >> range >> perms >> off >> dev >> inode >> path)) continue;
    if (path == exe.string() && std::stoull(off, nullptr, 16) == 0) {
      base = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
    }
  }
  if (!base) return std::nullopt;
  uint64_t value = 0;
  UniqueFd mem(open((proc + "/mem").c_str(), O_RDONLY | O_CLOEXEC));
  if (mem.get() < 0 ||
      pread(mem.get(), &value, sizeof value, static_cast<off_t>(*base + *offset)) != sizeof value) {
    return std::nullopt;
  }
  return value;
}

// The file of the mapping of `pid` that holds `addr`, or "".
std::string FileHolding(pid_t pid, uint64_t addr) {
  std::istringstream maps(ReadFile("/proc/" + std::to_string(pid) + "/maps"));
  for (std::string line; std::getline(maps, line);) {
    std::istringstream words(line);
    std::string range, perms, off, dev, inode, path;
    if (!(words >> range >> perms >> off >> dev >> inode)) continue;
    words >> path;
    const std::size_t dash = range.find('-');
    const uint64_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
    const uint64_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (addr >= lo && addr < hi) return path;
  }
  return "";
}

// The lease: a sampler nobody reads turns itself off (as after memtrimd is
// SIGKILLed), and "ping", which renews nothing, sees it happen. Off, it
// leaves nothing on the program's path: the executable's GOT entry for
// malloc, read from outside, points into the agent while on and holds again
// what the loader bound it to (libc's malloc, or a sanitizer's) after.
TEST_F(AgentSamplerTest, AnUnreadSamplerTurnsItselfOffAtTheEndOfItsLease) {
  std::string out, trigger;
  Process holder = StartHolder(AGENT_LIB, &out, &trigger);
  ASSERT_TRUE(AgentUp(holder.pid()));
  Target t = TargetOf(holder.pid());
  // What the loader bound the entry to (the program has called malloc).
  std::optional<uint64_t> bound = ExeMallocEntry(holder.pid());
  ASSERT_TRUE(bound.has_value()) << "the executable's malloc entry could not be read";
  Result<std::string> on = Ask(t, "sampling on 65536 lease=1");
  ASSERT_TRUE(on.ok()) << on.status().message();
  EXPECT_NE(on->find("lease_s=1\n"), std::string::npos) << *on;
  auto ping = [&] {
    Result<std::string> body = Ask(t, "ping");
    return body.ok() ? ParseSites(*body).keys : std::map<std::string, uint64_t>{};
  };
  std::map<std::string, uint64_t> on_ping = ping();
  EXPECT_EQ(on_ping["sampling"], 1u);
  EXPECT_GT(on_ping["hooked_now"], 0u);
  std::optional<uint64_t> hooked = ExeMallocEntry(holder.pid());
  ASSERT_TRUE(hooked.has_value());
  EXPECT_NE(FileHolding(holder.pid(), *hooked).find("libmemtrimd_agent"), std::string::npos)
      << FileHolding(holder.pid(), *hooked);
  const auto asked = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitFor([&] { return ping()["sampling"] == 0; }, 10s));
  EXPECT_GE(std::chrono::steady_clock::now() - asked, 900ms);
  Sites s = AskSites(t);
  EXPECT_EQ(s.keys["on"], 0u);
  EXPECT_EQ(s.keys["lease_ended"], 1u);
  EXPECT_EQ(ping()["hooked_now"], 0u);
  std::optional<uint64_t> restored = ExeMallocEntry(holder.pid());
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(*restored, *bound) << "now in " << FileHolding(holder.pid(), *restored) << ", bound to "
                               << FileHolding(holder.pid(), *bound);
  EXPECT_TRUE(holder.running());
}

// The budget: a program that allocates far faster than the period asked
// for (4 KiB) would sample is held to max_rate samples a second (the period
// raised), and each sample keeps the weight of the period it was drawn at,
// so the estimate of hold_200 (200 blocks of 1 MiB) stays near its truth.
TEST_F(AgentSamplerTest, TheBudgetBoundsTheRateAndKeepsEstimatesNearTheTruth) {
  const std::string out = dir_ / "budget.out", trigger = dir_ / "budget.go";
  SpawnOptions o;
  o.stdout_path = out;
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Process holder(
      {WorkloadBin("site_holder"), std::to_string(kMiB), trigger, std::to_string(kMiB), "1"}, o);
  started_.push_back(holder.pid());
  ASSERT_TRUE(AgentUp(holder.pid()));
  Target t = TargetOf(holder.pid());
  constexpr uint64_t kBudget = 20000;
  Result<std::string> on = Ask(t, "sampling on 4096 max_rate=" + std::to_string(kBudget));
  ASSERT_TRUE(on.ok()) << on.status().message();
  WriteFile(trigger, "");
  ASSERT_TRUE(WaitFor([&] { return ReadFile(out).find("ready\n") != std::string::npos; }, 20s));
  const std::string hold_200 = SiteAddresses(ReadFile(out))["hold_200"];
  // The rate over two seconds of churn, after the budget had its first say.
  Sites first;
  ASSERT_TRUE(WaitFor([&] { return (first = AskSites(t)).keys["raised"] > 0; }, 10s));
  const auto from = std::chrono::steady_clock::now();
  Sites second;
  ASSERT_TRUE(WaitFor(
      [&] {
        second = AskSites(t);
        return std::chrono::steady_clock::now() - from > 2s;
      },
      10s));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count();
  const double rate = static_cast<double>(second.keys["samples"] - first.keys["samples"]) / seconds;
  ASSERT_NE(StackWith(second, hold_200), nullptr);
  const uint64_t live_200 = LiveBytesThrough(second, hold_200);
  std::cout << "budget: " << rate << " samples/s (budget " << kBudget << "), period "
            << second.keys["period"] << " (asked 4096, raised " << second.keys["raised"]
            << " times), hold_200 live " << static_cast<double>(live_200 / kMiB) << " MiB\n";
  EXPECT_GT(second.keys["period"], 4096u);
  EXPECT_EQ(second.keys["base_period"], 4096u);
  // A tick of 250 ms may overshoot before the period moves: half again.
  EXPECT_LT(rate, 1.5 * kBudget);
  // At the period the budget settles on here (about 0.5 MiB: each 1 MiB
  // block sampled with probability ~0.85) the estimate's relative standard
  // error is about 3 %; 20 % is more than six of them.
  EXPECT_NEAR(static_cast<double>(live_200), 200.0 * kMiB, 40.0 * kMiB);
  EXPECT_TRUE(holder.running());
}

// `binary` is malloc_stress, built plain or under ASan; `env` its preload.
void AgentSamplerTest::Stress(const std::string& binary, std::vector<std::string> env,
                              bool fork_storm) {
  const std::string ready = dir_ / "stress.ready";
  const std::string out = dir_ / "stress.out";
  SpawnOptions o;
  o.stdout_path = out;
  o.stderr_path = dir_ / "stress.err";
  o.env = std::move(env);
  std::vector<std::string> argv = {binary,        "--threads",       "2",   "--seconds",
                                   "120",         "--ready-file",    ready, "--thread-churn",
                                   "--churn-lib", SAMPLER_PLUGIN_LIB};
  if (fork_storm) argv.push_back("--fork-storm");
  Process p(argv, o);
  started_.push_back(p.pid());
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready) || !p.running(); }, 20s) && p.running())
      << ReadFile(o.stderr_path);
  Target t = TargetOf(p.pid());
  // A small period: many samples, so the hooks' slow path runs all the time.
  for (int i = 0; i < 1000; ++i) {
    Result<std::string> on = Ask(t, "sampling on 65536");
    ASSERT_TRUE(on.ok()) << "switch " << i << ": " << on.status().message();
    if (i % 100 == 99) {
      Sites s = AskSites(t);
      EXPECT_EQ(s.keys["on"], 1u);
      EXPECT_EQ(s.keys["stacks"], s.stacks.size());
    }
    Result<std::string> off = Ask(t, "sampling off");
    ASSERT_TRUE(off.ok()) << "switch " << i << ": " << off.status().message();
    EXPECT_EQ(*off, "was_on=1\n");
  }
  // After the last "off", the next "on" starts from an empty live table:
  // every live sample is one taken since.
  Result<std::string> on = Ask(t, "sampling on 65536");
  ASSERT_TRUE(on.ok()) << on.status().message();
  Sites s = AskSites(t);
  EXPECT_GE(s.keys["generation"], 1001u);
  EXPECT_LE(s.keys["live_samples"], s.keys["samples"]);
  // Sampling a while longer, with the plugin loaded and unloaded under it.
  ASSERT_TRUE(WaitFor([&] { return AskSites(t).keys["samples"] > 1000; }, 20s));
  ASSERT_TRUE(Ask(t, "sampling off").ok());
  ASSERT_TRUE(p.running());
  std::optional<int> rc = p.Stop(SIGTERM, 30s);
  const std::string text = ReadFile(out);
  std::cout << text;
  EXPECT_EQ(rc, 0) << text << ReadFile(o.stderr_path);
  EXPECT_NE(text.find(" errors=0\n"), std::string::npos) << text;
  EXPECT_NE(text.find(" extra_failures=0\n"), std::string::npos) << text;
  if (fork_storm) {
    EXPECT_EQ(text.find("forks=0 "), std::string::npos) << text;
  }
  EXPECT_EQ(text.find(" dlopens=0 "), std::string::npos) << text;
  EXPECT_EQ(text.find(" threads=0 "), std::string::npos) << text;
}

TEST_F(AgentSamplerTest, StressForksDlopenThreadsAndThousandSwitches) {
  Stress(MALLOC_STRESS_BIN, {std::string("LD_PRELOAD=") + AGENT_LIB}, true);
}

// The same with the program built under AddressSanitizer: the hooks stand
// between it and ASan's malloc and free (its runtime preloaded first, as a
// shared ASan runtime must be), and ASan checks every block the program
// gets and gives back through them: a block the hooks handed out wrong,
// freed twice or freed to the wrong allocator ends the program with a
// report. Without the fork storm: gcc 12's ASan allocator does not lock
// around fork, so a child forked while another thread is inside ASan's
// malloc hangs in its first malloc (seen with the agent not even sampling:
// the child waits on ASan's size-class mutex for good).
TEST_F(AgentSamplerTest, StressUnderAddressSanitizer) {
  if (std::string(MALLOC_STRESS_ASAN_BIN).empty()) GTEST_SKIP() << "no gcc ASan runtime";
  Stress(MALLOC_STRESS_ASAN_BIN,
         {std::string("LD_PRELOAD=") + ASAN_RUNTIME_SO + ":" + AGENT_LIB,
          "ASAN_OPTIONS=detect_leaks=0:halt_on_error=1"},
         false);
  EXPECT_EQ(ReadFile(dir_ / "stress.err").find("AddressSanitizer"), std::string::npos)
      << ReadFile(dir_ / "stress.err");
}

// The agent loaded into a running JVM (the attach "load", as
// --jvm.load-agent does) samples its allocations; the JVM goes on.
class AgentSamplerJvmTest : public ::testing::TestWithParam<std::string> {
 protected:
  void TearDown() override {
    for (pid_t pid : started_) RemoveStaleAgentSocket(pid);
  }
  TempDir dir_;
  std::vector<pid_t> started_;
};

TEST_P(AgentSamplerJvmTest, LoadedIntoARunningJvmSamples) {
  if (!fs::exists(GetParam() + "/bin/java")) GTEST_SKIP() << "no JDK at " << GetParam();
  const std::string ready = dir_ / "BufferPools.ready";
  std::vector<std::string> argv = {GetParam() + "/bin/java"};
  std::vector<std::string> rest = BufferPoolsArgs(ready, dir_.path());
  argv.insert(argv.end(), rest.begin(), rest.end());
  SpawnOptions o;
  o.stderr_path = dir_ / "jvm.stderr";
  Process jvm(argv, o);
  started_.push_back(jvm.pid());
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready) || !jvm.running(); }, 90s) &&
              fs::exists(ready))
      << ReadFile(o.stderr_path);
  Target t = TargetOf(jvm.pid());
  Result<jvm::AttachResponse> answer =
      jvm::ExecuteAttach(t, "load", AGENT_LIB, "true",
                         AGENT_ATTACH_VERSION_OPTION + std::to_string(AGENT_PROTOCOL_VERSION));
  ASSERT_TRUE(answer.ok()) << answer.status().message();
  ASSERT_TRUE(jvm::ParseLoadAnswer(*answer, AGENT_LIB).Loaded()) << answer->output;
  ASSERT_TRUE(WaitFor([&] { return agent::AgentCommand(t, "ping").ok(); }, 20s));

  Result<std::string> on = Ask(t, "sampling on 4096");
  ASSERT_TRUE(on.ok()) << on.status().message();
  Sites s;
  // The JVM is idle once ready: an attach command makes it malloc (the
  // attach listener's and the thread dump's own buffers).
  ASSERT_TRUE(WaitFor(
      [&] {
        RunCommand({MemtrimdBin(), "jcmd", "--pid", std::to_string(jvm.pid()), "Thread.print"});
        s = AskSites(t);
        return !s.stacks.empty();
      },
      20s));
  EXPECT_EQ(s.keys["on"], 1u);
  EXPECT_GE(s.keys["hooked_objects"], 2u);  // libjvm, libc at least
  bool with_frames = false;
  for (const Stack& st : s.stacks) with_frames |= !st.pcs.empty();
  EXPECT_TRUE(with_frames);
  Result<std::string> off = Ask(t, "sampling off");
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_EQ(*off, "was_on=1\n");
  EXPECT_TRUE(jvm.running());
  RunResult version =
      RunCommand({MemtrimdBin(), "jcmd", "--pid", std::to_string(jvm.pid()), "VM.version"});
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_TRUE(jvm.running());
}

INSTANTIATE_TEST_SUITE_P(Jdks, AgentSamplerJvmTest, ::testing::ValuesIn(FindJdkHomes()),
                         [](const ::testing::TestParamInfo<std::string>& home) {
                           return JdkTestName(home.param);
                         });

}  // namespace
}  // namespace memtrimd::testing

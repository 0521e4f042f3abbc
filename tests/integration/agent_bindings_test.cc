// The allocation sampler's hooks on every binding a distribution ships
// (collectors/agent/in_target/agent_got.c): Debian's own non-PIE python3.11
// holding zlib streams, gawk (non-PIE), mariadbd (a PIE C++ server, full
// RELRO), and bindings_probe built as each shape (tests/workloads: non-PIE
// with a canonical PLT entry, -fno-plt, full RELRO, linked with tcmalloc,
// jemalloc preloaded, a plugin loaded after sampling started). Where a
// program cannot be hooked (its own malloc under RTLD_DEEPBIND, jemalloc
// linked into the executable) the agent counts the objects it leaves and
// inspect says "not sampled". Each program is driven through the agent's
// socket at a 64 KiB period with no sample budget: every 256 KiB block is
// sampled with probability 98 %, so a site's estimate is within a few
// percent of its truth.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "collectors/agent/client/agent_client.h"
#include "collectors/agent/client/agent_sites.h"
#include "collectors/procfs/maps.h"
#include "collectors/procfs/target_reader.h"
#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMiB = 1 << 20;
constexpr const char* kSamplingOn = "sampling on 65536 max_rate=0";
// bindings_probe's blocks: 40 of 256 KiB from hold(), as many from the plugin.
constexpr uint64_t kBlocks = 40, kBlockBytes = 256 * 1024;

Target TargetOf(pid_t pid) {
  Result<Target> t = procfs::ReadTarget("/proc", pid);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : Target{};
}

Result<std::string> Ask(const Target& t, const std::string& command) {
  agent::AgentOptions o;
  o.timeout = std::chrono::milliseconds(5000);
  return agent::AgentCommand(t, command, o);
}

bool AgentUp(pid_t pid) {
  return WaitFor([&] { return agent::AgentCommand(TargetOf(pid), "ping").ok(); }, 20s);
}

agent::SamplingStarted TurnOn(const Target& t) {
  Result<std::string> on = Ask(t, kSamplingOn);
  EXPECT_TRUE(on.ok()) << on.status().message();
  Result<agent::SamplingStarted> s =
      on.ok() ? agent::ParseSamplingStarted(*on) : Result<agent::SamplingStarted>(on.status());
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : agent::SamplingStarted{};
}

agent::AgentSites ReadSites(const Target& t) {
  Result<std::string> body = Ask(t, "sites");
  EXPECT_TRUE(body.ok()) << body.status().message();
  Result<agent::AgentSites> s =
      body.ok() ? agent::ParseAgentSites(*body) : Result<agent::AgentSites>(body.status());
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : agent::AgentSites{};
}

// The address ranges of the mappings of files whose path satisfies `match`.
template <typename Match>
std::vector<std::pair<uint64_t, uint64_t>> RangesOf(pid_t pid, Match match) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  Result<std::vector<procfs::MapsEntry>> maps =
      procfs::ParseMaps(ReadFile("/proc/" + std::to_string(pid) + "/maps"));
  EXPECT_TRUE(maps.ok());
  if (!maps.ok()) return out;
  for (const procfs::MapsEntry& m : *maps) {
    if (!m.path.empty() && match(m.path)) out.emplace_back(m.start, m.end);
  }
  return out;
}

bool In(const std::vector<std::pair<uint64_t, uint64_t>>& ranges, uint64_t pc) {
  for (const auto& [lo, hi] : ranges) {
    if (pc >= lo && pc < hi) return true;
  }
  return false;
}

// Live (or allocated) bytes of the stacks with a frame in `ranges`: the
// innermost frame only (the caller of malloc), or any frame.
uint64_t BytesThrough(const agent::AgentSites& s,
                      const std::vector<std::pair<uint64_t, uint64_t>>& ranges, bool innermost,
                      bool live = true) {
  uint64_t bytes = 0;
  for (const agent::AgentStack& st : s.stacks) {
    bool through = false;
    for (std::size_t i = 0; i < st.pcs.size() && !through; ++i) {
      through = In(ranges, st.pcs[i]) && (!innermost || i == 0);
    }
    if (through) bytes += live ? st.values.live_bytes : st.values.alloc_bytes;
  }
  return bytes;
}

std::string Describe(const agent::AgentSites& s) {
  std::ostringstream o;
  o << "samples=" << s.samples << " hooked_objects=" << s.hooked_objects
    << " hooked_entries=" << s.hooked_entries << " unhooked_objects=" << s.unhooked_objects
    << " stacks=" << s.stacks.size();
  return o.str();
}

class AgentBindingsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (pid_t pid : started_) RemoveStaleAgentSocket(pid);
  }

  // What one bindings_probe run saw.
  struct Probe {
    agent::SamplingStarted started;
    agent::AgentSites sites;
    uint64_t own_live = 0;     // live bytes whose malloc caller is in the executable
    uint64_t plugin_live = 0;  // ... in the plugin
    std::string inspect;       // memtrimd inspect --sites, read while it holds
  };

  // bindings_probe `binary` with `preload` before the agent, sampling on
  // before it holds; `plugin` loaded after sampling started ("" for none).
  Probe RunProbe(const std::string& binary, const std::string& preload,
                 const std::string& plugin = "", bool deepbind = false) {
    Probe r;
    const std::string tag = fs::path(binary).filename().string() + "." + std::to_string(++runs_);
    StdinPipe in(dir_ / (tag + ".in"));
    EXPECT_TRUE(in.ok());
    SpawnOptions o;
    o.stdin_path = in.path();
    o.stdout_path = dir_ / (tag + ".out");
    o.stderr_path = dir_ / (tag + ".err");
    o.env = {"LD_PRELOAD=" + (preload.empty() ? "" : preload + " ") + AGENT_LIB};
    std::vector<std::string> argv = {binary, std::to_string(kBlocks), std::to_string(kBlockBytes)};
    if (!plugin.empty()) argv.push_back(plugin);
    if (deepbind) argv.push_back("deepbind");
    Process p(argv, o);
    started_.push_back(p.pid());
    const std::string out = o.stdout_path;
    EXPECT_TRUE(WaitFor([&] { return ReadFile(out).find("ready\n") != std::string::npos; }, 20s) &&
                AgentUp(p.pid()))
        << ReadFile(o.stderr_path);
    Target t = TargetOf(p.pid());
    r.started = TurnOn(t);
    EXPECT_TRUE(in.Write("go\n"));
    EXPECT_TRUE(WaitFor([&] { return ReadFile(out).find("held ") != std::string::npos; }, 20s))
        << ReadFile(o.stderr_path);
    r.sites = ReadSites(t);
    r.own_live = BytesThrough(
        r.sites, RangesOf(p.pid(), [&](const std::string& path) { return path == binary; }), true);
    if (!plugin.empty()) {
      r.plugin_live = BytesThrough(
          r.sites, RangesOf(p.pid(), [&](const std::string& path) { return path == plugin; }),
          true);
    }
    r.inspect =
        RunCommand({MemtrimdBin(), "inspect", "--pid", std::to_string(p.pid()), "--sites"}).out;
    std::cout << fs::path(binary).filename().string() << (preload.empty() ? "" : " + " + preload)
              << (plugin.empty() ? "" : " + " + fs::path(plugin).filename().string())
              << (deepbind ? " (RTLD_DEEPBIND)" : "") << ": " << Describe(r.sites) << ", own live "
              << static_cast<double>(r.own_live) / kMiB << " MiB, plugin live "
              << static_cast<double>(r.plugin_live) / kMiB << " MiB\n";
    in.Close();  // end of file: it exits
    EXPECT_EQ(p.Wait(10s), 0) << ReadFile(o.stderr_path);
    return r;
  }

  // Sampled, every call hooked: hold()'s 10 MiB found within 15 % and no
  // "not sampled" line.
  void ExpectAllSeen(const Probe& r) {
    const double truth = static_cast<double>(kBlocks * kBlockBytes);
    EXPECT_GT(r.sites.hooked_entries, 0u);
    EXPECT_EQ(r.sites.unhooked_objects, 0u) << Describe(r.sites);
    EXPECT_NEAR(static_cast<double>(r.own_live), truth, 0.15 * truth) << Describe(r.sites);
    EXPECT_EQ(r.inspect.find("not sampled"), std::string::npos) << r.inspect;
  }

  TempDir dir_;
  int runs_ = 0;
  std::vector<pid_t> started_;
};

// Debian's python3.11 is a non-PIE executable that takes malloc's address:
// dlsym(RTLD_DEFAULT, "malloc") returns its canonical PLT stub, and an
// agent that took that for the definition left every GOT entry bound to
// libc's malloc alone ("0 B in 0 samples"). 300 zlib compressors held live:
// the bytes zlib asked of malloc, which the workload measures itself with
// glibc's mallinfo2 around making them (python objects of that size come
// from pymalloc's arenas, not malloc), against the stacks through libz.
TEST_F(AgentBindingsTest, Python311HoldingZlibStreams) {
  const std::string python = "/usr/bin/python3.11";
  if (!fs::exists(python)) GTEST_SKIP() << "no " << python;
  const std::string script = R"(
import ctypes, sys, zlib
class Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = Mallinfo2
def used():
    m = libc.mallinfo2()
    return m.uordblks + m.hblkhd
print("ready", flush=True)
sys.stdin.readline()
before = used()
held = [zlib.compressobj() for _ in range(300)]
print("held", used() - before, flush=True)
sys.stdin.read()
)";
  StdinPipe in(dir_ / "python.in");
  ASSERT_TRUE(in.ok());
  SpawnOptions o;
  o.stdin_path = in.path();
  o.stdout_path = dir_ / "python.out";
  o.stderr_path = dir_ / "python.err";
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Process p({python, "-c", script}, o);
  started_.push_back(p.pid());
  const std::string out = o.stdout_path;
  ASSERT_TRUE(WaitFor([&] { return ReadFile(out).find("ready\n") != std::string::npos; }, 20s))
      << ReadFile(o.stderr_path);
  ASSERT_TRUE(AgentUp(p.pid()));
  Target t = TargetOf(p.pid());
  agent::SamplingStarted on = TurnOn(t);
  EXPECT_GT(on.hooked_entries, 0u);
  ASSERT_TRUE(in.Write("go\n"));
  ASSERT_TRUE(WaitFor([&] { return ReadFile(out).find("held ") != std::string::npos; }, 20s))
      << ReadFile(o.stderr_path);
  uint64_t asked = 0;
  std::istringstream(ReadFile(out).substr(ReadFile(out).find("held ") + 5)) >> asked;
  // zlib's own arithmetic at the default level (deflate.c: window 2 * 32 KiB,
  // prev and head 32 Ki 2-byte entries each, pending_buf 16 Ki * 4 bytes)
  // is 256 KiB a stream, plus its deflate_state: glibc's count must agree.
  EXPECT_GE(asked, 300u * 4 * 65536);
  EXPECT_LE(asked, 300u * (4 * 65536 + 16384));
  agent::AgentSites s = ReadSites(t);
  const uint64_t zlib = BytesThrough(s,
                                     RangesOf(p.pid(),
                                              [](const std::string& path) {
                                                return path.find("/libz.so.1") != std::string::npos;
                                              }),
                                     false);
  std::cout << "python3.11: " << Describe(s) << "; zlib asked " << static_cast<double>(asked) / kMiB
            << " MiB (mallinfo2), its stacks hold " << static_cast<double>(zlib) / kMiB << " MiB\n";
  EXPECT_EQ(s.unhooked_objects, 0u);
  EXPECT_NEAR(static_cast<double>(zlib), static_cast<double>(asked),
              0.15 * static_cast<double>(asked));
  in.Close();
  EXPECT_EQ(p.Wait(10s), 0) << ReadFile(o.stderr_path);
}

// gawk is non-PIE too (without a canonical PLT entry for malloc): 200
// strings of 256 KiB held in an array, seen through gawk's own frames.
TEST_F(AgentBindingsTest, GawkHoldingStrings) {
  const std::string gawk = "/usr/bin/gawk";
  if (!fs::exists(gawk)) GTEST_SKIP() << "no " << gawk;
  StdinPipe in(dir_ / "gawk.in");
  ASSERT_TRUE(in.ok());
  SpawnOptions o;
  o.stdin_path = in.path();
  o.stdout_path = dir_ / "gawk.out";
  o.stderr_path = dir_ / "gawk.err";
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Process p({gawk,
             "BEGIN { print \"ready\"; fflush(); getline go;"
             " for (i = 0; i < 200; i++) held[i] = sprintf(\"%262144d\", i);"
             " print \"held\"; fflush(); while ((getline line) > 0) {} }"},
            o);
  started_.push_back(p.pid());
  const std::string out = o.stdout_path;
  ASSERT_TRUE(WaitFor([&] { return ReadFile(out).find("ready\n") != std::string::npos; }, 20s))
      << ReadFile(o.stderr_path);
  ASSERT_TRUE(AgentUp(p.pid()));
  Target t = TargetOf(p.pid());
  TurnOn(t);
  ASSERT_TRUE(in.Write("go\n"));
  ASSERT_TRUE(WaitFor([&] { return ReadFile(out).find("held\n") != std::string::npos; }, 20s));
  agent::AgentSites s = ReadSites(t);
  const uint64_t live = BytesThrough(
      s, RangesOf(p.pid(), [&](const std::string& path) { return path == gawk; }), false);
  std::cout << "gawk: " << Describe(s) << "; through gawk " << static_cast<double>(live) / kMiB
            << " MiB live\n";
  EXPECT_EQ(s.unhooked_objects, 0u);
  // At least the 50 MiB of strings (gawk may hold a copy more of some).
  EXPECT_GE(static_cast<double>(live), 0.85 * 200 * 262144);
  in.Close();
  EXPECT_EQ(p.Wait(10s), 0) << ReadFile(o.stderr_path);
}

// mariadbd, a PIE C++ server bound now with full RELRO, on an empty data
// directory without grant tables (nothing else needs to be set up): a
// query's 16 MiB result is allocated through hooked entries.
TEST_F(AgentBindingsTest, MariadbdServesAQuery) {
  const std::string server = "/usr/sbin/mariadbd", client = "/usr/bin/mariadb";
  if (!fs::exists(server) || !fs::exists(client)) GTEST_SKIP() << "no mariadb-server";
  const std::string data = dir_ / "mariadb";
  fs::create_directories(data);
  const std::string sock = data + "/sock";
  SpawnOptions o;
  o.stderr_path = dir_ / "mariadbd.err";
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  std::vector<std::string> argv = {server,
                                   "--no-defaults",
                                   "--datadir=" + data,
                                   "--socket=" + sock,
                                   "--pid-file=" + data + "/pid",
                                   "--skip-networking",
                                   "--skip-grant-tables",
                                   "--innodb-buffer-pool-size=8M",
                                   "--innodb-log-file-size=4M"};
  if (geteuid() == 0) argv.push_back("--user=root");
  Process p(argv, o);
  started_.push_back(p.pid());
  ASSERT_TRUE(WaitFor([&] { return fs::exists(sock) || !p.running(); }, 30s) && p.running())
      << ReadFile(o.stderr_path);
  ASSERT_TRUE(AgentUp(p.pid()));
  Target t = TargetOf(p.pid());
  agent::SamplingStarted on = TurnOn(t);
  RunResult q = RunCommand({client, "--no-defaults", "-S", sock, "-u", "root", "-N", "-e",
                            "SELECT LENGTH(REPEAT('x', 16 * 1024 * 1024))"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("16777216"), std::string::npos) << q.out;
  agent::AgentSites s = ReadSites(t);
  const uint64_t allocated = BytesThrough(
      s, RangesOf(p.pid(), [&](const std::string& path) { return path == server; }), false, false);
  std::cout << "mariadbd: " << Describe(s) << "; allocated through mariadbd "
            << static_cast<double>(allocated) / kMiB << " MiB\n";
  EXPECT_GT(on.hooked_objects, 5u);  // mariadbd, libstdc++, libc, ...
  EXPECT_EQ(s.unhooked_objects, 0u);
  EXPECT_GE(allocated, 16 * kMiB);
  EXPECT_TRUE(p.Stop(SIGTERM, 30s).has_value()) << ReadFile(o.stderr_path);
}

// The shapes a program is built in: each one's hold() found, every call
// hooked. The plain PIE one loads a plugin after sampling started, whose
// blocks are found too.
TEST_F(AgentBindingsTest, EveryBuildShapeIsHooked) {
  {
    SCOPED_TRACE("pie + plugin");
    Probe r = RunProbe(WorkloadBin("bindings_probe"), "", WorkloadBin("libbindings_plugin.so"));
    ExpectAllSeen(r);
    const double truth = static_cast<double>(kBlocks * kBlockBytes);
    EXPECT_NEAR(static_cast<double>(r.plugin_live), truth, 0.15 * truth);
  }
  for (const char* shape : {"bindings_probe_nopie", "bindings_probe_noplt", "bindings_probe_relro",
                            "bindings_probe_tcmalloc"}) {
    SCOPED_TRACE(shape);
    if (!fs::exists(WorkloadBin(shape))) {
      std::cout << shape << " not built (its library was not found)\n";
      continue;
    }
    ExpectAllSeen(RunProbe(WorkloadBin(shape), ""));
  }
}

TEST_F(AgentBindingsTest, PreloadedJemallocAndTcmallocAreTheDefinition) {
  int ran = 0;
  for (const std::string& so : {std::string(JEMALLOC_SO), std::string(TCMALLOC_SO)}) {
    if (so.empty()) continue;
    SCOPED_TRACE(so);
    Probe r = RunProbe(WorkloadBin("bindings_probe"), so, WorkloadBin("libbindings_plugin.so"));
    ExpectAllSeen(r);
    const double truth = static_cast<double>(kBlocks * kBlockBytes);
    EXPECT_NEAR(static_cast<double>(r.plugin_live), truth, 0.15 * truth);
    ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "neither jemalloc nor tcmalloc found at build time";
}

// A library with a malloc of its own, loaded with RTLD_DEEPBIND: its calls
// bind to that one, which the hooks leave alone (its blocks are not
// glibc's: handing them to glibc's free would corrupt the heap), and say
// so. The executable's own calls are still seen.
TEST_F(AgentBindingsTest, DeepbindOwnMallocIsLeftAndReported) {
  Probe r = RunProbe(WorkloadBin("bindings_probe"), "", WorkloadBin("libbindings_deep.so"), true);
  const double truth = static_cast<double>(kBlocks * kBlockBytes);
  EXPECT_NEAR(static_cast<double>(r.own_live), truth, 0.15 * truth);
  EXPECT_EQ(r.plugin_live, 0u);
  EXPECT_EQ(r.sites.unhooked_objects, 1u) << Describe(r.sites);
  EXPECT_NE(r.inspect.find("not sampled: the allocations of 1 loaded object"), std::string::npos)
      << r.inspect;
}

// jemalloc linked into the executable and exported (-rdynamic): the
// executable is the definition and calls it directly, so nothing of
// hold() is seen; the agent counts the executable and inspect says so.
TEST_F(AgentBindingsTest, AnAllocatorLinkedIntoTheExecutableIsReported) {
  const std::string probe = WorkloadBin("bindings_probe_jemalloc_static");
  if (!fs::exists(probe)) GTEST_SKIP() << "no libjemalloc_pic.a at build time";
  Probe r = RunProbe(probe, "");
  EXPECT_EQ(r.own_live, 0u);
  EXPECT_GE(r.sites.unhooked_objects, 1u) << Describe(r.sites);
  EXPECT_NE(r.inspect.find("not sampled: "), std::string::npos) << r.inspect;
}

// A static executable: no dynamic loader reads LD_PRELOAD, so the agent is
// never in it, and it calls its allocator without a GOT. Sampling cannot see
// it and says so in one line, never "0 B in 0 samples".
TEST_F(AgentBindingsTest, AStaticExecutableIsSaidNotSampled) {
  const std::string binary = WorkloadBin("bindings_probe_static");
  StdinPipe in(dir_ / "static.in");
  ASSERT_TRUE(in.ok());
  SpawnOptions o;
  o.stdin_path = in.path();
  o.stdout_path = dir_ / "static.out";
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Process p({binary, std::to_string(kBlocks), std::to_string(kBlockBytes)}, o);
  started_.push_back(p.pid());
  const std::string out = o.stdout_path;
  ASSERT_TRUE(WaitFor([&] { return ReadFile(out).find("ready\n") != std::string::npos; }, 20s));
  ASSERT_TRUE(in.Write("go\n"));
  ASSERT_TRUE(WaitFor([&] { return ReadFile(out).find("held ") != std::string::npos; }, 20s));
  // No agent came in with the program: the preload was never read.
  EXPECT_EQ(ReadFile("/proc/" + std::to_string(p.pid()) + "/maps").find("libmemtrimd_agent"),
            std::string::npos);
  RunResult r = RunCommand({MemtrimdBin(), "inspect", "--pid", std::to_string(p.pid()), "--sites"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("not sampled: a static executable"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(" in 0 samples"), std::string::npos) << r.out;
  RunResult j =
      RunCommand({MemtrimdBin(), "inspect", "--pid", std::to_string(p.pid()), "--sites", "--json"});
  EXPECT_NE(j.out.find("not sampled: a static executable"), std::string::npos) << j.out;
  in.Close();
}

}  // namespace
}  // namespace memtrimd::testing

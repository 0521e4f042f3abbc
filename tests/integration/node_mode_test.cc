// Node-agent mode's acceptance: one memtrimd (--targets=node, root with the
// node agent's three capabilities) over a mix of processes this test starts:
// two JVMs on every JDK found (one as root, one as nobody), glibc programs
// with and without the preload agent (as root and as a uid with no passwd
// entry), and a JVM in its own pid and mount namespace. Every target's
// figures equal those a one-target memtrimd (`memtrimd inspect --json`) reads
// from the same process; after ten of them are killed and started again, no
// series of the old ones is left, the new ones are watched, and memtrimd
// holds no more descriptors or threads than before.
//
// Node mode watches every process on the machine: --targets.match on a
// marker in each command line keeps it to this test's own processes.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/integration/harness.h"
#include "tests/integration/json_value.h"
#include "tests/integration/node_agent.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

enum class Kind { kJvm, kGlibcAgent, kGlibc };

struct Spec {
  Kind kind;
  uid_t uid = 0;     // 0: root
  std::string java;  // kJvm: the JDK home
};

struct Started {
  Spec spec;
  std::unique_ptr<Process> process;
  pid_t pid() const { return process->pid(); }
};

// The value of label `name` in a series key `metric{a="x",b="y"}`.
std::optional<std::string> Label(const std::string& key, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(key, m, std::regex("[{,]" + name + "=\"([^\"]*)\""))) return std::nullopt;
  return m[1].str();
}

// The key of the one memtrimd_target_info series of `pid`, or "".
std::string TargetInfo(const Series& s, pid_t pid) {
  const std::string head = "memtrimd_target_info{pid=\"" + std::to_string(pid) + "\"";
  for (const auto& [key, value] : s) {
    if (key.rfind(head, 0) == 0 && (key[head.size()] == ',' || key[head.size()] == '}')) {
      return key;
    }
  }
  return "";
}

// Every series key that carries pid="<pid>".
std::vector<std::string> SeriesOf(const Series& s, pid_t pid) {
  const std::string label = "pid=\"" + std::to_string(pid) + "\"";
  std::vector<std::string> out;
  for (const auto& [key, value] : s) {
    if (key.find(label) != std::string::npos) out.push_back(key);
  }
  return out;
}

int64_t IntAt(const JsonValue& j, std::initializer_list<std::string_view> path) {
  const JsonValue* v = j.Path(path);
  return v != nullptr && v->Int() ? *v->Int() : -1;
}

std::optional<double> NmtCommitted(const JsonValue& j, const std::string& category) {
  const JsonValue* cats = j.Path({"jvm", "nmt", "categories"});
  if (cats == nullptr) return std::nullopt;
  for (const JsonValue& c : cats->items) {
    const JsonValue* name = c.Get("name");
    const JsonValue* committed = c.Get("committed_bytes");
    if (name != nullptr && name->text == category && committed != nullptr) {
      return committed->Number();
    }
  }
  return std::nullopt;
}

class NodeModeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!IsRoot()) GTEST_SKIP() << "needs root: the targets run as other users";
    if (FindJdkHomes().empty()) GTEST_SKIP() << "no JDK";
    marker_ = "mtnode" + std::to_string(::getpid());
  }

  void TearDown() override {
    for (pid_t pid : every_pid_) {
      RemoveStaleJvmSocket(pid);
      RemoveStaleAgentSocket(pid);
    }
  }

  // The JVM's command line: a fixed heap (-Xms = -Xmx) so that NMT's
  // "Java Heap" committed and the heap's maximum never move.
  std::vector<std::string> JavaArgs(const std::string& home, const std::string& ready) const {
    return {home + "/bin/java",
            "-Xms64m",
            "-Xmx64m",
            "-XX:NativeMemoryTracking=summary",
            "-Dmemtrimd.test=" + marker_,
            "-cp",
            shared_.classes(),
            "NativeChurn",
            "--threads",
            "2",
            "--quiet",
            "--ready-file",
            ready};
  }

  // Starts one target (without waiting); its ready file is ready_of_[pid].
  Started Start(const Spec& spec) {
    const std::string ready = shared_ / ("t" + std::to_string(++started_count_) + ".ready");
    std::vector<std::string> argv;
    if (spec.uid != 0) argv = AsUser(spec.uid);
    if (spec.kind == Kind::kJvm) {
      for (std::string& a : JavaArgs(spec.java, ready)) argv.push_back(std::move(a));
    } else {
      if (spec.kind == Kind::kGlibcAgent) {
        argv.insert(argv.end(), {"env", std::string("LD_PRELOAD=") + AGENT_LIB});
      }
      // Idle after the bursts, holding its arena heaps and free memory: the
      // figures of a program that does not move.
      argv.insert(argv.end(), {FragmenterBin(), "--quiet", "--threads", "3", "--rounds", "1",
                               "--burst-mib", "8", "--tag", marker_, "--ready-file", ready});
    }
    Started s{spec, std::make_unique<Process>(argv)};
    ready_of_[s.pid()] = ready;
    every_pid_.push_back(s.pid());
    return s;
  }

  bool WaitAllReady(std::vector<Started>& targets) {
    return WaitFor(
        [&] {
          for (Started& t : targets) {
            if (!fs::exists(ready_of_[t.pid()]) || !t.process->running()) return false;
          }
          return true;
        },
        120s);
  }

  // The node memtrimd shows every figure of `pid` the comparison needs.
  static bool FullyWatched(const Series& s, pid_t pid, Kind kind) {
    const std::string p = "pid=\"" + std::to_string(pid) + "\"";
    if (Find(s, "memtrimd_target_up", {p}) != 1.0) return false;
    if (!Find(s, "memtrimd_glibc_arena_heaps", {p})) return false;
    if (kind == Kind::kJvm) {
      return Find(s, "memtrimd_jvm_attachable", {p}) == 1.0 &&
             Find(s, "memtrimd_jvm_nmt_committed_bytes", {p, "\"Java Heap\""}).has_value() &&
             Find(s, "memtrimd_jvm_heap_max_bytes", {p}).has_value();
    }
    if (kind == Kind::kGlibcAgent) return Find(s, "memtrimd_glibc_malloc_arenas", {p}).has_value();
    return true;
  }

  static std::optional<JsonValue> InspectOne(pid_t pid) {
    std::vector<std::string> argv = NodeAgentCaps();
    argv.insert(argv.end(), {MemtrimdBin(), "inspect", "--pid", std::to_string(pid), "--json"});
    RunResult r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (r.exit_code != 0) return std::nullopt;
    return ParseJson(r.out);
  }

  // RSS moves between two reads a moment apart: a JVM's JIT and GC threads
  // and its attach listener, answering both memtrimds, touch pages, and a
  // compiler thread's arena of several MiB comes and goes in one step. Two
  // reads agree when they are 4 MiB or 5 % apart, whichever is larger; the
  // idle fragmenters stay well within it.
  static double Anon(const Series& s, pid_t pid) {
    return Find(s, "memtrimd_target_resident_memory_bytes",
                {"pid=\"" + std::to_string(pid) + "\"", "kind=\"anon\""})
        .value_or(-1);
  }
  static double AnonTolerance(double anon) { return std::max(4.0 * (1 << 20), 0.05 * anon); }
  static bool AnonAgrees(double a, double b) { return std::abs(a - b) <= AnonTolerance(b); }

  // A one-target read of `pid` and a node scrape right after it, taken
  // again (for up to 30 s) while their RSS figures are further apart than a
  // moment's movement: the figures are compared on a pair read together,
  // and the last pair is compared (and fails) when no pair agrees.
  struct NodeAndOne {
    Series node;
    std::optional<JsonValue> one;
  };
  static NodeAndOne ReadTogether(Memtrimd& m, pid_t pid) {
    NodeAndOne r;
    WaitFor(
        [&] {
          r.one = InspectOne(pid);
          if (!r.one) return true;
          r.node = m.Scrape();
          return AnonAgrees(Anon(r.node, pid),
                            static_cast<double>(IntAt(*r.one, {"process", "rss_anon_bytes"})));
        },
        30s);
    return r;
  }

  // Node mode's figures of one target against a one-target read of the
  // same process, taken right before the scrape `s`.
  static void ExpectSameFigures(const Series& s, const JsonValue& one, pid_t pid, Kind kind) {
    SCOPED_TRACE("pid " + std::to_string(pid));
    const std::string p = "pid=\"" + std::to_string(pid) + "\"";
    const std::string info = TargetInfo(s, pid);
    ASSERT_FALSE(info.empty());
    const JsonValue* comm = one.Get("comm");
    const JsonValue* runtime = one.Get("runtime");
    EXPECT_EQ(Label(info, "comm"), comm ? comm->text : "?");
    EXPECT_EQ(Label(info, "runtime"), runtime ? runtime->text : "?");
    const JsonValue* version = one.Path({"jvm", "version"});
    EXPECT_EQ(Label(info, "jvm_version"), version ? version->text : "");
    // No pod around these processes: identity labels present and empty.
    for (const char* l : {"pod_uid", "container_id", "qos_class", "pod_name"}) {
      EXPECT_EQ(Label(info, l), "") << info;
    }

    // The container limit: the same cgroup, read the same way (none here).
    const JsonValue* limit = one.Path({"cgroup", "limit_bytes"});
    std::optional<double> node_limit = Find(s, "memtrimd_target_memory_limit_bytes", {p});
    if (limit == nullptr || limit->kind == JsonValue::Kind::kNull) {
      EXPECT_FALSE(node_limit.has_value());
    } else {
      EXPECT_EQ(node_limit, limit->Number());
    }

    const double one_anon = static_cast<double>(IntAt(one, {"process", "rss_anon_bytes"}));
    EXPECT_NEAR(Anon(s, pid), one_anon, AnonTolerance(one_anon));

    if (kind == Kind::kJvm) {
      // Fixed by -Xms64m -Xmx64m.
      EXPECT_EQ(Find(s, "memtrimd_jvm_nmt_committed_bytes", {p, "\"Java Heap\""}),
                NmtCommitted(one, "Java Heap"));
      EXPECT_EQ(NmtCommitted(one, "Java Heap"), 64.0 * (1 << 20));
      EXPECT_EQ(Find(s, "memtrimd_jvm_heap_max_bytes", {p}),
                static_cast<double>(IntAt(one, {"jvm", "heap_max_bytes"})));
      // Arena heaps: a JVM thread that mallocs for the first time may still
      // get a new arena (compiler threads come and go), so at most one apart.
      EXPECT_NEAR(Find(s, "memtrimd_glibc_arena_heaps", {p}).value_or(-1),
                  static_cast<double>(IntAt(one, {"glibc", "arena_heaps"})), 1.0);
    } else {
      EXPECT_EQ(Find(s, "memtrimd_glibc_arena_heaps", {p}),
                static_cast<double>(IntAt(one, {"glibc", "arena_heaps"})));
    }
    if (kind == Kind::kGlibcAgent) {
      EXPECT_EQ(Find(s, "memtrimd_glibc_malloc_arenas", {p}),
                static_cast<double>(IntAt(one, {"malloc", "arenas"})));
      // malloc_info itself allocates its output buffer in the target: allow
      // that much movement between the two answers.
      EXPECT_NEAR(Find(s, "memtrimd_glibc_trimmable_estimate_bytes", {p}).value_or(-1),
                  static_cast<double>(IntAt(one, {"malloc", "trimmable_estimate_bytes"})), 1 << 20);
    } else if (kind == Kind::kGlibc) {
      EXPECT_FALSE(Find(s, "memtrimd_glibc_malloc_arenas", {p}).has_value());
    }
  }

  // Node mode's series of one target against those of a sidecar memtrimd
  // (--target.pid) watching the same process with the same intervals and
  // detail: the same families, the same identity and the figures that do
  // not move between two reads a moment apart.
  static void ExpectSameAsSidecar(const Series& node, const Series& side, pid_t pid, Kind kind) {
    SCOPED_TRACE("sidecar, pid " + std::to_string(pid));
    const std::string p = "pid=\"" + std::to_string(pid) + "\"";
    // Trims are per mode (node mode trims only the targets that opted in).
    auto families = [&](const Series& s) {
      std::set<std::string> out;
      for (const std::string& key : SeriesOf(s, pid)) {
        std::string name = key.substr(0, key.find('{'));
        if (name.rfind("memtrimd_trim_", 0) != 0) out.insert(name);
      }
      return out;
    };
    EXPECT_EQ(families(node), families(side));
    EXPECT_EQ(TargetInfo(node, pid), TargetInfo(side, pid));
    // Each memtrimd reads the boot time (/proc/stat btime, whole seconds)
    // once, when it starts; the kernel moves it when the wall clock is
    // stepped, so two memtrimds started apart may disagree by a second.
    EXPECT_NEAR(Find(node, "memtrimd_target_start_time_seconds", {p}).value_or(-1),
                Find(side, "memtrimd_target_start_time_seconds", {p}).value_or(-3), 1.0)
        << std::fixed << Find(node, "memtrimd_target_start_time_seconds", {p}).value_or(-1) << " "
        << Find(side, "memtrimd_target_start_time_seconds", {p}).value_or(-1);
    EXPECT_EQ(Find(node, "memtrimd_target_memory_limit_bytes", {p}),
              Find(side, "memtrimd_target_memory_limit_bytes", {p}));
    EXPECT_NEAR(Anon(node, pid), Anon(side, pid), AnonTolerance(Anon(side, pid)));
    // The keys (labels) of families whose members do not come and go.
    auto keys = [&](const Series& s, const std::string& family) {
      std::set<std::string> out;
      for (const std::string& key : SeriesOf(s, pid)) {
        if (key.rfind(family + "{", 0) == 0) out.insert(key);
      }
      return out;
    };
    if (kind == Kind::kJvm) {
      for (const char* family : {"memtrimd_jvm_nmt_reserved_bytes", "memtrimd_jvm_setting_info",
                                 "memtrimd_jvm_gc_collections_total", "memtrimd_jvm_risk"}) {
        EXPECT_EQ(keys(node, family), keys(side, family)) << family;
      }
      for (const char* metric :
           {"memtrimd_jvm_nmt_reserved_bytes", "memtrimd_jvm_nmt_committed_bytes"}) {
        EXPECT_EQ(Find(node, metric, {p, "\"Java Heap\""}),
                  Find(side, metric, {p, "\"Java Heap\""}))
            << metric;
      }
      EXPECT_EQ(Find(node, "memtrimd_jvm_heap_max_bytes", {p}),
                Find(side, "memtrimd_jvm_heap_max_bytes", {p}));
      EXPECT_NEAR(Find(node, "memtrimd_glibc_arena_heaps", {p}).value_or(-1),
                  Find(side, "memtrimd_glibc_arena_heaps", {p}).value_or(-2), 1.0);
    } else {
      EXPECT_EQ(Find(node, "memtrimd_glibc_arena_heaps", {p}),
                Find(side, "memtrimd_glibc_arena_heaps", {p}));
    }
    if (kind == Kind::kGlibcAgent) {
      EXPECT_EQ(Find(node, "memtrimd_glibc_malloc_arenas", {p}),
                Find(side, "memtrimd_glibc_malloc_arenas", {p}));
      EXPECT_EQ(keys(node, "memtrimd_allocator_bytes"), keys(side, "memtrimd_allocator_bytes"));
    }
  }

  TempDir dir_;
  SharedDir shared_;
  std::string marker_;
  int started_count_ = 0;
  std::map<pid_t, std::string> ready_of_;
  std::vector<pid_t> every_pid_;
};

TEST_F(NodeModeTest, EveryTargetAsOneTargetMemtrimdSeesItAndChurnLeavesNothingBehind) {
  // Two JVMs on every JDK, then glibc programs (with and without the agent,
  // every third as the nameless uid) up to ten at least: ten of them are
  // killed and started again; the namespaced JVM stays.
  std::vector<Spec> specs;
  for (const std::string& home : FindJdkHomes()) {
    specs.push_back({Kind::kJvm, 0, home});
    specs.push_back({Kind::kJvm, kNobodyUid, home});
  }
  for (int i = 0; i < 4 || specs.size() < 10; ++i) {
    specs.push_back(
        {i % 2 == 0 ? Kind::kGlibcAgent : Kind::kGlibc, i % 3 == 2 ? kNamelessUid : 0, ""});
  }
  constexpr std::size_t kChurned = 10;

  std::vector<Started> targets;
  for (const Spec& spec : specs) targets.push_back(Start(spec));
  const std::string ns_ready = shared_ / "ns.ready";
  std::vector<std::string> ns_args = JavaArgs(FindJdkHomes().front(), ns_ready);
  NamespacedJvm ns(kNamelessUid, ns_args, "/dev/null");
  ASSERT_TRUE(WaitAllReady(targets));
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ns_ready) || !ns.unshare().running(); }, 90s));
  ASSERT_TRUE(ns.unshare().running()) << "cannot make a pid and mount namespace here";
  ASSERT_EQ(NsPid(ns.pid()), 1);
  every_pid_.push_back(ns.pid());

  Memtrimd m(WrapWith{NodeAgentCaps()},
             {"--targets=node", "--targets.match=" + marker_,
              // unshare's own command line holds the marker too.
              "--targets.exclude=^unshare ", "--targets.min-rss=1MiB", "--discovery.interval=500ms",
              "--sample.interval=200ms", "--smaps.interval=500ms", "--jvm.interval=1s",
              "--metrics.detail=all"});
  ASSERT_TRUE(m.started()) << m.log();
  const pid_t self = m.process().pid();
  ASSERT_EQ(CapEffOf(ReadFile("/proc/" + std::to_string(self) + "/status")), NodeAgentCapMask());

  auto all_watched = [&](Series& s) {
    s = m.Scrape();
    if (Find(s, "memtrimd_targets_watched") != static_cast<double>(targets.size() + 1)) {
      return false;
    }
    for (const Started& t : targets) {
      if (!FullyWatched(s, t.pid(), t.spec.kind)) return false;
    }
    return FullyWatched(s, ns.pid(), Kind::kJvm);
  };
  Series s;
  ASSERT_TRUE(WaitFor([&] { return all_watched(s); }, 60s)) << m.log();
  EXPECT_EQ(Find(s, "memtrimd_targets_skipped", {"targets_max"}), 0.0);

  for (const Started& t : targets) {
    NodeAndOne r = ReadTogether(m, t.pid());
    ASSERT_TRUE(r.one.has_value());
    ExpectSameFigures(r.node, *r.one, t.pid(), t.spec.kind);
  }
  {
    NodeAndOne r = ReadTogether(m, ns.pid());
    ASSERT_TRUE(r.one.has_value());
    ExpectSameFigures(r.node, *r.one, ns.pid(), Kind::kJvm);
  }
  // And against a sidecar memtrimd of each kind of target: a JVM of every
  // JDK as another uid, a glibc program with and one without the agent,
  // the JVM in its own namespaces.
  {
    std::vector<std::pair<pid_t, Kind>> compared;
    std::set<std::string> jdks;
    bool agent = false, plain = false;
    for (const Started& t : targets) {
      bool first_of_kind = false;
      if (t.spec.kind == Kind::kJvm) {
        first_of_kind = t.spec.uid == kNobodyUid && jdks.insert(t.spec.java).second;
      } else if (t.spec.kind == Kind::kGlibcAgent) {
        first_of_kind = !std::exchange(agent, true);
      } else {
        first_of_kind = !std::exchange(plain, true);
      }
      if (first_of_kind) compared.emplace_back(t.pid(), t.spec.kind);
    }
    compared.emplace_back(ns.pid(), Kind::kJvm);
    ASSERT_EQ(compared.size(), FindJdkHomes().size() + 3);
    for (const auto& [pid, kind] : compared) {
      Memtrimd side(WrapWith{NodeAgentCaps()},
                    {"--target.pid=" + std::to_string(pid), "--sample.interval=200ms",
                     "--smaps.interval=500ms", "--jvm.interval=1s", "--metrics.detail=all",
                     "--trim.interval=0"});
      ASSERT_TRUE(side.started()) << side.log();
      Series one, node;
      ASSERT_TRUE(WaitFor(
          [&] {
            one = side.Scrape();
            return FullyWatched(one, pid, kind);
          },
          60s))
          << side.log();
      // Two scrapes together, again while their RSS figures are apart (as
      // ReadTogether does); compared on the last pair in any case.
      WaitFor(
          [&] {
            one = side.Scrape();
            node = m.Scrape();
            return AnonAgrees(Anon(node, pid), Anon(one, pid));
          },
          30s);
      ExpectSameAsSidecar(node, one, pid, kind);
    }
  }

  // Steady state before the churn: descriptors and threads with all eleven
  // targets watched (each JVM and agent target has its socket collector's
  // thread).
  const std::size_t fds_before = CountFds(self);
  const uint64_t threads_before = StatusValue(self, "Threads").value_or(0);

  std::vector<pid_t> old_pids;
  for (std::size_t i = 0; i < kChurned; ++i) {
    old_pids.push_back(targets[i].pid());
    targets[i].process->Kill();
  }
  std::set<pid_t> new_pids;
  for (std::size_t i = 0; i < kChurned; ++i) {
    targets[i] = Start(targets[i].spec);
    new_pids.insert(targets[i].pid());
  }
  ASSERT_TRUE(WaitAllReady(targets));

  // The new ones fully watched, and not one series of an old one left (a
  // recycled pid would be a new process: skip it, it is rare).
  ASSERT_TRUE(WaitFor(
      [&] {
        if (!all_watched(s)) return false;
        for (pid_t old : old_pids) {
          if (!new_pids.count(old) && !SeriesOf(s, old).empty()) return false;
        }
        return true;
      },
      60s))
      << m.log();
  for (pid_t old : old_pids) {
    if (new_pids.count(old)) continue;
    EXPECT_TRUE(SeriesOf(s, old).empty()) << SeriesOf(s, old).front();
  }
  // The restarted ones too (a JVM just started grows fastest: read together).
  for (std::size_t i = 0; i < kChurned; ++i) {
    NodeAndOne r = ReadTogether(m, targets[i].pid());
    ASSERT_TRUE(r.one.has_value());
    ExpectSameFigures(r.node, *r.one, targets[i].pid(), targets[i].spec.kind);
  }

  // Exited targets' threads end once their last call returns (a killed
  // target's socket is gone at once): poll, with a deadline, for the counts
  // to come back. One spare of each for a scrape's connection in flight.
  std::size_t fds_after = 0;
  uint64_t threads_after = 0;
  const bool settled = WaitFor(
      [&] {
        fds_after = CountFds(self);
        threads_after = StatusValue(self, "Threads").value_or(0);
        return fds_after <= fds_before + 1 && threads_after <= threads_before + 1;
      },
      30s);
  EXPECT_TRUE(settled) << "fds " << fds_before << " -> " << fds_after << ", threads "
                       << threads_before << " -> " << threads_after << "\n"
                       << m.log();
  std::cout << "node memtrimd: fds " << fds_before << " -> " << fds_after << ", threads "
            << threads_before << " -> " << threads_after << ", RSS "
            << StatusValue(self, "VmRSS").value_or(0) << " kB\n";
  EXPECT_TRUE(m.process().running());
}

// A node agent short of one capability still watches every target; each
// figure that needs the missing one is absent, /report says which it is
// (once per target in the log, not every sample), and the JVM is left
// alone: no SIGQUIT, no attach socket. CAP_KILL first: the JVM's listener
// must not be running yet.
TEST_F(NodeModeTest, ShortOfOneCapabilityEveryTargetIsWatchedAndSaysWhy) {
  std::vector<Started> targets;
  targets.push_back(Start({Kind::kJvm, kNobodyUid, FindJdkHomes().front()}));
  targets.push_back(Start({Kind::kGlibcAgent, kNamelessUid, ""}));
  ASSERT_TRUE(WaitAllReady(targets));
  const pid_t jvm = targets[0].pid();
  const pid_t frag = targets[1].pid();
  const std::string jvm_socket =
      "/proc/" + std::to_string(jvm) + "/root/tmp/.java_pid" + std::to_string(NsPid(jvm));

  for (const std::string drop : {"kill", "dac_override"}) {
    SCOPED_TRACE("without " + drop);
    const std::string needs = drop == "kill" ? "needs CAP_KILL" : "needs CAP_DAC_OVERRIDE";
    Memtrimd m(WrapWith{NodeAgentCaps(drop)},
               {"--targets=node", "--targets.match=" + marker_, "--targets.min-rss=1MiB",
                "--discovery.interval=500ms", "--sample.interval=100ms", "--smaps.interval=100ms",
                "--jvm.interval=100ms", "--metrics.detail=all"});
    ASSERT_TRUE(m.started()) << m.log();
    const std::string j = "pid=\"" + std::to_string(jvm) + "\"";
    const std::string g = "pid=\"" + std::to_string(frag) + "\"";
    Series s;
    ASSERT_TRUE(WaitFor(
        [&] {
          s = m.Scrape();
          return Find(s, "memtrimd_targets_watched") == 2.0 &&
                 Find(s, "memtrimd_jvm_attachable", {j}).has_value() &&
                 Find(s, "memtrimd_glibc_arena_heaps", {j}).has_value() &&
                 Find(s, "memtrimd_glibc_arena_heaps", {g}).has_value() &&
                 Find(s, "memtrimd_samples_total").value_or(0) >= 10;
        },
        30s))
        << m.log();
    EXPECT_EQ(Find(s, "memtrimd_target_up", {j}), 1.0);
    EXPECT_EQ(Find(s, "memtrimd_target_up", {g}), 1.0);
    EXPECT_GT(Find(s, "memtrimd_glibc_arena_heaps", {j}).value_or(0), 0);
    EXPECT_GT(Find(s, "memtrimd_glibc_arena_heaps", {g}).value_or(0), 0);
    EXPECT_EQ(Find(s, "memtrimd_jvm_attachable", {j}), 0.0);
    // The agent needs no signal; without CAP_DAC_OVERRIDE it is unreachable.
    EXPECT_EQ(Find(s, "memtrimd_glibc_malloc_arenas", {g}).has_value(), drop == "kill");
    const std::string report = Curl(m.url("/report")).body;
    EXPECT_NE(report.find("not attachable: attach: not signalling: "), std::string::npos) << report;
    EXPECT_NE(report.find(needs + " or the target's uid"), std::string::npos) << report;
    const std::string log = m.log();
    // Once per target, whatever order the fields of the line come in.
    int jvm_failures = 0;
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);) {
      if (LogHas(line, {"collector failed", "collector=jvm", "pid=" + std::to_string(jvm) + " "})) {
        ++jvm_failures;
        EXPECT_NE(line.find(needs), std::string::npos) << line;
      }
    }
    EXPECT_EQ(jvm_failures, 1) << log;
    EXPECT_FALSE(fs::exists(jvm_socket)) << "the JVM's attach listener was started";
    EXPECT_TRUE(targets[0].process->running());
    EXPECT_TRUE(targets[1].process->running());
  }
}

}  // namespace
}  // namespace memtrimd::testing

// memtrimd as a node agent: root with exactly CAP_SYS_PTRACE,
// CAP_DAC_OVERRIDE and CAP_KILL (setpriv's bounding set; no credential
// switching), against processes of two other uids: a JVM, a glibc program
// with the preload agent, and a JVM in its own pid and mount namespace (pid 1
// there, its /tmp a tmpfs that only /proc/<pid>/root reaches). With the three
// capabilities every figure is there and both trim backends give memory
// back. With one of them missing, the figures that need it are absent with a
// reason that names it, the rest are there, and the target is left as it was:
// not signalled, no attach socket made for nothing, attachable afterwards.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/integration/harness.h"
#include "tests/integration/json_value.h"
#include "tests/integration/node_agent.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

// The first JVM runs as nobody, whose hsperfdata file HotSpot makes
// owner-only; the glibc program and the namespaced JVM as a uid with no
// passwd entry.
constexpr uid_t kJvmUid = kNobodyUid;
constexpr uid_t kOtherUid = kNamelessUid;

class PrivilegesTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!IsRoot()) GTEST_SKIP() << "needs root: the targets run as other users";
    if (RunCommand({"setpriv", "--version"}).exit_code != 0) GTEST_SKIP() << "no setpriv";
  }

  std::string Java() const { return GetParam() + "/bin/java"; }

  std::vector<std::string> JavaArgs(const std::string& ready) const {
    return {Java(),
            "-Xmx64m",
            "-XX:NativeMemoryTracking=summary",
            "-cp",
            shared_.classes(),
            "NativeChurn",
            "--threads",
            "2",
            "--quiet",
            "--ready-file",
            ready};
  }

  // Waits for `ready`; false (and the process killed) when it never comes.
  static bool WaitReady(Process& p, const std::string& ready) {
    bool ok = WaitFor([&] { return fs::exists(ready) || !p.running(); }, 90s) && p.running();
    if (!ok) p.Kill();
    return ok;
  }

  // A JVM running as kJvmUid, its stdout kept (a thread dump would show there).
  Process StartJvm(const std::string& name) {
    const std::string ready = shared_ / (name + ".ready");
    std::vector<std::string> argv = AsUser(kJvmUid);
    for (std::string& a : JavaArgs(ready)) argv.push_back(std::move(a));
    SpawnOptions o;
    o.stdout_path = dir_ / (name + ".out");
    o.cwd = shared_ / "";
    Process p(argv, o);
    WaitReady(p, ready);
    return p;
  }

  // The fragmenter with the agent preloaded, as kOtherUid: four arena heaps
  // holding ~60 MiB of free memory a trim gives back.
  Process StartFragmenter() {
    const std::string ready = shared_ / "fragmenter.ready";
    std::vector<std::string> argv = AsUser(kOtherUid);
    argv.insert(argv.end(),
                {"env", std::string("LD_PRELOAD=") + AGENT_LIB, FragmenterBin(), "--quiet",
                 "--threads", "4", "--rounds", "1", "--burst-mib", "16", "--ready-file", ready});
    Process p(argv);
    WaitReady(p, ready);
    fragmenter_pid_ = p.pid();
    return p;
  }

  // Inspect as the node agent (less `drop`): the parsed JSON, or null.
  static std::optional<JsonValue> Inspect(pid_t pid, const std::string& drop = "",
                                          RunResult* raw = nullptr) {
    std::vector<std::string> argv = NodeAgentCaps(drop);
    argv.insert(argv.end(), {MemtrimdBin(), "inspect", "--pid", std::to_string(pid), "--json"});
    RunResult r = RunCommand(argv);
    if (raw != nullptr) *raw = r;
    if (r.exit_code != 0) return std::nullopt;
    return ParseJson(r.out);
  }

  static RunResult Trim(pid_t pid, const std::string& drop = "") {
    std::vector<std::string> argv = NodeAgentCaps(drop);
    argv.insert(argv.end(), {MemtrimdBin(), "trim", "--pid", std::to_string(pid), "--json"});
    return RunCommand(argv);
  }

  static int64_t IntAt(const JsonValue& j, std::initializer_list<std::string_view> path) {
    const JsonValue* v = j.Path(path);
    return v != nullptr && v->Int() ? *v->Int() : -1;
  }

  static std::string StringAt(const JsonValue& j, std::initializer_list<std::string_view> path) {
    const JsonValue* v = j.Path(path);
    return v != nullptr ? v->text : "";
  }

  // Every "why" of inspect's "missing" list, joined.
  static std::string MissingWhy(const JsonValue& j) {
    std::string out;
    if (const JsonValue* m = j.Get("missing")) {
      for (const JsonValue& item : m->items) out += StringAt(item, {"why"}) + "\n";
    }
    return out;
  }

  // Arena heaps found in smaps and every one confirmed by its heap_info
  // header, read with process_vm_readv (the ptrace attach check).
  static void ExpectHeapsConfirmed(const JsonValue& j) {
    const int64_t heaps = IntAt(j, {"glibc", "arena_heaps"});
    EXPECT_GT(heaps, 0);
    EXPECT_EQ(IntAt(j, {"glibc", "arena_heaps_confirmed"}), heaps);
    EXPECT_GT(IntAt(j, {"process", "rss_bytes"}), 0);
  }

  // The attach socket of a JVM, as memtrimd reaches it.
  static std::string JvmSocket(pid_t pid) {
    return "/proc/" + std::to_string(pid) + "/root/tmp/.java_pid" + std::to_string(NsPid(pid));
  }

  void TearDown() override {
    if (fragmenter_pid_ > 0) RemoveStaleAgentSocket(fragmenter_pid_);
  }

  TempDir dir_;
  SharedDir shared_;
  pid_t fragmenter_pid_ = -1;
};

// Before anything else: the wrapper gives memtrimd exactly the three.
TEST_P(PrivilegesTest, ThreeCapabilitiesReachEveryTarget) {
  Process jvm = StartJvm("jvm");
  ASSERT_TRUE(jvm.running());
  Process frag = StartFragmenter();
  ASSERT_TRUE(frag.running());

  // The JVM in its own pid and mount namespace, as kOtherUid: its attach
  // socket and trigger file live in a /tmp only /proc/<pid>/root reaches,
  // under the name of its pid there (1).
  const std::string ns_ready = shared_ / "ns.ready";
  NamespacedJvm ns(kOtherUid, JavaArgs(ns_ready), dir_ / "ns.out");
  const pid_t ns_jvm = ns.pid();
  if (!WaitReady(ns.unshare(), ns_ready)) {
    GTEST_SKIP() << "cannot make a pid and mount namespace here";
  }
  ASSERT_EQ(NsPid(ns_jvm), 1);
  ASSERT_NE(ns_jvm, 1);

  RunResult caps = RunCommand([] {
    std::vector<std::string> a = NodeAgentCaps();
    a.insert(a.end(), {"cat", "/proc/self/status"});
    return a;
  }());
  ASSERT_EQ(CapEffOf(caps.out), NodeAgentCapMask()) << caps.out << caps.err;

  for (pid_t pid : {jvm.pid(), ns_jvm}) {
    SCOPED_TRACE("JVM " + std::to_string(pid));
    EXPECT_EQ(StatusValue(pid, "Uid"), pid == ns_jvm ? kOtherUid : kJvmUid);
    RunResult raw;
    std::optional<JsonValue> j = Inspect(pid, "", &raw);
    ASSERT_TRUE(j.has_value()) << raw.err << raw.out;
    ExpectHeapsConfirmed(*j);
    EXPECT_EQ(j->Path({"jvm", "attachable"}) ? j->Path({"jvm", "attachable"})->boolean : false,
              true)
        << StringAt(*j, {"jvm", "attach_error"});
    EXPECT_FALSE(StringAt(*j, {"jvm", "version"}).empty());
    EXPECT_GT(IntAt(*j, {"jvm", "nmt", "total_committed_bytes"}), 0);
    if (pid == jvm.pid()) {
      // hsperfdata, 0600 and nobody's: CAP_DAC_OVERRIDE.
      EXPECT_NE(j->Path({"jvm", "gc", "last_cause"}), nullptr) << MissingWhy(*j);
    }
    struct stat st;
    ASSERT_EQ(::lstat(JvmSocket(pid).c_str(), &st), 0) << JvmSocket(pid);
    EXPECT_EQ(st.st_uid, pid == ns_jvm ? kOtherUid : kJvmUid);
  }

  {
    RunResult raw;
    std::optional<JsonValue> j = Inspect(frag.pid(), "", &raw);
    ASSERT_TRUE(j.has_value()) << raw.err << raw.out;
    ExpectHeapsConfirmed(*j);
    EXPECT_EQ(StringAt(*j, {"malloc", "source"}), "agent") << MissingWhy(*j);
    EXPECT_GT(IntAt(*j, {"malloc", "trimmable_estimate_bytes"}), 16 << 20);
  }

  // A trim through each backend. The fragmenter keeps ~60 MiB free in its
  // arenas; NativeChurn's freed zlib streams leave some free pages in the
  // JVMs' arenas too.
  for (pid_t pid : {jvm.pid(), ns_jvm, frag.pid()}) {
    SCOPED_TRACE("trim " + std::to_string(pid));
    RunResult r = Trim(pid);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    std::optional<JsonValue> j = ParseJson(r.out);
    ASSERT_TRUE(j.has_value()) << r.out;
    EXPECT_EQ(StringAt(*j, {"backend"}), pid == frag.pid() ? "agent" : "jvm");
    EXPECT_TRUE(j->Get("success") != nullptr && j->Get("success")->boolean) << r.out;
    EXPECT_GT(IntAt(*j, {"reclaimed_arena_heaps_bytes"}), pid == frag.pid() ? 16 << 20 : 0)
        << r.out;
  }

  // The daemon, on the namespaced JVM: its own capability set, and the
  // figures on /metrics.
  Memtrimd m(WrapWith{NodeAgentCaps()},
             {"--target.pid=" + std::to_string(ns_jvm), "--sample.interval=200ms",
              "--smaps.interval=200ms", "--jvm.interval=300ms"});
  ASSERT_TRUE(m.started()) << m.log();
  EXPECT_EQ(CapEffOf(ReadFile("/proc/" + std::to_string(m.process().pid()) + "/status")),
            NodeAgentCapMask());
  const std::string pid_label = "pid=\"" + std::to_string(ns_jvm) + "\"";
  Series s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return Find(s, "memtrimd_jvm_attachable", {pid_label}) == 1.0 &&
               Find(s, "memtrimd_jvm_nmt_committed_bytes", {pid_label, "Java Heap"}).has_value();
      },
      30s))
      << m.log();
  EXPECT_GT(Find(s, "memtrimd_glibc_arena_heaps", {pid_label}).value_or(0), 0);
  // (hsperfdata may fail: kOtherUid has no passwd entry, so no perf file.)
  for (const char* c : {"collector=jvm", "collector=glibc", "collector=process"}) {
    EXPECT_FALSE(LogHas(m.log(), {"collector failed", c})) << m.log();
  }

  for (const char* out : {"jvm.out", "ns.out"}) {
    EXPECT_EQ(ReadFile(dir_ / out).find("Full thread dump"), std::string::npos) << out;
  }
}

// One capability missing at a time, on targets no memtrimd has touched yet.
TEST_P(PrivilegesTest, EachMissingCapabilityIsNamedAndTheTargetIsLeftAlone) {
  Process jvm = StartJvm("jvm");
  ASSERT_TRUE(jvm.running());
  Process frag = StartFragmenter();
  ASSERT_TRUE(frag.running());
  const std::string jvm_socket = JvmSocket(jvm.pid());
  auto untouched = [&] {
    EXPECT_TRUE(jvm.running());
    EXPECT_TRUE(frag.running());
    EXPECT_FALSE(fs::exists(jvm_socket)) << "the JVM's attach listener was started";
    EXPECT_EQ(ReadFile(dir_ / "jvm.out").find("Full thread dump"), std::string::npos);
  };

  {
    SCOPED_TRACE("without CAP_SYS_PTRACE");
    // Nothing of another user's process can be read but its status: one
    // line naming the capability, exit 2, for the one-shot commands and the
    // daemon alike.
    for (pid_t pid : {jvm.pid(), frag.pid()}) {
      RunResult r;
      EXPECT_FALSE(Inspect(pid, "sys_ptrace", &r).has_value());
      EXPECT_EQ(r.exit_code, 2);
      EXPECT_NE(r.err.find("CAP_SYS_PTRACE"), std::string::npos) << r.err;
      RunResult t = Trim(pid, "sys_ptrace");
      EXPECT_EQ(t.exit_code, 2);
      EXPECT_NE(t.err.find("CAP_SYS_PTRACE"), std::string::npos) << t.err;
    }
    Memtrimd m(WrapWith{NodeAgentCaps("sys_ptrace")},
               {"--target.pid=" + std::to_string(jvm.pid())});
    EXPECT_FALSE(m.started());
    EXPECT_EQ(m.process().Wait(20s), 2);
    EXPECT_TRUE(LogHas(m.log(), {"--target.pid", "CAP_SYS_PTRACE"})) << m.log();
    untouched();
  }

  {
    SCOPED_TRACE("without CAP_KILL");
    RunResult raw;
    std::optional<JsonValue> j = Inspect(jvm.pid(), "kill", &raw);
    ASSERT_TRUE(j.has_value()) << raw.err << raw.out;
    ExpectHeapsConfirmed(*j);
    EXPECT_FALSE(j->Path({"jvm", "attachable"}) && j->Path({"jvm", "attachable"})->boolean);
    EXPECT_NE(StringAt(*j, {"jvm", "attach_error"}).find("needs CAP_KILL or the target's uid"),
              std::string::npos)
        << StringAt(*j, {"jvm", "attach_error"});
    // The agent needs no signal.
    std::optional<JsonValue> g = Inspect(frag.pid(), "kill", &raw);
    ASSERT_TRUE(g.has_value()) << raw.err << raw.out;
    EXPECT_EQ(StringAt(*g, {"malloc", "source"}), "agent") << MissingWhy(*g);
    untouched();
  }

  {
    SCOPED_TRACE("without CAP_DAC_OVERRIDE");
    RunResult raw;
    std::optional<JsonValue> j = Inspect(jvm.pid(), "dac_override", &raw);
    ASSERT_TRUE(j.has_value()) << raw.err << raw.out;
    ExpectHeapsConfirmed(*j);
    EXPECT_FALSE(j->Path({"jvm", "attachable"}) && j->Path({"jvm", "attachable"})->boolean);
    EXPECT_NE(
        StringAt(*j, {"jvm", "attach_error"}).find("needs CAP_DAC_OVERRIDE or the target's uid"),
        std::string::npos)
        << StringAt(*j, {"jvm", "attach_error"});
    // hsperfdata is there, owner-only: the GC counters say why they are absent.
    EXPECT_EQ(j->Path({"jvm", "gc"}), nullptr);
    EXPECT_NE(
        MissingWhy(*j).find("/" + std::to_string(NsPid(jvm.pid())) +
                            ": permission denied (needs CAP_DAC_OVERRIDE or the target's uid)"),
        std::string::npos)
        << MissingWhy(*j);

    std::optional<JsonValue> g = Inspect(frag.pid(), "dac_override", &raw);
    ASSERT_TRUE(g.has_value()) << raw.err << raw.out;
    ExpectHeapsConfirmed(*g);
    EXPECT_EQ(g->Get("malloc"), nullptr);
    EXPECT_NE(MissingWhy(*g).find("needs CAP_DAC_OVERRIDE or the target's uid"), std::string::npos)
        << MissingWhy(*g);
    RunResult t = Trim(frag.pid(), "dac_override");
    EXPECT_NE(t.exit_code, 0) << t.out;
    EXPECT_NE((t.out + t.err).find("needs CAP_DAC_OVERRIDE"), std::string::npos) << t.out << t.err;

    // The daemon keeps sampling both and says why once, not every sample.
    for (pid_t pid : {jvm.pid(), frag.pid()}) {
      Memtrimd m(WrapWith{NodeAgentCaps("dac_override")},
                 {"--target.pid=" + std::to_string(pid), "--sample.interval=100ms",
                  "--smaps.interval=100ms", "--jvm.interval=100ms", "--trim.interval=1h"});
      ASSERT_TRUE(m.started()) << m.log();
      const std::string label = "pid=\"" + std::to_string(pid) + "\"";
      ASSERT_TRUE(WaitFor(
          [&] { return Find(m.Scrape(), "memtrimd_samples_total").value_or(0) >= 10; }, 20s))
          << m.log();
      Series s = m.Scrape();
      EXPECT_GT(Find(s, "memtrimd_glibc_arena_heaps", {label}).value_or(0), 0);
      const std::string log = m.log();
      const std::string collector = pid == jvm.pid() ? "collector=jvm" : "collector=agent";
      std::size_t first = log.find(collector);
      ASSERT_NE(first, std::string::npos) << log;
      EXPECT_EQ(log.find(collector, first + 1), std::string::npos) << log;
      EXPECT_TRUE(LogHas(log, {collector, "CAP_DAC_OVERRIDE"})) << log;
    }
    untouched();
  }

  // And with all three, the same JVM: one SIGQUIT with its trigger file
  // starts its listener (no thread dump), and it answers.
  RunResult raw;
  std::optional<JsonValue> j = Inspect(jvm.pid(), "", &raw);
  ASSERT_TRUE(j.has_value()) << raw.err << raw.out;
  EXPECT_TRUE(j->Path({"jvm", "attachable"}) && j->Path({"jvm", "attachable"})->boolean)
      << StringAt(*j, {"jvm", "attach_error"});
  EXPECT_GT(IntAt(*j, {"jvm", "nmt", "total_committed_bytes"}), 0);
  EXPECT_EQ(ReadFile(dir_ / "jvm.out").find("Full thread dump"), std::string::npos);
  RunResult t = Trim(frag.pid());
  EXPECT_EQ(t.exit_code, 0) << t.err << t.out;
}

INSTANTIATE_TEST_SUITE_P(Jdks, PrivilegesTest, ::testing::ValuesIn(FindJdkHomes()),
                         [](const ::testing::TestParamInfo<std::string>& home) {
                           return JdkTestName(home.param);
                         });

}  // namespace
}  // namespace memtrimd::testing

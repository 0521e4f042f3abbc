// The Java frames stress test (issue 34): the agent, loaded into a busy JVM
// by memtrimd, samples nearly every native allocation (--sites.period=4KiB,
// no rate budget) and walks its Java frames while JavaFramesStress churns the
// JIT (call sites that change receiver types: compiled, trapped,
// deoptimised), defines classes in loaders it drops and unloads (so sampled
// stacks hold method ids of unloaded classes, which memtrimd names at every
// read), makes the GC collect under load, starts and ends threads, and on
// JDK 21 and later runs virtual threads that allocate. On every JDK found,
// once with each of G1, Parallel and ZGC, and once with -Xcheck:jni.
//
// The JVM must end by itself, exit 0, leave no hs_err file, and end within
// a deadline; memtrimd must read its sites several times while it runs, with
// Java frames (the agent's walk counter grows, sites are named by the
// workload's methods, frames of unloaded classes come back unknown), and
// stay healthy; -Xcheck:jni must print no JNI warning.
//
// Budget: 8 JVM runs (2 JDKs here) of kSeconds = 5 s of stress each, after
// the agent is loaded under load and sampling is on (under a second):
// 6 to 7.5 s a run with the JVM's start and end, 47 to 54 s for the 8; the
// sanitizer build runs one (Debian's JDK, G1).
//
// Virtual threads (JDK 21+; Temurin 25 here): a sampled allocation made on
// a virtual thread shows its frames and then its carrier's, as one stack:
// ... < JavaFramesStress.allocateOnVirtualThread <
// JavaFramesStress$OnVirtualThread.run < java.lang.Thread.runWith <
// java.lang.VirtualThread.run < ...VirtualThread$VThreadContinuation$1.run
// < jdk.internal.vm.Continuation.enter0 < ...Continuation.enter <
// ...Continuation.enterSpecial < ...Continuation.run <
// java.lang.VirtualThread.runContinuation < (the ForkJoinPool's frames) <
// java.util.concurrent.ForkJoinWorkerThread.run. After a virtual thread was
// unmounted and mounted again, the frames HotSpot has not copied back from
// its heap stack chunk yet (it thaws the top ones, lazily) are missing: the
// stack goes from the thawed frames straight to Continuation.enterSpecial
// (seen: allocateOnVirtualThread < Continuation.enterSpecial < ...). The
// site's name is the same either way (its first frame outside the JDK is
// the thread's own). The test checks the carrier's part on every such
// stack, and that some show the virtual thread's frames whole.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "collectors/agent/client/agent_client.h"
#include "collectors/procfs/target_reader.h"
#include "tests/integration/harness.h"
#include "tests/integration/pprof_top.h"
#include "tests/integration/served_sites.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

// Seconds of stress with sampling on, per JVM run.
constexpr int kSeconds = 5;
// Frames the agent keeps of a sampled stack, native and Java (MAX_FRAMES).
constexpr std::size_t kStackRowFrames = 32;

// How each run starts the JVM (beside the JDK): a GC each, or -Xcheck:jni
// with the JVM's default GC (G1 on these machines).
struct Variant {
  std::string name;
  std::vector<std::string> flags;
};

const std::vector<Variant>& Variants() {
  static const std::vector<Variant> v = {{"G1", {"-XX:+UseG1GC"}},
                                         {"Parallel", {"-XX:+UseParallelGC"}},
                                         {"Z", {"-XX:+UseZGC"}},
                                         {"CheckJni", {"-Xcheck:jni"}}};
  return v;
}

// One read of the target's sites, as /report shows it; none while the
// target has no sites.
std::optional<ServedSites> ReadSitesOnce(const Memtrimd& m) {
  ServedSites s = ReadServedSites(m);
  if (!s.on) return std::nullopt;
  return s;
}

// The agent's count of walks of Java frames, 0 when it says none.
uint64_t Walks(const ServedSites& s) { return s.java_frames ? s.java_frames->walks : 0; }

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The "key=value" words of the workload's last line of counts.
std::map<std::string, long> Counts(const std::string& out) {
  std::map<std::string, long> counts;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("rounds=")) continue;
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      const std::size_t eq = word.find('=');
      if (eq != std::string::npos) counts[word.substr(0, eq)] = std::stol(word.substr(eq + 1));
    }
  }
  return counts;
}

// Lines of the JVM's output that -Xcheck:jni prints for a misuse: "WARNING
// in native method: ...", "WARNING: JNI local refs: ...", "FATAL ERROR in
// native method: ...". (Not JDK 21+'s "WARNING: A JVM TI agent has been
// loaded dynamically", which every dynamically loaded agent gets.)
std::vector<std::string> JniWarnings(const std::string& text) {
  std::vector<std::string> found;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const bool warning =
        line.find("WARNING") != std::string::npos || line.find("FATAL ERROR") != std::string::npos;
    if (warning &&
        (line.find("JNI") != std::string::npos || line.find("native method") != std::string::npos))
      found.push_back(line);
  }
  return found;
}

// Frames of payload copies whose class was unloaded before memtrimd named
// them: "[java: unknown method]" right above JavaFramesStress.worker, the
// payload's caller.
int UnloadedPayloadFrames(const std::vector<std::vector<std::string>>& stacks) {
  int found = 0;
  for (const std::vector<std::string>& t : stacks) {
    for (std::size_t i = 1; i < t.size(); ++i) {
      if (t[i] == "JavaFramesStress.worker" && t[i - 1] == "[java: unknown method]") ++found;
    }
  }
  return found;
}

// A virtual thread's sampled allocations: its frames, then its carrier's
// from the continuation's entry on. Frames of a remounted virtual thread
// still in its heap stack chunk (not thawed yet) are left out, so only
// some stacks must show the virtual thread's frames whole.
void CheckVirtualThreadStacks(const std::vector<std::vector<std::string>>& stacks,
                              const std::string& traces) {
  int seen = 0, whole = 0, partial = 0, cut = 0;
  for (const std::vector<std::string>& t : stacks) {
    std::size_t at = 0;
    while (at < t.size() && t[at] != "JavaFramesStress.allocateOnVirtualThread") ++at;
    if (at == t.size()) continue;
    ++seen;
    std::string all, below;
    for (std::size_t i = 0; i < t.size(); ++i) {
      all += "  " + t[i] + "\n";
      if (i >= at) below += "  " + t[i] + "\n";
    }
    // A stack row holds 32 frames: deep native frames above leave too few
    // for the rest, and the outermost are cut (seen on ZGC: 21 frames of a
    // page allocation while the thread processed its stack watermark,
    // entering a JNI critical region).
    if (t.size() >= kStackRowFrames - 2) {
      if (cut++ == 0) std::cout << "[ NOTE     ] one cut by the row's length:\n" << all;
      continue;
    }
    std::size_t entry = at;
    while (entry < t.size() && t[entry] != "jdk.internal.vm.Continuation.enterSpecial") ++entry;
    ASSERT_LT(entry + 1, t.size()) << all;
    EXPECT_EQ(t[entry + 1], "jdk.internal.vm.Continuation.run") << all;
    EXPECT_EQ(t.back(), "java.util.concurrent.ForkJoinWorkerThread.run") << all;
    bool run = false;
    for (std::size_t i = at; i < entry; ++i) run = run || t[i] == "java.lang.VirtualThread.run";
    if (run && whole++ == 0)
      std::cout << "[ NOTE     ] a virtual thread's sampled stack:\n" << below;
    if (!run && partial++ == 0) std::cout << "[ NOTE     ] one remounted, not thawed:\n" << below;
  }
  std::cout << "[ NOTE     ] virtual thread stacks: " << seen << ", " << whole << " whole, "
            << partial << " without the frames not thawed, " << cut << " cut by the row's length\n";
  EXPECT_GT(whole, 0) << traces.substr(0, 20000);
}

// JavaFramesStress on the JDK at `home` with `flags`, for `seconds` once
// told "go" on `in`; its output in `dir` (jvm.out, jvm.err) and so is any
// hs_err_pid<pid>.log (the JVM's working directory and -XX:ErrorFile's).
// Returns once it is ready to be told.
void StartStress(const TempDir& dir, const std::string& home, const std::vector<std::string>& flags,
                 int seconds, StdinPipe& in, Process& jvm) {
  ASSERT_TRUE(in.ok());
  SpawnOptions o;
  o.stdin_path = in.path();
  o.stdout_path = dir / "jvm.out";
  o.stderr_path = dir / "jvm.err";
  o.cwd = dir.path();
  const std::string ready = dir / "stress.ready";
  std::vector<std::string> java = {home + "/bin/java", "-Xmx128m", "-XX:MaxDirectMemorySize=32m",
                                   "-XX:ErrorFile=" + (dir / "hs_err_pid%p.log")};
  java.insert(java.end(), flags.begin(), flags.end());
  java.insert(java.end(), {"-cp", JAVA_WORKLOADS_CLASSPATH, "JavaFramesStress", "--seconds",
                           std::to_string(seconds), "--ready-file", ready, "--go-on-stdin"});
  jvm = Process(java, o);
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready + ".base") || !jvm.running(); }, 60s) &&
              jvm.running())
      << ReadFile(dir / "jvm.out") << ReadFile(dir / "jvm.err");
}

class JavaFramesStressTest : public ::testing::TestWithParam<std::tuple<std::string, std::size_t>> {
};

TEST_P(JavaFramesStressTest, TheJvmEndsByItselfWhileMemtrimdReadsItsJavaFrames) {
  const std::string& home = std::get<0>(GetParam());
  const Variant& variant = Variants()[std::get<1>(GetParam())];
  const bool virtual_threads = JdkFeature(home) >= 21;
  TempDir dir;
  StdinPipe in(dir / "stress.in");
  Process jvm;
  ASSERT_NO_FATAL_FAILURE(StartStress(dir, home, variant.flags, kSeconds, in, jvm));
  auto output = [&] { return ReadFile(dir / "jvm.out") + ReadFile(dir / "jvm.err"); };

  // The agent is loaded into the JVM while it churns; every 4 KiB allocated
  // is sampled, with no budget, and the sites are read four times a second,
  // every stack kept (not the largest 256: the small stacks of unloaded
  // payload copies among them), so the agent names every frame each time.
  Memtrimd m({"--target.pid=" + std::to_string(jvm.pid()), "--jvm.load-agent", "--collector.sites",
              "--sites.period=4KiB", "--sites.max-rate=0", "--sites.interval=250ms",
              "--sample.interval=250ms", "--jvm.interval=1s", "--smaps.interval=1s",
              "--trim.interval=0", "--sites.top=50", "--sites.max-stacks=4096"});
  ASSERT_TRUE(m.started()) << m.log();
  std::optional<ServedSites> first;
  ASSERT_TRUE(WaitFor(
                  [&] {
                    first = ReadSitesOnce(m);
                    return (first && first->java_frames && first->java_frames->on) ||
                           !jvm.running();
                  },
                  60s) &&
              jvm.running())
      << m.log() << output();

  // The timed seconds start now. Until the JVM ends: each new read of its
  // sites, /healthz, and the served profile once a second.
  ASSERT_TRUE(in.Write("go\n"));
  const double go_at = NowSeconds();
  std::vector<ServedSites> reads;
  int unhealthy = 0;
  std::string last_profile;
  double polled_at = 0, profiled_at = 0;
  const bool ended = WaitFor(
      [&] {
        if (!jvm.running()) return true;
        const double now = NowSeconds();
        if (now - polled_at < 0.2) return false;
        polled_at = now;
        if (Curl(m.url("/healthz"), {"--max-time", "5"}).status != 200) ++unhealthy;
        std::optional<ServedSites> r = ReadSitesOnce(m);
        if (r && r->read_seconds > go_at &&
            (reads.empty() || r->read_seconds > reads.back().read_seconds))
          reads.push_back(*r);
        if (now - profiled_at > 1.0) {
          profiled_at = now;
          HttpResponse p = Curl(m.url("/debug/pprof/heap"), {"--max-time", "10"});
          if (p.status == 200 && jvm.running()) last_profile = p.body;
        }
        return false;
      },
      std::chrono::seconds(kSeconds + 90));
  ASSERT_TRUE(ended) << "the JVM did not end within " << kSeconds + 90 << " s\n"
                     << output() << m.log();
  const std::optional<int> exit = jvm.Wait(0ms);
  const std::string out = output();
  EXPECT_EQ(exit, 0) << out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir.path())) {
    const std::string name = e.path().filename();
    EXPECT_FALSE(name.starts_with("hs_err")) << ReadFile(e.path()).substr(0, 20000);
  }
  std::map<std::string, long> counts = Counts(ReadFile(dir / "jvm.out"));
  std::cout << "[ NOTE     ] " << variant.name << ": " << reads.size() << " reads, walks "
            << (reads.empty() ? 0 : Walks(reads.front())) << " -> "
            << (reads.empty() ? 0 : Walks(reads.back())) << " (without Java frames "
            << (reads.empty() || !reads.back().java_frames
                    ? 0
                    : reads.back().java_frames->walks_without)
            << "); " << ReadFile(dir / "jvm.out");
  EXPECT_GT(counts["rounds"], 0) << out;
  EXPECT_GT(counts["classes_unloaded"], 0) << out;
  EXPECT_GT(counts["platform_threads"], 0) << out;
  EXPECT_GT(counts["gcs"], 0) << out;
  if (virtual_threads) {
    EXPECT_GT(counts["virtual_threads"], 0) << out;
  }

  // Read several times while it ran, the walks growing, with Java frames in
  // the sites' names.
  ASSERT_GE(reads.size(), 3u) << m.log();
  EXPECT_GT(Walks(reads.back()), Walks(reads.front()));
  bool named = false;
  std::string names;
  for (const ServedSites& r : reads) {
    for (const ServedSite& row : r.rows) {
      named = named || row.name.find(" < JavaFramesStress") != std::string::npos;
    }
  }
  for (const ServedSite& row : reads.back().rows) names += row.name + "\n";
  EXPECT_TRUE(named) << names;

  // -Xcheck:jni checks every JNI call the agent makes (attached for its
  // setup and for naming frames) and the JVM's own: none may warn.
  if (variant.name == "CheckJni") {
    std::string warnings;
    for (const std::string& w : JniWarnings(out)) warnings += w + "\n";
    EXPECT_EQ(warnings, "") << out;
  }

  EXPECT_EQ(unhealthy, 0);
  EXPECT_EQ(Curl(m.url("/healthz")).status, 200) << m.log();
  EXPECT_TRUE(m.process().running()) << m.log();

  // The served profile, read while the JVM ran: its Java frames named
  // while classes were being unloaded.
  ASSERT_FALSE(last_profile.empty()) << m.log();
  WriteFile(dir / "heap.pb.gz", last_profile);
  SpawnOptions env;
  env.env = {"HOME=" + dir.path(), "PPROF_TMPDIR=" + dir.path()};
  RunResult traces = RunCommand(
      {GO_BIN, "tool", "pprof", "-traces", "-sample_index=alloc_space", dir / "heap.pb.gz"}, env);
  ASSERT_EQ(traces.exit_code, 0) << traces.err;
  const std::vector<std::vector<std::string>> stacks = PprofTraces(traces.out);
  EXPECT_GT(UnloadedPayloadFrames(stacks), 0) << traces.out.substr(0, 20000);
  if (virtual_threads) CheckVirtualThreadStacks(stacks, traces.out);
}

std::vector<std::tuple<std::string, std::size_t>> Cases() {
  std::vector<std::tuple<std::string, std::size_t>> cases;
#ifdef MEMTRIMD_TESTS_FIRST_JDK_ONLY
  // The sanitizer build looks for memory errors in memtrimd, which reads the
  // same sites whichever GC the JVM runs: G1 alone (one run, not four).
  const std::size_t variants = 1;
#else
  const std::size_t variants = Variants().size();
#endif
  for (const std::string& home : FindJdkHomes()) {
    for (std::size_t v = 0; v < variants; ++v) cases.emplace_back(home, v);
  }
  return cases;
}

// The JVMTI events end with sampling: once memtrimd stops (SIGTERM: it turns
// the sampler off), a JVM that goes on loading classes (a new class loader
// a round) makes no more method ids, so it pays nothing per class. While
// memtrimd ran, the ids grew with the classes.
TEST(JavaFramesStressEndTest, ClassEventsEndWhenSamplingEnds) {
  TempDir dir;
  StdinPipe in(dir / "stress.in");
  Process jvm;
  ASSERT_NO_FATAL_FAILURE(StartStress(dir, kJava17Home, {}, 30, in, jvm));
  ASSERT_TRUE(in.Write("go\n"));
  auto m = std::make_unique<Memtrimd>(std::vector<std::string>{
      "--target.pid=" + std::to_string(jvm.pid()), "--jvm.load-agent", "--collector.sites",
      "--sites.interval=250ms", "--sample.interval=250ms", "--trim.interval=0"});
  ASSERT_TRUE(m->started()) << m->log();
  Result<Target> t = procfs::ReadTarget("/proc", jvm.pid());
  ASSERT_TRUE(t.ok()) << t.status().message();
  auto ids = [&]() -> uint64_t {
    agent::AgentOptions ao;
    ao.timeout = std::chrono::milliseconds(5000);
    Result<std::string> sites = agent::AgentCommand(*t, "sites", ao);
    if (!sites.ok()) return 0;
    const std::size_t at = sites->find("\njava_ids=");
    return at == std::string::npos ? 0 : std::stoull(sites->substr(at + 10));
  };
  // While sampled: the ids grow as the JVM loads classes.
  uint64_t first = 0;
  ASSERT_TRUE(WaitFor([&] { return (first = ids()) > 0; }, 60s)) << m->log();
  ASSERT_TRUE(WaitFor([&] { return ids() > first; }, 30s)) << "ids never grew while on";
  ::kill(m->process().pid(), SIGTERM);
  EXPECT_EQ(m->process().Wait(20s), 0) << m->log();
  m.reset();
  // Off: over two seconds of class loading, not one id more.
  const uint64_t off = ids();
  const auto until = std::chrono::steady_clock::now() + 2s;
  uint64_t later = off;
  while (std::chrono::steady_clock::now() < until && jvm.running()) later = ids();
  ASSERT_TRUE(jvm.running()) << ReadFile(dir / "jvm.err");
  EXPECT_EQ(later, off) << "method ids made after sampling ended";
  in.Close();
  jvm.Kill();
}

INSTANTIATE_TEST_SUITE_P(
    Jdks, JavaFramesStressTest, ::testing::ValuesIn(Cases()),
    [](const ::testing::TestParamInfo<std::tuple<std::string, std::size_t>>& c) {
      return JdkTestName(std::get<0>(c.param)) + "_" + Variants()[std::get<1>(c.param)].name;
    });

}  // namespace
}  // namespace memtrimd::testing

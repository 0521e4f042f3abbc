// Java frames above sampled allocations (issue 34), on every JDK found: a
// JVM started without the agent, memtrimd loads it (--jvm.load-agent) and
// samples. JavaFramesHolder holds Deflaters from two methods through the
// same native path (holdDeflatersA twice as many as holdDeflatersB) and
// direct buffers from a third (holdDirect, 32 MiB), and its reader threads
// fill the temporary buffer cache (readWithHeapBuffers, 8 x 2 MiB). Each
// method must name a site of its own in the served sites and in the served
// pprof profile, the two Deflater paths' bytes must split 2:1 within the
// sampling error, the profile's Java frames must follow the JNI function
// with nothing between, and the page's "Who holds the direct memory" must
// name the direct buffers' and the temporary cache's callers. A JVM started
// with MEMTRIMD_AGENT_JAVA_FRAMES=0, or sampled by a memtrimd with
// --no-sites.java-frames, shows native frames only.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "tests/integration/harness.h"
#include "tests/integration/pprof_top.h"
#include "tests/integration/served_sites.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

constexpr double kMiB = 1024.0 * 1024.0;
constexpr std::string_view kHolder = "JavaFramesHolder.";
// The holder's reader threads and the file each reads whole.
constexpr int kReaders = 8;
constexpr std::size_t kReadBytes = 2 << 20;

// The live bytes of the sites named "<native> < JavaFramesHolder.<method>",
// summed; -1 when there is none. `nmt`: whether NMT counts the largest of
// them (the sites come largest first; a method's small sites, as a freed
// malloc of the JDK's native code, may be outside NMT).
double LiveOf(const ServedSites& s, const std::string& method, bool* nmt = nullptr) {
  const std::string suffix = " < " + std::string(kHolder) + method;
  double sum = -1;
  for (const ServedSite& row : s.rows) {
    if (row.name.size() > suffix.size() && row.name.ends_with(suffix)) {
      if (nmt != nullptr && sum < 0) *nmt = row.nmt_tracked;
      sum = (sum < 0 ? 0 : sum) + row.live;
    }
  }
  return sum;
}

// Whether the agent walks Java frames, as it says.
bool JavaOn(const ServedSites& s) { return s.java_frames && s.java_frames->on; }

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class JavaFramesTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Starts JavaFramesHolder (extra environment `env`) and waits for its
  // start; memtrimd, loading the agent into it, until sampling is on.
  void Start(std::vector<std::string> env = {}, std::vector<std::string> flags = {},
             std::vector<std::string> holder_args = {}) {
    in_ = std::make_unique<StdinPipe>(dir_ / "holder.in");
    ASSERT_TRUE(in_->ok());
    SpawnOptions o;
    o.stdin_path = in_->path();
    o.stderr_path = dir_ / "holder.err";
    o.env = std::move(env);
    ready_ = dir_ / "holder.ready";
    std::vector<std::string> java = {
        GetParam() + "/bin/java", "-Xmx64m",      "-cp", JAVA_WORKLOADS_CLASSPATH,
        "JavaFramesHolder",       "--ready-file", ready_};
    java.insert(java.end(), holder_args.begin(), holder_args.end());
    jvm_ = Process(java, o);
    ASSERT_TRUE(WaitFor([&] { return fs::exists(ready_ + ".base") || !jvm_.running(); }, 60s) &&
                jvm_.running())
        << ReadFile(dir_ / "holder.err");
    std::vector<std::string> argv = {
        "--target.pid=" + std::to_string(jvm_.pid()), "--jvm.load-agent", "--collector.sites",
        // Each of zlib's 64 KiB blocks sampled with odds 1 - e^-2, and no
        // budget raising the period during the holder's burst: the split
        // below is then within a few per cent.
        "--sites.period=32KiB", "--sites.max-rate=0", "--sites.interval=500ms",
        "--sample.interval=500ms", "--jvm.interval=1s", "--smaps.interval=1s", "--trim.interval=0"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    m_ = std::make_unique<Memtrimd>(argv);
    ASSERT_TRUE(m_->started()) << m_->log();
    ASSERT_TRUE(WaitFor([&] { return ReadServedSites(*m_).on; }, 60s))
        << m_->log() << ReadServedSites(*m_).missing;
  }

  // Tells the holder to hold, and returns the first sites read after it
  // held everything.
  ServedSites HoldAndRead() {
    ServedSites s;
    EXPECT_TRUE(in_->Write("hold\n"));
    EXPECT_TRUE(WaitFor([&] { return fs::exists(ready_) || !jvm_.running(); }, 60s) &&
                jvm_.running())
        << ReadFile(dir_ / "holder.err");
    const double held_at = NowSeconds();
    EXPECT_TRUE(WaitFor(
        [&] {
          s = ReadServedSites(*m_);
          return s.read_seconds > held_at;
        },
        30s))
        << m_->log();
    return s;
  }

  // The holder's arguments that start its readers on a file of kReadBytes.
  std::vector<std::string> ReaderArgs() {
    const std::string file = dir_ / "read.bin";
    WriteFile(file, std::string(kReadBytes, 'r'));
    return {"--read-file", file, "--readers", std::to_string(kReaders)};
  }

  void TearDown() override {
    // The holder ends when its stdin closes; killed by its pid otherwise.
    if (in_) in_->Close();
    if (jvm_.pid() > 0 && !jvm_.Wait(10s)) jvm_.Kill();
    m_.reset();
  }

  TempDir dir_;
  std::unique_ptr<StdinPipe> in_;
  Process jvm_;
  std::string ready_;
  std::unique_ptr<Memtrimd> m_;
};

// The live bytes of the page's "Who holds the direct memory" row of `kind`
// ("temporary_buffer_cache", "direct_buffers") for JavaFramesHolder's
// `method`; -1 when the page has no such row.
double DirectCallerBytes(const std::string& page, const std::string& kind,
                         const std::string& method) {
  const std::size_t table = page.find("<table class=\"direct-callers\"");
  if (table == std::string::npos) return -1;
  const std::size_t end = page.find("</table>", table);
  const std::string row = "data-kind=\"" + kind + "\" data-method=\"" + std::string(kHolder) +
                          method + "\" data-live-bytes=\"";
  const std::size_t at = page.find(row, table);
  if (at == std::string::npos || at > end) return -1;
  return std::stod(page.substr(at + row.size()));
}

TEST_P(JavaFramesTest, EachAppMethodNamesItsSitesAndTheDeflaterBytesSplitAsHeld) {
  ASSERT_NO_FATAL_FAILURE(Start({}, {}, ReaderArgs()));
  const ServedSites s = HoldAndRead();
  ASSERT_TRUE(s.java_frames.has_value()) << "the agent says nothing of Java frames";
  EXPECT_TRUE(JavaOn(s));
  bool nmt_a = true, nmt_direct = false;
  const double a = LiveOf(s, "holdDeflatersA", &nmt_a);
  const double b = LiveOf(s, "holdDeflatersB");
  const double direct = LiveOf(s, "holdDirect", &nmt_direct);
  bool nmt_cache = false;
  const double cache = LiveOf(s, "readWithHeapBuffers", &nmt_cache);
  std::string names;
  for (const ServedSite& row : s.rows) names += row.name + " " + std::to_string(row.live) + "\n";
  ASSERT_GT(a, 0) << names;
  ASSERT_GT(b, 0) << names;
  ASSERT_GT(direct, 0) << names;
  ASSERT_GT(cache, 0) << names;
  // 240 and 120 Deflaters, each four blocks of 64 KiB (zlib's window, prev,
  // head and pending buffers), each block sampled with odds 0.86 and
  // weighed 1/0.86: the estimate of A's bytes has a relative standard error
  // of 1.3 %, B's 1.8 %, their ratio 2.2 % (0.044). 0.2 is 4.5 of those.
  std::cout << "[ NOTE     ] holdDeflatersA " << a / kMiB << " MiB, holdDeflatersB " << b / kMiB
            << " MiB (ratio " << a / b << "), holdDirect " << direct / kMiB
            << " MiB, readWithHeapBuffers " << cache / kMiB << " MiB\n";
  EXPECT_NEAR(a / b, 2.0, 0.2) << names;
  // 32 blocks of 1 MiB, each sampled for sure at 32 KiB: 32 MiB exactly,
  // bar a page of alignment each.
  EXPECT_GE(direct, 32 * kMiB) << names;
  EXPECT_LE(direct, 33 * kMiB) << names;
  // Each reader's one read asked Util.getTemporaryDirectBuffer for a buffer
  // of the read's size (the file's, kReadBytes); its cache was empty, so it
  // allocated one (Unsafe.allocateMemory of exactly that size, on JDK 17
  // through ByteBuffer.allocateDirect) and kept it: kReaders x 2 MiB = 16
  // MiB, each block sampled for sure at 32 KiB. The readers' other live
  // allocations (their path buffers, below) are 16 KiB: within the 1 MiB.
  const double cache_bytes = double{kReaders} * kReadBytes;
  EXPECT_GE(cache, cache_bytes) << names;
  EXPECT_LE(cache, cache_bytes + kMiB) << names;
  // zlib's malloc is outside NMT; Unsafe.allocateMemory's os::malloc in it.
  EXPECT_FALSE(nmt_a);
  EXPECT_TRUE(nmt_direct);
  EXPECT_TRUE(nmt_cache);

  // The page names both direct-memory callers, each as what it holds.
  std::string page;
  double page_cache = -1, page_direct = -1;
  EXPECT_TRUE(WaitFor(
      [&] {
        HttpResponse r = Curl(m_->url("/"));
        page = r.body;
        page_cache = DirectCallerBytes(page, "temporary_buffer_cache", "readWithHeapBuffers");
        page_direct = DirectCallerBytes(page, "direct_buffers", "holdDirect");
        return r.status == 200 && page_cache > 0 && page_direct > 0;
      },
      30s))
      << page;
  EXPECT_GE(page_cache, cache_bytes);
  EXPECT_LE(page_cache, cache_bytes + kMiB);
  EXPECT_GE(page_direct, 32 * kMiB);
  EXPECT_LE(page_direct, 33 * kMiB);
  // Neither's buffers are listed as the other kind. The readers do hold
  // other direct memory: the 2 KiB native copy of the file's path that
  // FileChannel.open leaves in each thread's cache (sun.nio.fs.NativeBuffers,
  // Unsafe.allocateMemory), 16 KiB in all, seen in a sample or two.
  EXPECT_LT(DirectCallerBytes(page, "direct_buffers", "readWithHeapBuffers"), kMiB) << page;
  EXPECT_LT(DirectCallerBytes(page, "temporary_buffer_cache", "holdDirect"), 0) << page;

  // The served profile: every method in a trace of its own, the Java frames
  // right after the JNI function that called malloc's caller.
  HttpResponse profile = Curl(m_->url("/debug/pprof/heap"));
  ASSERT_EQ(profile.status, 200);
  WriteFile(dir_ / "heap.pb.gz", profile.body);
  SpawnOptions env;
  env.env = {"HOME=" + dir_.path(), "PPROF_TMPDIR=" + dir_.path()};
  RunResult traces = RunCommand({GO_BIN, "tool", "pprof", "-traces", dir_ / "heap.pb.gz"}, env);
  ASSERT_EQ(traces.exit_code, 0) << traces.err;
  bool seen_a = false, seen_b = false, seen_direct = false, seen_cache = false;
  for (const std::vector<std::string>& t : PprofTraces(traces.out)) {
    bool java = false, temporary = false;
    for (const std::string& frame : t) {
      if (frame == "JavaFramesHolder.holdDeflatersA") seen_a = java = true;
      if (frame == "JavaFramesHolder.holdDeflatersB") seen_b = java = true;
      if (frame == "JavaFramesHolder.holdDirect") seen_direct = java = true;
      if (frame == "sun.nio.ch.Util.getTemporaryDirectBuffer") temporary = true;
      // The reader's trace goes through the cache's allocation.
      if (frame == "JavaFramesHolder.readWithHeapBuffers") seen_cache = seen_cache || temporary;
    }
    // A walked stack goes from the JNI function straight on to its Java
    // method, the JVM's stub between left out. (A sample whose walk found
    // nothing, as during a GC pause, keeps its native frames only.)
    for (std::size_t i = 0; java && i < t.size(); ++i) {
      if (t[i] == "Java_java_util_zip_Deflater_init") {
        ASSERT_LT(i + 1, t.size()) << traces.out;
        EXPECT_EQ(t[i + 1], "java.util.zip.Deflater.init") << traces.out;
      }
    }
  }
  EXPECT_TRUE(seen_a) << traces.out;
  EXPECT_TRUE(seen_b) << traces.out;
  EXPECT_TRUE(seen_direct) << traces.out;
  EXPECT_TRUE(seen_cache) << traces.out;
  // Java frames carry their source file and line.
  RunResult lines =
      RunCommand({GO_BIN, "tool", "pprof", "-traces", "-lines", dir_ / "heap.pb.gz"}, env);
  ASSERT_EQ(lines.exit_code, 0) << lines.err;
  EXPECT_NE(lines.out.find("JavaFramesHolder.holdDirect JavaFramesHolder.java:"), std::string::npos)
      << lines.out;
}

// zlib's library loaded while sampling (Temurin 25 loads libzip at the
// first Deflater): its first allocations pass by the hooks until a pass
// patches its GOT, which the next allocation through a hook runs. A's
// Deflaters, the first made, must not lose their first ones: the split
// holds as when zlib was loaded before.
TEST_P(JavaFramesTest, ALibraryLoadedWhileSamplingIsSeenFromItsFirstAllocations) {
  ASSERT_NO_FATAL_FAILURE(Start({}, {}, {"--zlib-late"}));
  const ServedSites s = HoldAndRead();
  const double a = LiveOf(s, "holdDeflatersA");
  const double b = LiveOf(s, "holdDeflatersB");
  std::cout << "[ NOTE     ] zlib loaded late: holdDeflatersA " << a / kMiB
            << " MiB, holdDeflatersB " << b / kMiB << " MiB\n";
  ASSERT_GT(b, 0);
  EXPECT_NEAR(a / b, 2.0, 0.2);
}

TEST_P(JavaFramesTest, TheTargetsSwitchLeavesJavaFramesOut) {
  ASSERT_NO_FATAL_FAILURE(Start({"MEMTRIMD_AGENT_JAVA_FRAMES=0"}));
  const ServedSites s = HoldAndRead();
  ASSERT_TRUE(s.java_frames.has_value());
  EXPECT_FALSE(JavaOn(s));
  std::string names;
  for (const ServedSite& row : s.rows) names += row.name + "\n";
  EXPECT_EQ(names.find(kHolder), std::string::npos) << names;
  // Native frames still name the Deflaters' memory.
  EXPECT_NE(names.find("deflate"), std::string::npos) << names;
}

TEST_P(JavaFramesTest, MemtrimdsFlagLeavesJavaFramesOut) {
  ASSERT_NO_FATAL_FAILURE(Start({}, {"--no-sites.java-frames"}));
  const ServedSites s = HoldAndRead();
  ASSERT_TRUE(s.java_frames.has_value());
  EXPECT_FALSE(JavaOn(s));
  std::string names;
  for (const ServedSite& row : s.rows) names += row.name + "\n";
  EXPECT_EQ(names.find(kHolder), std::string::npos) << names;
  EXPECT_NE(names.find("deflate"), std::string::npos) << names;
}

// An agent before version 7 refuses "java=0" as an option it does not know:
// memtrimd asks again without it, and reads that agent's sites, which say
// nothing of Java frames.
TEST(JavaFramesOlderAgentTest, AskedAgainWithoutJavaAndReadAsBefore) {
  TempDir dir;
  const std::string socket = "/tmp/.memtrimd_fake_v6." + std::to_string(::getpid());
  ScopedUnlink unlink_socket{socket};
  const std::string requests = dir / "requests";
  SpawnOptions o;
  o.env = {"MEMTRIMD_AGENT_SOCKET=" + socket};
  Process fake({WorkloadBin("fake_sites_agent"), "--stacks", "4", "--frames", "4", "--refuse-java",
                "1", "--log-requests", requests},
               o);
  ASSERT_TRUE(fake.running());
  ASSERT_TRUE(WaitFor([&] { return ::access(socket.c_str(), F_OK) == 0; }, 10s)) << socket;
  Memtrimd m({"--target.pid=" + std::to_string(fake.pid()), "--collector.sites",
              "--no-sites.java-frames", "--sites.interval=500ms", "--sample.interval=500ms",
              "--trim.interval=0"});
  ASSERT_TRUE(m.started()) << m.log();
  ServedSites s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = ReadServedSites(m);
        return s.on && !s.rows.empty();
      },
      30s))
      << m.log() << s.missing;
  EXPECT_FALSE(s.java_frames.has_value());
  // Asked with java=0, refused, asked again without it.
  const std::string asked = ReadFile(requests);
  const std::size_t with = asked.find(" java=0\n");
  ASSERT_NE(with, std::string::npos) << asked;
  const std::size_t again = asked.find("sampling on ", with);
  ASSERT_NE(again, std::string::npos) << asked;
  const std::string line = asked.substr(again, asked.find('\n', again) - again);
  EXPECT_EQ(line.find("java="), std::string::npos) << asked;
  EXPECT_NE(line.find("max_rate="), std::string::npos) << asked;
}

INSTANTIATE_TEST_SUITE_P(Jdks, JavaFramesTest, ::testing::ValuesIn(FindJdkHomes()),
                         [](const ::testing::TestParamInfo<std::string>& home) {
                           return JdkTestName(home.param);
                         });

}  // namespace
}  // namespace memtrimd::testing

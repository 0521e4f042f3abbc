// JVM native memory, scenario by scenario, on every JDK under /usr/lib/jvm,
// with the preload agent and without it. Each scenario is a real JVM running
// tests/workloads/NativeScenario.java, which sets up one production-incident
// shape (cached temporary buffers, direct buffers near the limit, a mapped
// file, FFM memory, malloc from a JNI library, a committed but untouched
// heap, direct buffer churn) and prints its own ground truth: the
// BufferPoolMXBean figures and what it deliberately holds. `memtrimd
// inspect --json` must agree with that truth (within 5 % or 4 MiB), its RSS
// account must add up exactly, and every risk flag must be as expected.
//
// Then: right after a trim, /report never shows a malloc estimate read
// before the trim as current.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "tests/integration/harness.h"
#include "tests/integration/json_value.h"
#include "tests/integration/web_fixtures.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMiB = int64_t{1} << 20;

// "Within 5 % or 4 MiB" of the truth.
bool Near(double actual, double truth) {
  return std::fabs(actual - truth) <= std::max(0.05 * std::fabs(truth), 4.0 * kMiB);
}

using Truth = std::map<std::string, std::string>;

Truth ParseTruth(const std::string& text) {
  Truth t;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::size_t eq = line.find('=');
    if (eq != std::string::npos) t[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return t;
}

int64_t TruthInt(const Truth& t, const std::string& key) {
  auto it = t.find(key);
  return it == t.end() || it->second.empty() ? -1 : std::stoll(it->second);
}

std::string TruthText(const Truth& t) {
  std::string out;
  for (const auto& [k, v] : t) out += "  " + k + "=" + v + "\n";
  return out;
}

// One scenario of the matrix: NativeScenario's --scenario, its JVM flags
// (besides NMT, which every run has) and arguments.
struct Spec {
  std::string name;
  std::string scenario;
  std::vector<std::string> flags;
  std::vector<std::string> args;
  int min_feature = 17;
  int64_t held = 0;  // bytes it deliberately holds (its kind depends on the scenario)
};

// Sizes are modest (the whole matrix runs at once on a small machine) but
// well above the 4 MiB tolerance.
std::vector<Spec> Matrix(int feature, const std::string& dir) {
  const std::string limit = "-XX:MaxDirectMemorySize=64m";
  std::vector<Spec> all = {
      {"baseline", "baseline", {}, {}, 17, 0},
      // 8 threads x 6 MiB of cached temporary buffers.
      {"readall", "readall", {}, {"--threads", "8", "--mib", "6", "--dir", dir}, 17, 48 * kMiB},
      // The same cache under a 64 MiB direct limit: 75 % of it on JDK 17-23.
      {"readall_limited",
       "readall",
       {limit},
       {"--threads", "8", "--mib", "6", "--dir", dir},
       17,
       48 * kMiB},
      {"readall_bounded",
       "readall",
       {"-Djdk.nio.maxCachedBufferSize=262144"},
       {"--threads", "8", "--mib", "6", "--dir", dir},
       17,
       0},
      // 60 of 64 MiB: more than 90 % of the limit.
      {"direct_high", "direct", {limit}, {"--buffers", "6", "--mib", "60"}, 17, 60 * kMiB},
      {"direct_low", "direct", {limit}, {"--buffers", "4", "--mib", "16"}, 17, 16 * kMiB},
      {"mapped", "mapped", {}, {"--mib", "128", "--dir", dir}, 17, 128 * kMiB},
      // More FFM memory than the direct memory limit: none of it counts.
      {"ffm", "ffm", {limit}, {"--mib", "100"}, 22, 100 * kMiB},
      {"outside", "outside", {}, {"--mib", "64", "--jni-lib", SCENARIO_JNI_LIB}, 17, 64 * kMiB},
      {"untouched_heap", "untouched_heap", {"-Xms1g", "-Xmx1g"}, {}, 17, 0},
      // 2 threads dropping 4 MiB buffers every 10 ms: ~10 System.gc() a
      // second from Bits.reserveMemory, and never an OutOfMemoryError.
      {"churn", "churn", {limit}, {"--threads", "2", "--mib", "4", "--pause-ms", "10"}, 17, 0},
  };
  std::vector<Spec> out;
  for (Spec& s : all) {
    if (feature >= s.min_feature) out.push_back(std::move(s));
  }
  return out;
}

// A started scenario and what the test read of it.
struct ScenarioRun {
  Spec spec;
  std::string ready;
  Process jvm;
  int asks = 0;
  Truth truth;  // asked for right after memtrimd's read
  Truth truth_before;
  std::string json_text;
  std::optional<JsonValue> json;
  // The Java heap's address range (GC.heap_info) and the resident bytes of
  // the anonymous mappings inside it, read by the test right after memtrimd.
  uint64_t heap_start = 0, heap_end = 0;
  uint64_t heap_resident = 0;
  std::string heap_info;

  std::string Context() const {
    return "\nscenario " + spec.name + "\nmemtrimd inspect --json:\n" + json_text +
           "\ntruth (after memtrimd's read):\n" + TruthText(truth) + "truth (before it):\n" +
           TruthText(truth_before) + "GC.heap_info:\n" + heap_info;
  }
};

std::optional<int64_t> IntAt(const JsonValue* root, std::initializer_list<std::string_view> path) {
  if (root == nullptr) return std::nullopt;
  const JsonValue* v = root->Path(path);
  return v == nullptr ? std::nullopt : v->Int();
}

// Sizes as inspect prints them ("48.0 MiB", "512 B"), in order: each as
// {bytes, bytes of its unit}.
std::vector<std::pair<double, double>> QuotedSizes(const std::string& text) {
  std::vector<std::pair<double, double>> out;
  std::regex size(R"(([0-9]+(\.[0-9]+)?) ?(B|KiB|MiB|GiB)\b)");
  for (std::sregex_iterator it(text.begin(), text.end(), size), end; it != end; ++it) {
    const std::string unit = (*it)[3];
    double scale = unit == "GiB" ? 1 << 30 : unit == "MiB" ? 1 << 20 : unit == "KiB" ? 1 << 10 : 1;
    out.emplace_back(std::stod((*it)[1]) * scale, scale);
  }
  return out;
}

std::optional<double> FirstQuotedSize(const std::string& text) {
  std::vector<std::pair<double, double>> all = QuotedSizes(text);
  return all.empty() ? std::nullopt : std::optional<double>(all.front().first);
}

struct MatrixParam {
  std::string home;
  int feature = 0;
  bool agent = false;
  std::string name;
};

void PrintTo(const MatrixParam& p, std::ostream* os) {
  *os << p.home << (p.agent ? " with" : " without") << " the agent";
}

std::vector<MatrixParam> MatrixParams() {
  std::vector<MatrixParam> out;
  for (const std::string& home : FindJdkHomes()) {
    for (bool agent : {true, false}) {
      out.push_back(
          {home, JdkFeature(home), agent, JdkTestName(home) + (agent ? "_agent" : "_no_agent")});
    }
  }
  return out;
}

class JvmScenarioTest : public ::testing::TestWithParam<MatrixParam> {
 protected:
  // Starts every scenario at once (they idle once set up) and waits for all.
  void StartAll() {
    const MatrixParam& p = GetParam();
    for (Spec& spec : Matrix(p.feature, dir_.path())) {
      ScenarioRun r;
      r.spec = std::move(spec);
      r.ready = dir_ / (r.spec.name + ".ready");
      std::vector<std::string> argv = {p.home + "/bin/java", "-XX:NativeMemoryTracking=summary"};
      argv.insert(argv.end(), r.spec.flags.begin(), r.spec.flags.end());
      argv.insert(argv.end(), {"-cp", JAVA_WORKLOADS_CLASSPATH, "NativeScenario", "--scenario",
                               r.spec.scenario, "--ready-file", r.ready});
      argv.insert(argv.end(), r.spec.args.begin(), r.spec.args.end());
      SpawnOptions o;
      o.stderr_path = dir_ / (r.spec.name + ".stderr");
      if (p.agent) o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
      r.jvm = Process(argv, o);
      runs_.push_back(std::move(r));
    }
    for (ScenarioRun& r : runs_) {
      bool ready =
          WaitFor([&] { return fs::exists(r.ready) || !r.jvm.running(); }, 90s) && r.jvm.running();
      ASSERT_TRUE(ready) << r.spec.name
                         << " did not start: " << ReadFile(dir_ / (r.spec.name + ".stderr"));
    }
  }

  // Asks the workload for its truth now and waits for the answer.
  Truth AskTruth(ScenarioRun& r) {
    const std::string n = std::to_string(++r.asks);
    WriteFile(r.ready + ".ask.tmp", n);
    fs::rename(r.ready + ".ask.tmp", r.ready + ".ask");
    Truth t;
    bool ok = WaitFor(
        [&] {
          t = ParseTruth(ReadFile(r.ready + ".truth"));
          return t["request"] == n;
        },
        20s);
    EXPECT_TRUE(ok) << r.spec.name << " did not answer request " << n;
    return t;
  }

  // The Java heap's range from the JVM's own GC.heap_info: the lowest and
  // highest address in its bracketed ranges (G1 prints [start, end); the
  // generational collectors print [start, committed end, reserved end) per
  // generation).
  void ReadHeapRange(ScenarioRun& r) {
    RunResult hi =
        RunCommand({MemtrimdBin(), "jcmd", "--pid", std::to_string(r.jvm.pid()), "GC.heap_info"});
    r.heap_info = hi.out;
    r.heap_start = r.heap_end = 0;
    std::regex addr("0x[0-9a-f]+");
    std::istringstream in(hi.out);
    std::string line;
    while (std::getline(in, line)) {
      if (line.find('[') == std::string::npos) continue;
      for (std::sregex_iterator it(line.begin(), line.end(), addr), end; it != end; ++it) {
        uint64_t a = std::stoull(it->str(), nullptr, 16);
        if (r.heap_start == 0 || a < r.heap_start) r.heap_start = a;
        r.heap_end = std::max(r.heap_end, a);
      }
    }
  }

  void HeapResident(ScenarioRun& r) {
    r.heap_resident = 0;
    for (const RawMapping& m : ReadSmapsIndependently(r.jvm.pid())) {
      if (m.inode == 0 && m.path.empty() && m.start >= r.heap_start && m.end <= r.heap_end) {
        r.heap_resident += m.rss_kb * 1024;
      }
    }
  }

  void Inspect(ScenarioRun& r) {
    ReadHeapRange(r);
    r.truth_before = AskTruth(r);
    RunResult res =
        RunCommand({MemtrimdBin(), "inspect", "--pid", std::to_string(r.jvm.pid()), "--json"});
    HeapResident(r);
    r.truth = AskTruth(r);
    r.json_text = res.out + res.err;
    EXPECT_EQ(res.exit_code, 0) << r.Context();
    r.json = ParseJson(res.out);
    EXPECT_TRUE(r.json.has_value()) << "not JSON" << r.Context();
  }

  ScenarioRun* Find(const std::string& name) {
    for (ScenarioRun& r : runs_) {
      if (r.spec.name == name) return &r;
    }
    return nullptr;
  }

  void CheckAccount(const ScenarioRun& r);
  void CheckRisks(const ScenarioRun& r);
  void CheckJvmFigures(const ScenarioRun& r);
  void CheckAgainstBaseline(const ScenarioRun& r, const ScenarioRun& base);

  TempDir dir_;
  std::vector<ScenarioRun> runs_;
};

// The parts add up exactly to the RSS of the same smaps read, none is
// negative, and the NMT-known parts add up to their total.
void JvmScenarioTest::CheckAccount(const ScenarioRun& r) {
  const MatrixParam& p = GetParam();
  const JsonValue* a = r.json->Get("rss_account");
  ASSERT_NE(a, nullptr) << "no rss_account" << r.Context();
  std::optional<int64_t> rss = IntAt(a, {"rss_bytes"}), file = IntAt(a, {"file_bytes"}),
                         heap = IntAt(a, {"java_heap_bytes"}), nmt = IntAt(a, {"nmt_known_bytes"}),
                         glibc_free = IntAt(a, {"glibc_free_bytes"}),
                         outside = IntAt(a, {"outside_nmt_bytes"});
  ASSERT_TRUE(rss && file && outside) << r.Context();
  // A read whose RSS moved too far from the smaps read's is left out of the
  // account and named (one moment per figure). Only the churn moves its RSS
  // that fast; an idle scenario's reads are always in step.
  auto left_out = [&](const std::string& what) {
    const JsonValue* l = a->Get("left_out");
    if (l == nullptr) return false;
    for (const JsonValue& e : l->items) {
      const JsonValue* read = e.Get("read");
      if (read != nullptr && read->text == what) return true;
    }
    return false;
  };
  const bool nmt_left_out = left_out("NMT"), malloc_left_out = left_out("malloc statistics");
  if (nmt_left_out || malloc_left_out) {
    EXPECT_EQ(r.spec.scenario, "churn") << "an idle target's reads left out" << r.Context();
    const JsonValue* in_step = a->Get("parts_in_step");
    EXPECT_TRUE(in_step != nullptr && !in_step->boolean) << r.Context();
  }
  EXPECT_TRUE(heap.has_value()) << "the heap range is known (attach works)" << r.Context();
  EXPECT_EQ(nmt.has_value(), !nmt_left_out) << "NMT is on" << r.Context();
  for (const auto& part : {rss, file, heap, nmt, glibc_free, outside}) {
    if (part) {
      EXPECT_GE(*part, 0) << r.Context();
    }
  }
  EXPECT_EQ(*file + heap.value_or(0) + nmt.value_or(0) + glibc_free.value_or(0) + *outside, *rss)
      << "the account does not add up" << r.Context();
  // Malloc statistics come from System.native_heap_info on 21+, and from
  // the agent on any JDK; without them, outside NMT includes glibc's free
  // memory and says it is a bound.
  const bool malloc_known = (p.agent || p.feature >= 21) && !malloc_left_out;
  EXPECT_EQ(glibc_free.has_value(), malloc_known) << r.Context();
  const JsonValue* bound = a->Get("outside_nmt_is_estimate");
  ASSERT_NE(bound, nullptr) << r.Context();
  EXPECT_EQ(bound->boolean, !malloc_known) << r.Context();
  // The equation quotes the same figures, in order: RSS, then each part.
  const JsonValue* eq = a->Get("equation");
  ASSERT_TRUE(eq != nullptr && !eq->text.empty()) << r.Context();
  std::vector<int64_t> figures = {*rss, *file};
  for (const auto& part : {heap, nmt, glibc_free}) {
    if (part) figures.push_back(*part);
  }
  figures.push_back(*outside);
  std::vector<std::pair<double, double>> quoted = QuotedSizes(eq->text);
  ASSERT_EQ(quoted.size(), figures.size()) << eq->text << r.Context();
  for (std::size_t i = 0; i < figures.size(); ++i) {
    // Printed with one decimal: within one unit of its last digit.
    EXPECT_LE(std::fabs(quoted[i].first - static_cast<double>(figures[i])),
              0.1 * quoted[i].second + 1)
        << "figure " << i << " of \"" << eq->text << "\" is not " << figures[i] << r.Context();
  }
  if (nmt) {
    int64_t sum = 0;
    for (const char* k : {"buffers_bytes", "metaspace_bytes", "code_bytes", "threads_bytes",
                          "gc_bytes", "jvm_other_bytes"}) {
      std::optional<int64_t> v = IntAt(a, {"nmt_known", k});
      EXPECT_TRUE(v.has_value()) << "nmt_known." << k << r.Context();
      if (v) {
        EXPECT_GE(*v, 0) << k << r.Context();
        sum += *v;
      }
    }
    EXPECT_EQ(sum, *nmt) << "the NMT-known parts do not add up" << r.Context();
  }
  // The touched Java heap, against the test's own smaps read of the range
  // GC.heap_info gives (the scenario idles, so the two reads agree).
  if (heap && r.spec.scenario != "churn") {
    EXPECT_TRUE(Near(static_cast<double>(*heap), static_cast<double>(r.heap_resident)))
        << "java_heap_bytes " << *heap << ", the test's smaps sum over [" << std::hex
        << r.heap_start << ", " << r.heap_end << std::dec << "): " << r.heap_resident
        << r.Context();
  }
  if (r.spec.scenario == "mapped") {
    EXPECT_GE(*file, r.spec.held) << "the mapped file's pages are file-backed" << r.Context();
  }
}

void JvmScenarioTest::CheckRisks(const ScenarioRun& r) {
  const MatrixParam& p = GetParam();
  const JsonValue* risks = r.json->Path({"jvm", "risks"});
  ASSERT_NE(risks, nullptr) << r.Context();
  std::map<std::string, const JsonValue*> by_check;
  for (const JsonValue& risk : risks->items) {
    const JsonValue* check = risk.Get("check");
    if (check != nullptr) by_check[check->text] = &risk;
  }
  auto at_risk = [&](const std::string& check) -> std::optional<bool> {
    auto it = by_check.find(check);
    if (it == by_check.end()) return std::nullopt;
    const JsonValue* v = it->second->Get("at_risk");
    return v == nullptr ? std::nullopt : std::optional<bool>(v->boolean);
  };
  auto explanation = [&](const std::string& check) -> std::string {
    auto it = by_check.find(check);
    const JsonValue* v = it == by_check.end() ? nullptr : it->second->Get("explanation");
    return v == nullptr ? "" : v->text;
  };
  const std::string& s = r.spec.name;

  // Settings are advice, never risks.
  EXPECT_EQ(at_risk("nmt_off"), std::nullopt) << r.Context();
  EXPECT_EQ(at_risk("jvm_trims_itself"), std::nullopt) << r.Context();

  // Unset jdk.nio.maxCachedBufferSize is advice on every JVM; the risk is
  // the cache the workload holds (its truth) taking a quarter of the direct
  // limit on JDK 17-23 or a tenth of the container's limit. Without the
  // agent the cache is bounded from above only: never a risk then, and "no
  // risk" where even the bound is small (the baseline).
  const bool bounded = s == "readall_bounded";
  std::set<std::string> advice;
  if (const JsonValue* list = r.json->Path({"jvm", "advice"})) {
    for (const JsonValue& a : list->items) {
      if (const JsonValue* check = a.Get("check")) advice.insert(check->text);
    }
  }
  EXPECT_EQ(advice.count("nio_cache_unbounded"), bounded ? 0u : 1u) << r.Context();
  const double cache_truth =
      r.spec.scenario == "readall" && !bounded ? static_cast<double>(r.spec.held) : 0.0;
  const double direct_limit =
      static_cast<double>(IntAt(&*r.json, {"jvm", "direct_memory_limit_bytes"}).value_or(0));
  const double container_limit =
      static_cast<double>(IntAt(&*r.json, {"cgroup", "limit_bytes"}).value_or(0));
  const bool threat = (p.feature < 24 && direct_limit > 0 && cache_truth >= 0.25 * direct_limit) ||
                      (container_limit > 0 && cache_truth >= 0.10 * container_limit);
  if (bounded) {
    EXPECT_EQ(at_risk("nio_cache_unbounded"), std::optional<bool>(false)) << r.Context();
  } else if (p.agent) {
    EXPECT_EQ(at_risk("nio_cache_unbounded"), std::optional<bool>(threat)) << r.Context();
  } else {
    EXPECT_NE(at_risk("nio_cache_unbounded"), std::optional<bool>(true)) << r.Context();
    if (s == "baseline") {
      EXPECT_EQ(at_risk("nio_cache_unbounded"), std::optional<bool>(false)) << r.Context();
    }
  }
  if (s == "readall_limited" && p.agent && p.feature < 24) {
    EXPECT_TRUE(threat) << "48 of 64 MiB" << r.Context();
  }
  // With the agent the cache is measured; without it memtrimd may estimate
  // it (then the figure must be right) or say it does not know.
  std::optional<double> quoted = FirstQuotedSize(explanation("nio_cache_unbounded"));
  if (s == "readall" && (p.agent || quoted)) {
    ASSERT_TRUE(quoted.has_value()) << "no size quoted" << r.Context();
    EXPECT_TRUE(Near(*quoted, static_cast<double>(r.spec.held)))
        << "quoted " << *quoted << ", cached " << r.spec.held << r.Context();
  }

  // Decided from the direct pool with the agent; without it only when NMT
  // Other (an upper bound of the pool) is below 90 % of the limit, else left
  // out (undecided). True only where the pool really is above 90 %.
  std::optional<bool> high = at_risk("direct_memory_high");
  if (p.agent) {
    if (s == "churn") {
      EXPECT_NE(high, std::optional<bool>(true))
          << "churn the GC keeps under the limit is not a full pool" << r.Context();
    } else {
      EXPECT_EQ(high, std::optional<bool>(s == "direct_high")) << r.Context();
    }
  } else {
    // (A missing NMT Other is reported by CheckJvmFigures; here it is 0.)
    const int64_t other = IntAt(&*r.json, {"jvm", "nmt_other_bytes"}).value_or(0);
    std::optional<int64_t> limit = IntAt(&*r.json, {"jvm", "direct_memory_limit_bytes"});
    ASSERT_TRUE(limit) << r.Context();
    if (s == "churn") {
      EXPECT_NE(high, std::optional<bool>(true)) << r.Context();
    } else if (static_cast<double>(other) < 0.9 * static_cast<double>(*limit)) {
      EXPECT_EQ(high, std::optional<bool>(false)) << "decidable without the pool" << r.Context();
    } else {
      EXPECT_EQ(high, std::nullopt) << "undecidable without the pool" << r.Context();
    }
  }

  // The GC storm needs only hsperfdata.
  std::optional<bool> storm = at_risk("direct_buffer_gc_storm");
  if (s == "churn") {
    EXPECT_EQ(storm, std::optional<bool>(true)) << r.Context();
  } else {
    EXPECT_NE(storm, std::optional<bool>(true)) << r.Context();
  }
}

void JvmScenarioTest::CheckJvmFigures(const ScenarioRun& r) {
  const MatrixParam& p = GetParam();
  const JsonValue* jvm = r.json->Get("jvm");
  ASSERT_NE(jvm, nullptr) << r.Context();
  const Truth& t = r.truth;
  const bool idle = r.spec.scenario != "churn";

  const JsonValue* pools = jvm->Get("buffer_pools");
  if (p.agent) {
    ASSERT_NE(pools, nullptr) << "the agent reads the buffer pools" << r.Context();
    for (const std::string pool : {"direct", "mapped"}) {
      std::optional<int64_t> count = IntAt(pools, {pool, "count"}),
                             capacity = IntAt(pools, {pool, "total_capacity_bytes"}),
                             used = IntAt(pools, {pool, "memory_used_bytes"});
      ASSERT_TRUE(count && capacity && used) << pool << r.Context();
      if (!idle) continue;
      const std::string k = "pool." + pool;
      EXPECT_EQ(*count, TruthInt(t, k + ".count")) << pool << r.Context();
      EXPECT_TRUE(Near(static_cast<double>(*capacity),
                       static_cast<double>(TruthInt(t, k + ".total_capacity"))))
          << pool << r.Context();
      EXPECT_TRUE(
          Near(static_cast<double>(*used), static_cast<double>(TruthInt(t, k + ".memory_used"))))
          << pool << r.Context();
    }
    std::optional<int64_t> direct = IntAt(jvm, {"direct_memory_bytes"});
    ASSERT_TRUE(direct.has_value()) << "the direct pool is what counts" << r.Context();
    if (idle) {
      EXPECT_TRUE(Near(static_cast<double>(*direct),
                       static_cast<double>(TruthInt(t, "pool.direct.memory_used"))))
          << r.Context();
    }
  } else {
    EXPECT_EQ(pools, nullptr) << r.Context();
    const JsonValue* why = jvm->Get("buffer_pools_missing");
    EXPECT_TRUE(why != nullptr && !why->text.empty())
        << "say why the pools are absent" << r.Context();
    EXPECT_EQ(jvm->Get("direct_memory_bytes"), nullptr)
        << "NMT Other is not direct memory" << r.Context();
  }

  // The limit: MaxDirectMemorySize, else what the JVM uses when it is unset
  // (Runtime.maxMemory()).
  std::optional<int64_t> limit = IntAt(jvm, {"direct_memory_limit_bytes"});
  ASSERT_TRUE(limit.has_value()) << r.Context();
  bool limited = std::find(r.spec.flags.begin(), r.spec.flags.end(),
                           "-XX:MaxDirectMemorySize=64m") != r.spec.flags.end();
  EXPECT_TRUE(Near(static_cast<double>(*limit),
                   limited ? 64.0 * kMiB : static_cast<double>(TruthInt(t, "runtime.max_memory"))))
      << r.Context();

  EXPECT_TRUE(IntAt(jvm, {"nmt_other_bytes"}).has_value())
      << "NMT is on: its Other category is known, 0 when NMT lists none" << r.Context();

  // The temporary buffer cache, from the agent's walk of the threads.
  std::optional<int64_t> cache = IntAt(jvm, {"temp_buffer_cache_bytes"});
  const JsonValue* source = jvm->Get("temp_buffer_cache_source");
  if (p.agent && r.spec.scenario == "readall") {
    ASSERT_TRUE(cache.has_value()) << r.Context();
    EXPECT_EQ(source == nullptr ? "" : source->text, "agent") << r.Context();
    EXPECT_TRUE(Near(static_cast<double>(*cache), static_cast<double>(r.spec.held)))
        << "cache " << *cache << ", the threads cached " << r.spec.held << r.Context();
  }
  if (!p.agent && cache) {
    EXPECT_EQ(source == nullptr ? "" : source->text, "estimate") << r.Context();
  }

  if (r.spec.scenario == "churn") {
    EXPECT_EQ(TruthInt(t, "churn.oom_errors"), 0) << r.Context();
    EXPECT_GT(TruthInt(t, "churn.allocations"), 0) << r.Context();
  }

  // GC counters from hsperfdata against the JVM's own GarbageCollectorMXBean:
  // G1's young and mixed pauses are "G1 young collection pauses" there and
  // "G1 Young Generation" here. Compared when no collection ran between the
  // truth before memtrimd's read and the one after it.
  const std::string young = "gc.G1 Young Generation.count";
  if (TruthInt(r.truth_before, young) >= 0 &&
      TruthInt(r.truth_before, young) == TruthInt(t, young)) {
    const JsonValue* collectors = jvm->Path({"gc", "collectors"});
    ASSERT_NE(collectors, nullptr) << "GC counters from hsperfdata" << r.Context();
    std::optional<int64_t> counted;
    for (const JsonValue& c : collectors->items) {
      const JsonValue* name = c.Get("name");
      if (name != nullptr && name->text == "G1 young collection pauses") {
        counted = IntAt(&c, {"collections"});
      }
    }
    ASSERT_TRUE(counted.has_value()) << "no G1 young collector" << r.Context();
    EXPECT_EQ(*counted, TruthInt(t, young)) << r.Context();
  }
}

// What a scenario holds shows where it belongs: against the baseline JVM
// (same JDK, same agent), NMT Other grows by the direct buffers, the cached
// temporary buffers and FFM memory, and "outside NMT" grows by the JNI
// library's mallocs and by nothing else.
void JvmScenarioTest::CheckAgainstBaseline(const ScenarioRun& r, const ScenarioRun& base) {
  if (r.spec.scenario == "churn" || &r == &base) return;
  auto outside = [](const ScenarioRun& x) {
    return IntAt(&*x.json, {"rss_account", "outside_nmt_bytes"});
  };
  auto other = [](const ScenarioRun& x) { return IntAt(&*x.json, {"jvm", "nmt_other_bytes"}); };
  // A missing NMT Other is reported once, by CheckJvmFigures; here it is 0.
  std::optional<int64_t> o = outside(r), ob = outside(base);
  const int64_t n = other(r).value_or(0), nb = other(base).value_or(0);
  ASSERT_TRUE(o && ob) << r.Context() << "\nbaseline:" << base.Context();
  const std::string& s = r.spec.name;
  const double held = static_cast<double>(r.spec.held);
  const double outside_growth = static_cast<double>(*o - *ob);
  const double other_growth = static_cast<double>(n - nb);
  // Without malloc statistics, outside NMT includes glibc's free memory;
  // the bounded cache's reads malloc and free a buffer each, which glibc
  // keeps: there the figure is larger by design.
  const JsonValue* bound = r.json->Path({"rss_account", "outside_nmt_is_estimate"});
  const bool free_included = bound != nullptr && bound->boolean;
  // Where it includes glibc's free memory, that differs by a few MiB between
  // JVMs that did the same (4.1 MiB between the untouched-heap JVM and the
  // baseline in one run): the figure is held to 8 MiB, still far below what
  // a misplaced scenario would move it (60 MiB and more).
  const double expected = s == "outside" ? held : 0.0;
  const double slack = std::max(0.05 * expected, (free_included ? 8.0 : 4.0) * kMiB);
  if (!(free_included && s == "readall_bounded")) {
    EXPECT_LE(std::fabs(outside_growth - expected), slack)
        << "outside NMT " << *o << ", baseline's " << *ob << r.Context()
        << "\nbaseline:" << base.Context();
  }
  const bool in_other = s == "readall" || s == "readall_limited" || s == "direct_high" ||
                        s == "direct_low" || s == "ffm";
  EXPECT_TRUE(Near(other_growth, in_other ? held : 0.0))
      << "NMT Other " << n << ", baseline's " << nb << r.Context();
}

TEST_P(JvmScenarioTest, FiguresMatchTheTruthOfEachScenario) {
  const MatrixParam& p = GetParam();
  if (!fs::exists(p.home + "/bin/java")) GTEST_SKIP() << "no JDK at " << p.home;
  ASSERT_NO_FATAL_FAILURE(StartAll());
  // churn last: it has run longest by then (its GC rate is established).
  std::stable_partition(runs_.begin(), runs_.end(),
                        [](const ScenarioRun& r) { return r.spec.scenario != "churn"; });
  for (ScenarioRun& r : runs_) {
    SCOPED_TRACE(r.spec.name);
    Inspect(r);
  }
  ScenarioRun* base = Find("baseline");
  ASSERT_NE(base, nullptr);
  for (ScenarioRun& r : runs_) {
    SCOPED_TRACE(r.spec.name);
    if (!r.json) continue;
    // The truth itself: idle scenarios do not move while memtrimd reads.
    if (r.spec.scenario != "churn") {
      for (const std::string pool : {"direct", "mapped"}) {
        EXPECT_EQ(r.truth_before["pool." + pool + ".memory_used"],
                  r.truth["pool." + pool + ".memory_used"])
            << r.Context();
      }
    }
    CheckAccount(r);
    CheckRisks(r);
    CheckJvmFigures(r);
    if (base->json) CheckAgainstBaseline(r, *base);
  }
  // Churn moves: the pool touches the limit now and then while the GC keeps
  // it under. One look may miss a flapping flag; a few more looks each must
  // get the risks right too.
  for (ScenarioRun& r : runs_) {
    if (r.spec.scenario != "churn") continue;
    for (int look = 2; look <= 8; ++look) {
      SCOPED_TRACE(r.spec.name + ", look " + std::to_string(look));
      Inspect(r);
      if (r.json) CheckRisks(r);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Jdks, JvmScenarioTest, ::testing::ValuesIn(MatrixParams()),
                         [](const ::testing::TestParamInfo<MatrixParam>& i) {
                           return i.param.name;
                         });

// Right after a trim, the malloc estimate in /report was either read after
// the trim started or is marked stale; and memtrimd re-reads it soon.
class TrimThenInspectTest : public ::testing::Test {
 protected:
  // /report?format=json's one target.
  std::optional<JsonValue> Target(const Memtrimd& m) {
    HttpResponse r = Curl(m.url("/report?format=json"), {"-u", "alice:secret"});
    std::optional<JsonValue> report = ParseJson(r.body);
    last_report_ = r.body;
    if (!report) return std::nullopt;
    const JsonValue* targets = report->Get("targets");
    if (targets == nullptr || targets->items.empty()) return std::nullopt;
    return targets->items.front();
  }

  // `idle`: the program changes nothing meanwhile, so the re-read estimate
  // must be below the one before the trim.
  void TrimThenLook(pid_t pid, bool idle) {
    TempDir web;
    Memtrimd m({"--target.pid=" + std::to_string(pid), "--web.enable-trim-api",
                "--web.config.file=" + WriteBasicAuthConfig(web), "--sample.interval=200ms",
                "--smaps.interval=300ms", "--jvm.interval=300ms", "--trim.interval=0"});
    ASSERT_TRUE(m.started()) << m.log();
    // An estimate to go stale.
    double estimate_before = 0;
    ASSERT_TRUE(WaitFor(
        [&] {
          std::optional<JsonValue> t = Target(m);
          const JsonValue* e = t ? t->Path({"malloc", "trimmable_estimate_bytes"}) : nullptr;
          if (e == nullptr) return false;
          estimate_before = e->Number();
          return true;
        },
        60s))
        << "no malloc estimate: " << last_report_ << m.log();
    HttpResponse trim = Curl(m.url("/api/v1/trim"), {"-X", "POST", "-u", "alice:secret"});
    ASSERT_EQ(trim.status, 200) << trim.body;
    std::optional<JsonValue> result = ParseJson(trim.body);
    ASSERT_TRUE(result && result->Get("success") && result->Get("success")->boolean) << trim.body;
    ASSERT_NE(result->Get("at_unix_seconds"), nullptr) << trim.body;
    const double trim_at = result->Get("at_unix_seconds")->Number();

    // From the first look on: never an estimate older than the trim shown
    // as current; and soon one read after it.
    int looks = 0;
    std::string violation;
    JsonValue fresh;
    bool refreshed = WaitFor(
        [&] {
          std::optional<JsonValue> t = Target(m);
          const JsonValue* malloc = t ? t->Get("malloc") : nullptr;
          if (malloc == nullptr) return false;
          ++looks;
          const JsonValue* read_at = malloc->Get("read_at_unix_seconds");
          const JsonValue* stale = malloc->Get("stale");
          if (read_at == nullptr || stale == nullptr) {
            violation = "no read_at_unix_seconds or stale: " + last_report_;
            return true;
          }
          const bool before_trim = read_at->Number() < trim_at;
          if (before_trim && !stale->boolean) {
            violation = "read before the trim, not marked stale: " + last_report_;
            return true;
          }
          fresh = *malloc;
          return !before_trim && !stale->boolean;
        },
        30s);
    EXPECT_TRUE(violation.empty()) << violation << "\ntrim: " << trim.body;
    ASSERT_TRUE(refreshed) << "no estimate read after the trim in 30 s: " << last_report_
                           << "\ntrim: " << trim.body;
    EXPECT_GE(looks, 1);
    if (!idle) return;
    // What the trim gave back is no longer in the re-read estimate.
    const JsonValue* after = fresh.Get("trimmable_estimate_bytes");
    ASSERT_NE(after, nullptr) << last_report_;
    EXPECT_LT(after->Number(), estimate_before)
        << "estimate " << estimate_before << " before the trim, " << after->Number()
        << " after; trim: " << trim.body;
  }

  TempDir dir_;
  std::string last_report_;
};

TEST_F(TrimThenInspectTest, GlibcProgramWithTheAgent) {
  SpawnOptions o;
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Process frag =
      StartFragmenter(dir_, {"--threads", "4", "--rounds", "1", "--burst-mib", "16"}, "", o);
  ASSERT_TRUE(frag.running());
  TrimThenLook(frag.pid(), true);
}

// Malloc statistics of a JVM: System.native_heap_info on 21+, the agent on
// any JDK (so it is preloaded here). NativeChurn keeps churning, so its
// estimate moves for reasons of its own: only staleness is checked.
TEST_F(TrimThenInspectTest, JvmOnEveryJdk) {
  for (const std::string& home : FindJdkHomes()) {
    SCOPED_TRACE(home);
    SpawnOptions o;
    o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
    Process jvm = StartJvm(dir_, {}, "NativeChurn", {"--threads", "12", "--quiet"}, o, home);
    ASSERT_TRUE(jvm.running()) << home;
    TrimThenLook(jvm.pid(), false);
  }
}

}  // namespace
}  // namespace memtrimd::testing

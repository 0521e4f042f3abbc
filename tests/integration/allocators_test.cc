// Acceptance of every allocator a target may run on, end to end through
// memtrimd: the fragmenter preloaded with or linked against jemalloc,
// tcmalloc and mimalloc (and jemalloc linked into the executable), and on
// glibc, with the agent; a JDK's JVM on a preloaded jemalloc; a musl
// program; and a program restarted onto another allocator. memtrimd must
// name the allocator, agree with the allocator's own figures (which the
// workload writes itself, with its own reading, in --stats-file), release
// with the allocator's own call, never send System.trim_native_heap to a JVM
// whose malloc is not glibc's, and leave a musl program alone quietly.

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "collectors/agent/client/agent_client.h"
#include "collectors/procfs/target_reader.h"
#include "tests/integration/harness.h"
#include "tests/integration/json_value.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kFreeMib = 64;
// What the workload frees under mimalloc where a release must give back half
// (see OneReleaseGivesBackHalfOfWhatIsKeptFree).
constexpr uint64_t kMimallocFreeMib = 128;
// A variant missing at build time is a failure, not a skip.
constexpr const char* kInstall = " (scripts/install-deps.sh installs the allocators and musl-gcc)";

using KeyValues = std::map<std::string, std::string>;

KeyValues ReadKeyValues(const std::string& path) { return ReadKeyValueFile(path); }

std::optional<uint64_t> Num(const KeyValues& kv, const std::string& key) {
  auto it = kv.find(key);
  if (it == kv.end()) return std::nullopt;
  return std::stoull(it->second);
}

// How many series of `name` have every fragment in their labels.
std::size_t CountSeries(const Series& s, const std::string& name,
                        const std::vector<std::string>& parts = {}) {
  std::size_t n = 0;
  for (const auto& [key, value] : s) {
    if (key.substr(0, key.find('{')) != name) continue;
    bool all = true;
    for (const std::string& p : parts) all = all && key.find(p) != std::string::npos;
    n += all ? 1 : 0;
  }
  return n;
}

// The sum of the series of `name` that have every fragment in their labels.
double SumSeries(const Series& s, const std::string& name, const std::vector<std::string>& parts) {
  double sum = 0;
  for (const auto& [key, value] : s) {
    if (key.substr(0, key.find('{')) != name) continue;
    bool all = true;
    for (const std::string& p : parts) all = all && key.find(p) != std::string::npos;
    if (all) sum += value;
  }
  return sum;
}

std::string PidLabel(pid_t pid) { return "pid=\"" + std::to_string(pid) + "\""; }

std::string Str(const JsonValue* v) { return v == nullptr ? "" : v->text; }

std::optional<uint64_t> Uint(const JsonValue* v) {
  if (v == nullptr || !v->IsNumber()) return std::nullopt;
  std::optional<int64_t> i = v->Int();
  if (!i || *i < 0) return std::nullopt;
  return static_cast<uint64_t>(*i);
}

// `memtrimd <command> --pid P --json`, parsed; the raw output in `raw`.
std::optional<JsonValue> RunJson(const std::string& command, pid_t pid, std::string& raw) {
  RunResult r = RunCommand({MemtrimdBin(), command, "--pid", std::to_string(pid), "--json"});
  raw = "exit " + std::to_string(r.exit_code) + "\n" + r.out + r.err;
  if (r.exit_code != 0) return std::nullopt;
  return ParseJson(r.out);
}

// Two readings of one figure, taken moments apart while the workload is
// idle, agree within 5 %. A figure of a few pages (glibc's keepcost,
// jemalloc's muzzy, tcmalloc's thread caches) moves by more than 5 % when
// the workload writes its stats file (stdio's FILE and buffer come and go)
// or the agent answers: 1 MiB absolute covers those, and is nothing beside
// the tens of MiB every figure that matters here holds.
bool Agree(uint64_t a, uint64_t b) {
  const uint64_t diff = a > b ? a - b : b - a;
  const uint64_t larger = std::max(a, b);
  return diff <= std::max<uint64_t>(larger / 20, kMiB);
}

// The table of docs/allocators.md: the common measures from the
// allocator's own figures, under the agent's key names.
struct Measures {
  std::optional<uint64_t> allocated, held, free_kept, released;
};

Measures CommonFromOwn(const std::string& allocator, const KeyValues& kv) {
  Measures m;
  auto get = [&](const char* k) { return Num(kv, k).value_or(0); };
  if (allocator == "glibc") {
    m.allocated = get("uordblks") + get("hblkhd");
    m.held = get("arena") + get("hblkhd");
    m.free_kept = get("fordblks");
  } else if (allocator == "jemalloc") {
    m.allocated = get("allocated");
    m.held = get("resident");
    m.free_kept = get("dirty") + get("muzzy");
    m.released = get("retained");
  } else if (allocator == "tcmalloc") {
    m.allocated = get("allocated");
    m.held = get("heap_size") - get("pageheap_unmapped");
    m.free_kept = get("pageheap_free");
    m.released = get("pageheap_unmapped");
  } else if (allocator == "mimalloc") {
    m.held = get("committed");
  }
  return m;
}

struct Case {
  std::string name;       // gtest parameter name
  std::string build;      // "" for the glibc fragmenter, else FragmenterBinFor's name
  std::string preload;    // allocator whose shared object is preloaded before the agent, or ""
  std::string allocator;  // what memtrimd must say
  std::string call;       // the agent's release call under it
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class AllocatorAcceptance : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    const Case& c = GetParam();
    binary_ = c.build.empty() ? FragmenterBin() : FragmenterBinFor(c.build);
    ASSERT_FALSE(binary_.empty()) << "fragmenter_" << c.build << " was not built" << kInstall;
    if (!c.preload.empty()) {
      ASSERT_FALSE(AllocatorSo(c.preload).empty()) << c.preload << " not found" << kInstall;
    }
  }

  void TearDown() override {
    for (pid_t pid : started_) RemoveStaleAgentSocket(pid);
  }

  // The fragmenter of this case with the agent (after the allocator, when
  // one is preloaded); stdout and stderr in <dir>/<name>.out / .err.
  Process Start(const std::string& name, std::vector<std::string> args) {
    const Case& c = GetParam();
    SpawnOptions o;
    o.env.push_back("LD_PRELOAD=" + (c.preload.empty() ? "" : AllocatorSo(c.preload) + ":") +
                    AGENT_LIB);
    o.stdout_path = dir_ / (name + ".out");
    o.stderr_path = dir_ / (name + ".err");
    Process p = StartFragmenter(dir_, std::move(args), binary_, o);
    started_.push_back(p.pid());
    return p;
  }

  // With `free_mib` MiB freed but kept (--free-mib) and its figures in
  // <dir>/stats.
  Process StartWithFreeMemory(uint64_t free_mib = kFreeMib) {
    return Start("fragmenter", {"--threads", "2", "--rounds", "2", "--burst-mib", "8", "--free-mib",
                                std::to_string(free_mib), "--stats-file", Stats(), "--verify"});
  }

  std::string Stats() const { return dir_ / "stats"; }

  // Rewrites the stats file (SIGUSR1) and reads it.
  KeyValues RereadStats(pid_t pid) {
    fs::remove(Stats());
    if (kill(pid, SIGUSR1) != 0) return {};
    if (!WaitFor([&] { return fs::exists(Stats()); }, 10s)) return {};
    return ReadKeyValues(Stats());
  }

  TempDir dir_;
  std::string binary_;
  std::vector<pid_t> started_;
};

// a. memtrimd names the allocator, from the agent, and leaves glibc's arena
// figures out (with the reason) when glibc's malloc is not the one in use.
TEST_P(AllocatorAcceptance, DetectsTheAllocator) {
  const Case& c = GetParam();
  Process p = StartWithFreeMemory();
  ASSERT_TRUE(p.running()) << ReadFile(dir_ / "fragmenter.err");
  const KeyValues own = ReadKeyValues(Stats());
  ASSERT_EQ(own.at("allocator"), c.allocator) << "the workload runs on another allocator";
  const std::string object = own.at("object");

  std::string raw;
  std::optional<JsonValue> j = RunJson("inspect", p.pid(), raw);
  ASSERT_TRUE(j) << raw;
  EXPECT_EQ(Str(j->Path({"allocator", "name"})), c.allocator) << raw;
  const std::string source = Str(j->Path({"allocator", "source"}));
  EXPECT_NE(source.find("agent"), std::string::npos) << source;
  EXPECT_NE(source.find(object), std::string::npos) << source << " does not name " << object;
  EXPECT_EQ(Str(j->Path({"allocator", "object"})), object);
  const std::string not_applicable = Str(j->Path({"glibc", "not_applicable"}));
  if (c.allocator == "glibc") {
    EXPECT_EQ(j->Path({"glibc", "not_applicable"}), nullptr) << raw;
    EXPECT_GE(Uint(j->Path({"glibc", "arena_heaps"})).value_or(0), 1u) << raw;
  } else {
    EXPECT_NE(not_applicable.find(c.allocator), std::string::npos) << raw;
    EXPECT_EQ(j->Path({"glibc", "arena_heaps"}), nullptr) << raw;
  }

  Memtrimd m({"--target.pid=" + std::to_string(p.pid()), "--sample.interval=200ms",
              "--smaps.interval=200ms", "--trim.interval=0"});
  ASSERT_TRUE(m.started()) << m.log();
  const std::string pid = PidLabel(p.pid());
  const std::string alloc = "allocator=\"" + c.allocator + "\"";
  Series s;
  // Once the smaps read (glibc collector) and the agent's allocator answer
  // are both in a sample.
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return CountSeries(s, "memtrimd_smaps_age_seconds", {pid}) > 0 &&
               CountSeries(s, "memtrimd_allocator_bytes", {pid}) > 0;
      },
      30s))
      << m.log();
  EXPECT_EQ(Find(s, "memtrimd_target_info", {pid, alloc}), 1.0) << m.log();
  EXPECT_GT(CountSeries(s, "memtrimd_allocator_bytes", {pid, alloc}), 0u);
  if (c.allocator == "glibc") {
    EXPECT_GE(Find(s, "memtrimd_glibc_arena_heaps", {pid}).value_or(0), 1.0);
  } else {
    EXPECT_EQ(CountSeries(s, "memtrimd_glibc_arena_heaps", {pid}), 0u);
    EXPECT_EQ(CountSeries(s, "memtrimd_glibc_arena_heap_bytes", {pid}), 0u);
  }
  EXPECT_EQ(p.Stop(SIGTERM, 30s), 0);
}

// b. memtrimd's figures agree with the allocator's own, printed by the
// workload right after memtrimd read them (the workload is idle between).
TEST_P(AllocatorAcceptance, FiguresAgreeWithTheAllocatorsOwn) {
  const Case& c = GetParam();
  Process p = StartWithFreeMemory();
  ASSERT_TRUE(p.running()) << ReadFile(dir_ / "fragmenter.err");

  std::string raw;
  std::optional<JsonValue> j = RunJson("inspect", p.pid(), raw);
  ASSERT_TRUE(j) << raw;
  const KeyValues own = RereadStats(p.pid());
  ASSERT_EQ(own.count("allocator"), 1u) << "the stats file was not rewritten";
  const JsonValue* stats = j->Path({"allocator", "stats_bytes"});
  ASSERT_NE(stats, nullptr) << raw;

  std::size_t compared = 0;
  for (const auto& [key, text] : own) {
    if (key == "allocator" || key == "object" || key == "rss_anon") continue;
    if (key == "dirty_decay_ms" || key == "muzzy_decay_ms") {
      EXPECT_EQ(Str(j->Path({"allocator", key})), text) << key;
      continue;
    }
    std::optional<uint64_t> theirs = Uint(stats->Get(key));
    ASSERT_TRUE(theirs) << "memtrimd has no " << key << ": " << raw;
    EXPECT_TRUE(Agree(*theirs, std::stoull(text)))
        << key << ": memtrimd " << *theirs << ", the allocator " << text;
    ++compared;
  }
  EXPECT_GE(compared, 2u) << ReadFile(Stats());

  const Measures want = CommonFromOwn(c.allocator, own);
  auto check = [&](const char* field, const std::optional<uint64_t>& expected) {
    std::optional<uint64_t> got = Uint(j->Path({"allocator", field}));
    if (!expected) {
      EXPECT_FALSE(got) << field << " should be absent under " << c.allocator;
      return;
    }
    ASSERT_TRUE(got) << "no " << field << ": " << raw;
    EXPECT_TRUE(Agree(*got, *expected)) << field << ": memtrimd " << *got << ", " << *expected;
  };
  check("allocated_bytes", want.allocated);
  check("held_bytes", want.held);
  check("free_kept_bytes", want.free_kept);
  check("released_bytes", want.released);
  EXPECT_EQ(p.Stop(SIGTERM, 30s), 0);
}

// c. One release through memtrimd gives back at least half of what the
// allocator itself reports as free but kept.
//
// mimalloc 2.0.9 as packaged is built without MI_STAT: it reports no free
// figure, only what it has committed. The workload's own ground truth stands
// in: what it freed, still committed (the allocator's figure says so). The
// agent's mi_collect(true) (after mi_thread_init on its thread) gives back
// the wholly free 32 MiB segments, which mimalloc keeps in its global segment
// cache, and the free pages of threads that exited. Out of its reach: free
// pages in a segment a live thread still has a page in, which only that
// thread decommits (when it next allocates). Here those are the main
// thread's: the part of the freed memory in its first segment (beside its
// earliest live blocks) and in the segment of the last page it emptied
// (kept for reuse, "retired"): one segment's worth when the freed total is a
// multiple of 32 MiB. With 64 MiB freed that is half (measured: 32.0 MiB
// back, 32 KiB short), so under mimalloc the workload frees 128 MiB
// (measured: 96 MiB back).
TEST_P(AllocatorAcceptance, OneReleaseGivesBackHalfOfWhatIsKeptFree) {
  const Case& c = GetParam();
  const bool mimalloc = c.allocator == "mimalloc";
  const uint64_t freed = (mimalloc ? kMimallocFreeMib : kFreeMib) * kMiB;
  Process p = StartWithFreeMemory(freed / kMiB);
  ASSERT_TRUE(p.running()) << ReadFile(dir_ / "fragmenter.err");
  const KeyValues own = ReadKeyValues(Stats());
  const uint64_t kept = mimalloc ? freed : CommonFromOwn(c.allocator, own).free_kept.value();
  ASSERT_GE(kept, freed * 9 / 10) << ReadFile(Stats());
  const uint64_t committed = Num(own, "committed").value_or(0);
  if (mimalloc) {
    ASSERT_GE(committed, freed) << ReadFile(Stats());
  }

  std::string raw;
  std::optional<JsonValue> j = RunJson("trim", p.pid(), raw);
  ASSERT_TRUE(j) << raw;
  EXPECT_EQ(Str(j->Get("backend")), "agent") << raw;
  EXPECT_EQ(Str(j->Get("allocator")), c.allocator) << raw;
  EXPECT_EQ(Str(j->Get("call")), c.call) << raw;
  EXPECT_EQ(j->Get("success") != nullptr && j->Get("success")->boolean, true) << raw;
  const int64_t before = Uint(j->Get("rss_swap_before_bytes")).value_or(0);
  const int64_t after = Uint(j->Get("rss_swap_after_bytes")).value_or(0);
  const JsonValue* reclaimed = j->Get("reclaimed_rss_swap_bytes");
  ASSERT_NE(reclaimed, nullptr) << raw;
  EXPECT_EQ(reclaimed->Int(), before - after);
  if (c.allocator == "jemalloc" || c.allocator == "tcmalloc") {
    // The agent's own reading around the call says the same.
    EXPECT_TRUE(Agree(Uint(j->Get("free_kept_before_bytes")).value_or(0), kept)) << raw;
    EXPECT_LT(Uint(j->Get("free_kept_after_bytes")).value_or(kept), kept / 2) << raw;
  } else {
    EXPECT_EQ(j->Get("free_kept_before_bytes"), nullptr) << raw;
  }
  if (mimalloc) {
    // Its committed bytes around the call: what it decommitted.
    const std::optional<uint64_t> c_before = Uint(j->Get("committed_before_bytes"));
    const std::optional<uint64_t> c_after = Uint(j->Get("committed_after_bytes"));
    ASSERT_TRUE(c_before && c_after) << raw;
    EXPECT_TRUE(Agree(*c_before, committed)) << raw << "committed before: " << committed;
    EXPECT_GE(*c_before, *c_after + kept / 2) << raw;
  } else {
    EXPECT_EQ(j->Get("committed_before_bytes"), nullptr) << raw;
  }
  EXPECT_EQ(p.Stop(SIGTERM, 30s), 0);
  EXPECT_GE(before - after, static_cast<int64_t>(kept / 2)) << raw << "free kept before: " << kept;
}

// The free_kept_high finding on a real process: seen while the allocator
// keeps the 64 MiB the workload freed (no false negative), gone once a
// release gave them back (no false positive), and never made where the
// allocator reports no such figure (glibc has its own, mimalloc none). The
// RSS account's allocator_free part is the allocator's own figure.
TEST_P(AllocatorAcceptance, FreeKeptFindingComesAndGoesWithTheFreeMemory) {
  const Case& c = GetParam();
  Process p = StartWithFreeMemory();
  ASSERT_TRUE(p.running()) << ReadFile(dir_ / "fragmenter.err");
  Memtrimd m({"--target.pid=" + std::to_string(p.pid()), "--sample.interval=200ms",
              "--smaps.interval=200ms", "--trim.interval=0"});
  ASSERT_TRUE(m.started()) << m.log();
  const std::string pid = PidLabel(p.pid());
  const std::string check = "check=\"free_kept_high\"";
  Series s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return CountSeries(s, "memtrimd_allocator_bytes", {pid}) > 0 &&
               CountSeries(s, "memtrimd_rss_account_bytes", {pid}) > 0;
      },
      30s))
      << m.log();
  if (c.allocator != "jemalloc" && c.allocator != "tcmalloc") {
    EXPECT_EQ(CountSeries(s, "memtrimd_allocator_risk", {pid, check}), 0u);
    EXPECT_EQ(CountSeries(s, "memtrimd_rss_account_bytes", {pid, "part=\"allocator_free\""}), 0u);
    EXPECT_EQ(p.Stop(SIGTERM, 30s), 0);
    return;
  }
  EXPECT_EQ(Find(s, "memtrimd_allocator_risk", {pid, check}), 1.0) << m.log();
  const uint64_t kept = CommonFromOwn(c.allocator, RereadStats(p.pid())).free_kept.value_or(0);
  ASSERT_GE(kept, kFreeMib * kMiB * 9 / 10);
  const double part =
      Find(s, "memtrimd_rss_account_bytes", {pid, "part=\"allocator_free\""}).value_or(0);
  EXPECT_TRUE(Agree(static_cast<uint64_t>(part), kept)) << part << " vs " << kept;

  std::string raw;
  std::optional<JsonValue> j = RunJson("trim", p.pid(), raw);
  ASSERT_TRUE(j && j->Get("success") != nullptr && j->Get("success")->boolean) << raw;
  EXPECT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return Find(s, "memtrimd_allocator_risk", {pid, check}) == 0.0;
      },
      30s))
      << m.log();
  EXPECT_EQ(p.Stop(SIGTERM, 30s), 0);
}

// d. A thousand releases through the agent while the workload's stress
// threads malloc, fill, check and free: its checksums find no corruption.
// Under mimalloc the workload first frees 128 MiB, so that the releases have
// work: three free 32 MiB segments in mimalloc's cache, of which each stress
// thread's heap takes at most one (with 64 MiB freed they take all there
// is). The first release must give back at least half a segment of
// committed memory (measured: 32 MiB, the later ones nothing): far more than
// the stress threads' own decommits (64 chunks of at most 64 KiB each) could
// account for, and they free no segment into the cache, so nothing else
// decommits it first.
TEST_P(AllocatorAcceptance, ThousandReleasesUnderMallocStress) {
  const Case& c = GetParam();
  const bool mimalloc = c.allocator == "mimalloc";
  std::vector<std::string> args = {"--threads", "2", "--rounds", "2", "--burst-mib", "8"};
  args.insert(args.end(), {"--verify", "--stress-threads", "2", "--nice", "10"});
  if (mimalloc) args.insert(args.end(), {"--free-mib", std::to_string(kMimallocFreeMib)});
  Process p = Start("stress", args);
  ASSERT_TRUE(p.running()) << ReadFile(dir_ / "stress.err");
  Result<Target> t = procfs::ReadTarget("/proc", p.pid());
  ASSERT_TRUE(t.ok()) << t.status().message();
  int done = 0;
  for (int i = 0; i < 1000; ++i) {
    Result<agent::AgentTrim> r = agent::AgentTrimNow(*t);
    ASSERT_TRUE(r.ok()) << "release " << i << ": " << r.status().message();
    ASSERT_EQ(AllocatorName(r->allocator), c.allocator);
    ASSERT_EQ(r->call, c.call);
    ASSERT_EQ(r->committed_before.has_value(), mimalloc);
    ASSERT_EQ(r->committed_after.has_value(), mimalloc);
    if (mimalloc && i == 0) {
      EXPECT_GE(*r->committed_before, *r->committed_after + 16 * kMiB)
          << "the first release gave back less than half a segment";
    }
    ++done;
  }
  EXPECT_EQ(done, 1000);
  EXPECT_EQ(p.Stop(SIGTERM, 60s), 0) << ReadFile(dir_ / "stress.err");
  const std::string out = ReadFile(dir_ / "stress.out");
  EXPECT_EQ(out.rfind("checksum=", 0), 0u) << out;
  EXPECT_NE(out.find(" errors=0\n"), std::string::npos) << out;
}

INSTANTIATE_TEST_SUITE_P(
    Allocators, AllocatorAcceptance,
    ::testing::Values(Case{"jemalloc_preloaded", "", "jemalloc", "jemalloc", "arena.4096.purge"},
                      Case{"jemalloc_linked", "jemalloc", "", "jemalloc", "arena.4096.purge"},
                      Case{"jemalloc_static", "jemalloc_static", "", "jemalloc",
                           "arena.4096.purge"},
                      Case{"tcmalloc_preloaded", "", "tcmalloc", "tcmalloc", "ReleaseFreeMemory"},
                      Case{"tcmalloc_linked", "tcmalloc", "", "tcmalloc", "ReleaseFreeMemory"},
                      Case{"mimalloc_preloaded", "", "mimalloc", "mimalloc", "mi_collect"},
                      Case{"mimalloc_linked", "mimalloc", "", "mimalloc", "mi_collect"},
                      Case{"glibc", "", "", "glibc", "malloc_trim"}),
    [](const ::testing::TestParamInfo<Case>& p) { return p.param.name; });

// The most recent trim of /report?format=json's first target, when there
// is one that finished.
std::optional<JsonValue> LastTrim(const Memtrimd& m) {
  std::optional<JsonValue> report = ParseJson(Curl(m.url("/report?format=json")).body);
  if (!report) return std::nullopt;
  const JsonValue* recent = report->Path({"trim", "recent"});
  if (recent == nullptr || recent->items.empty()) return std::nullopt;
  return recent->items.front();
}

// A JVM on a preloaded jemalloc (the usual fix after a glibc fragmentation
// incident) is trimmed through the agent with jemalloc's purge, and never
// sent System.trim_native_heap: the JVM's own trimnative log shows every
// one it gets ("Manual Trim"), as the glibc control proves.
class JvmOnJemalloc : public ::testing::TestWithParam<std::string> {
 protected:
  void TearDown() override {
    for (pid_t pid : started_) {
      RemoveStaleAgentSocket(pid);
      RemoveStaleJvmSocket(pid);
    }
  }

  // GcLoop (idle after start) on `java_home` with `preload` in LD_PRELOAD
  // and its trimnative log in <dir>/<name>.trim.log.
  Process StartIdleJvm(const std::string& name, const std::string& preload) {
    SpawnOptions o;
    if (!preload.empty()) o.env.push_back("LD_PRELOAD=" + preload);
    o.env.push_back("MEMTRIMD_TRIM=1");
    o.stderr_path = dir_ / (name + ".err");
    Process p = StartJvm(dir_, {"-Xmx64m", "-Xlog:trimnative=info:file=" + TrimLog(name)}, "GcLoop",
                         {}, o, GetParam());
    started_.push_back(p.pid());
    return p;
  }

  std::string TrimLog(const std::string& name) const { return dir_ / (name + ".trim.log"); }

  static std::vector<std::string> DaemonFlags(pid_t pid) {
    return {"--target.pid=" + std::to_string(pid),
            "--sample.interval=200ms",
            "--smaps.interval=200ms",
            "--jvm.interval=1s",
            "--trim.interval=1s",
            "--trim.jitter=0"};
  }

  // Waits for a successful scheduled trim and returns it.
  static std::optional<JsonValue> FirstScheduledTrim(const Memtrimd& m) {
    std::optional<JsonValue> trim;
    WaitFor(
        [&] {
          trim = LastTrim(m);
          return trim && Str(trim->Get("trigger")) == "scheduled";
        },
        60s);
    return trim;
  }

  TempDir dir_;
  std::vector<pid_t> started_;
};

TEST_P(JvmOnJemalloc, TrimmedThroughTheAgentNeverWithSystemTrimNativeHeap) {
  const std::string jemalloc = AllocatorSo("jemalloc");
  ASSERT_FALSE(jemalloc.empty()) << "libjemalloc2 not found" << kInstall;

  // jemalloc preloaded, then the agent.
  {
    Process jvm = StartIdleJvm("jemalloc", jemalloc + ":" + AGENT_LIB);
    ASSERT_TRUE(jvm.running()) << ReadFile(dir_ / "jemalloc.err");
    Memtrimd m(DaemonFlags(jvm.pid()));
    ASSERT_TRUE(m.started()) << m.log();
    std::optional<JsonValue> trim = FirstScheduledTrim(m);
    ASSERT_TRUE(trim) << Curl(m.url("/report?format=json")).body << m.log();
    EXPECT_TRUE(trim->Get("success") != nullptr && trim->Get("success")->boolean)
        << Curl(m.url("/report?format=json")).body;
    EXPECT_EQ(Str(trim->Get("backend")), "agent");
    EXPECT_EQ(Str(trim->Get("allocator")), "jemalloc");
    EXPECT_EQ(Str(trim->Get("call")), "arena.4096.purge");
    const Series s = m.Scrape();
    EXPECT_EQ(Find(s, "memtrimd_target_info", {PidLabel(jvm.pid()), "allocator=\"jemalloc\""}), 1.0)
        << m.log();
    EXPECT_EQ(ReadFile(TrimLog("jemalloc")).find("Manual Trim"), std::string::npos)
        << ReadFile(TrimLog("jemalloc"));
    EXPECT_EQ(jvm.Stop(SIGTERM, 30s).has_value(), true);
  }

  // Control: the same JVM on glibc (the agent preloaded all the same) is
  // trimmed with System.trim_native_heap, and its log shows it.
  {
    Process jvm = StartIdleJvm("glibc", AGENT_LIB);
    ASSERT_TRUE(jvm.running()) << ReadFile(dir_ / "glibc.err");
    Memtrimd m(DaemonFlags(jvm.pid()));
    ASSERT_TRUE(m.started()) << m.log();
    std::optional<JsonValue> trim = FirstScheduledTrim(m);
    ASSERT_TRUE(trim) << Curl(m.url("/report?format=json")).body << m.log();
    EXPECT_TRUE(trim->Get("success") != nullptr && trim->Get("success")->boolean);
    EXPECT_EQ(Str(trim->Get("backend")), "jvm");
    EXPECT_EQ(Str(trim->Get("call")), "System.trim_native_heap");
    EXPECT_TRUE(WaitFor(
        [&] { return ReadFile(TrimLog("glibc")).find("Manual Trim") != std::string::npos; }, 10s))
        << ReadFile(TrimLog("glibc"));
    EXPECT_EQ(jvm.Stop(SIGTERM, 30s).has_value(), true);
  }

  // jemalloc without the agent: nothing memtrimd can call releases its
  // memory, so the trim is skipped with the reason, and the JVM is left
  // alone.
  {
    Process jvm = StartIdleJvm("noagent", jemalloc);
    ASSERT_TRUE(jvm.running()) << ReadFile(dir_ / "noagent.err");
    Memtrimd m(DaemonFlags(jvm.pid()));
    ASSERT_TRUE(m.started()) << m.log();
    const std::string pid = PidLabel(jvm.pid());
    Series s;
    EXPECT_TRUE(WaitFor(
        [&] {
          s = m.Scrape();
          return Find(s, "memtrimd_trim_runs_total",
                      {pid, "result=\"skipped\"", "reason=\"allocator_not_glibc\""})
                     .value_or(0) >= 2;
        },
        60s))
        << m.log();
    EXPECT_EQ(SumSeries(s, "memtrimd_trim_runs_total", {pid, "result=\"success\""}), 0.0);
    EXPECT_EQ(SumSeries(s, "memtrimd_trim_runs_total", {pid, "result=\"failure\""}), 0.0);
    EXPECT_EQ(Find(s, "memtrimd_target_info", {pid, "allocator=\"jemalloc\""}), 1.0);
    EXPECT_EQ(ReadFile(TrimLog("noagent")).find("Manual Trim"), std::string::npos)
        << ReadFile(TrimLog("noagent"));
    EXPECT_EQ(jvm.Stop(SIGTERM, 30s).has_value(), true);
  }
}

// jemalloc under a name maps cannot tell (a vendor's copy, here
// libfastalloc.so), with the agent: the agent's answer decides, so the JVM
// is trimmed with jemalloc's purge and never sent System.trim_native_heap,
// not even once before the agent first answered.
TEST_P(JvmOnJemalloc, AnAllocatorMapsCannotNameIsTakenFromTheAgent) {
  const std::string jemalloc = AllocatorSo("jemalloc");
  ASSERT_FALSE(jemalloc.empty()) << "libjemalloc2 not found" << kInstall;
  const std::string renamed = dir_ / "libfastalloc.so";
  WriteFile(renamed, ReadFile(jemalloc));
  Process jvm = StartIdleJvm("renamed", renamed + ":" + AGENT_LIB);
  ASSERT_TRUE(jvm.running()) << ReadFile(dir_ / "renamed.err");
  Memtrimd m(DaemonFlags(jvm.pid()));
  ASSERT_TRUE(m.started()) << m.log();
  std::optional<JsonValue> trim = FirstScheduledTrim(m);
  ASSERT_TRUE(trim) << Curl(m.url("/report?format=json")).body << m.log();
  EXPECT_EQ(Str(trim->Get("backend")), "agent") << m.log();
  EXPECT_EQ(Str(trim->Get("allocator")), "jemalloc");
  EXPECT_EQ(Str(trim->Get("call")), "arena.4096.purge");
  const Series s = m.Scrape();
  EXPECT_EQ(Find(s, "memtrimd_target_info", {PidLabel(jvm.pid()), "allocator=\"jemalloc\""}), 1.0)
      << m.log();
  EXPECT_EQ(ReadFile(TrimLog("renamed")).find("Manual Trim"), std::string::npos)
      << ReadFile(TrimLog("renamed"));
  EXPECT_EQ(jvm.Stop(SIGTERM, 30s).has_value(), true);
}

INSTANTIATE_TEST_SUITE_P(Allocators, JvmOnJemalloc, ::testing::ValuesIn(FindJdkHomes()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return JdkTestName(p.param);
                         });

// A logfmt line without its time stamp (ts=... first), to count repeats.
std::string WithoutTime(const std::string& line) {
  if (line.rfind("ts=", 0) != 0) return line;
  auto sp = line.find(' ');
  return sp == std::string::npos ? "" : line.substr(sp + 1);
}

// A program built with musl-gcc: no glibc figures (absent, with the
// reason), never trimmed (musl's malloc has no release call), and no log
// line repeated every sample.
TEST(Allocators, MuslProgram) {
  const std::string binary = FragmenterBinFor("musl");
  ASSERT_FALSE(binary.empty()) << "fragmenter_musl was not built" << kInstall;
  TempDir dir;
  Process p = StartFragmenter(dir, {"--threads", "2", "--rounds", "2", "--burst-mib", "8"}, binary);
  ASSERT_TRUE(p.running());
  const std::string pid = PidLabel(p.pid());

  Memtrimd m({"--target.pid=" + std::to_string(p.pid()), "--trim.interval=1s", "--trim.jitter=0",
              "--sample.interval=200ms", "--smaps.interval=200ms"});
  ASSERT_TRUE(m.started()) << m.log();
  Series s;
  // About 15 samples: 15 smaps reads and about 3 trim decisions.
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return Find(s, "memtrimd_samples_total").value_or(0) >= 15 &&
               Find(s, "memtrimd_trim_runs_total",
                    {pid, "result=\"skipped\"", "reason=\"no_release_call\""})
                       .value_or(0) >= 2;
      },
      60s))
      << m.log();
  EXPECT_EQ(Find(s, "memtrimd_target_info", {pid, "allocator=\"musl\"", "runtime=\"musl\""}), 1.0)
      << m.log();
  EXPECT_EQ(CountSeries(s, "memtrimd_glibc_arena_heaps", {pid}), 0u);
  EXPECT_EQ(CountSeries(s, "memtrimd_glibc_arena_heap_bytes", {pid}), 0u);
  EXPECT_EQ(SumSeries(s, "memtrimd_trim_runs_total", {pid, "result=\"success\""}), 0.0);
  EXPECT_EQ(SumSeries(s, "memtrimd_trim_runs_total", {pid, "result=\"failure\""}), 0.0);

  std::string raw;
  std::optional<JsonValue> j = RunJson("inspect", p.pid(), raw);
  ASSERT_TRUE(j) << raw;
  EXPECT_EQ(Str(j->Path({"allocator", "name"})), "musl");
  EXPECT_NE(Str(j->Path({"glibc", "not_applicable"})).find("musl"), std::string::npos) << raw;

  // The skip is logged once, when it is first decided; no warning or error
  // comes back every sample.
  const std::string log = m.log();
  std::istringstream in(log);
  std::string line;
  std::size_t skipped_lines = 0;
  std::map<std::string, int> complaints;
  while (std::getline(in, line)) {
    if (line.find("msg=\"trim skipped\"") != std::string::npos &&
        line.find("pid=" + std::to_string(p.pid())) != std::string::npos) {
      ++skipped_lines;
    }
    if (line.find(" level=warn ") != std::string::npos ||
        line.find(" level=error ") != std::string::npos) {
      ++complaints[WithoutTime(line)];
    }
  }
  EXPECT_EQ(skipped_lines, 1u) << log;
  for (const auto& [text, n] : complaints) EXPECT_EQ(n, 1) << "repeated: " << text;
  EXPECT_EQ(p.Stop(SIGTERM, 30s), 0);
}

// Regex for a literal string (POSIX extended).
std::string EscapeRegex(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (std::string("\\^$.|?*+()[]{}").find(ch) != std::string::npos) out += '\\';
    out += ch;
  }
  return out;
}

// A sidecar that picks its target by command line sees the program restart
// onto another allocator: a finding, with what it ran on before. The same
// program restarted on the same allocator is no finding.
TEST(Allocators, AllocatorChangedAcrossRestart) {
  const std::string jemalloc = AllocatorSo("jemalloc");
  ASSERT_FALSE(jemalloc.empty()) << "libjemalloc2 not found" << kInstall;
  TempDir dir;
  const std::string ready = dir / "app.ready";
  // One command line for every start (ProgramKey compares command lines).
  const std::vector<std::string> argv = {FragmenterBin(), "--quiet", "--ready-file", ready,
                                         "--threads",     "2",       "--rounds",     "2",
                                         "--burst-mib",   "8"};
  std::vector<pid_t> started;
  auto start = [&](const std::string& preload) {
    fs::remove(ready);
    SpawnOptions o;
    o.env.push_back("LD_PRELOAD=" + (preload.empty() ? "" : preload + ":") + AGENT_LIB);
    Process p(argv, o);
    started.push_back(p.pid());
    if (!WaitFor([&] { return fs::exists(ready) || !p.running(); }, 60s) || !fs::exists(ready)) {
      p.Kill();
    }
    return p;
  };
  struct Cleanup {
    std::vector<pid_t>& pids;
    ~Cleanup() {
      for (pid_t pid : pids) RemoveStaleAgentSocket(pid);
    }
  } cleanup{started};

  Process first = start("");
  ASSERT_TRUE(first.running());
  Memtrimd m({"--target.match=" + EscapeRegex(ready), "--sample.interval=200ms",
              "--smaps.interval=200ms", "--trim.interval=0"});
  ASSERT_TRUE(m.started()) << m.log();

  // Picked, and the agent's figures read (a full sample of it).
  auto watched = [&](pid_t pid, const std::string& allocator) {
    Series s;
    const std::string label = PidLabel(pid);
    bool ok = WaitFor(
        [&] {
          s = m.Scrape();
          return Find(s, "memtrimd_target_info", {label, "allocator=\"" + allocator + "\""}) &&
                 CountSeries(s, "memtrimd_allocator_bytes", {label}) > 0;
        },
        30s);
    EXPECT_TRUE(ok) << "pid " << pid << " on " << allocator << " not watched\n" << m.log();
    return s;
  };
  Series s = watched(first.pid(), "glibc");
  EXPECT_EQ(CountSeries(s, "memtrimd_allocator_risk", {"check=\"allocator_changed\""}), 0u);

  // Control: restarted on glibc again.
  ASSERT_EQ(first.Stop(SIGTERM, 30s), 0);
  Process second = start("");
  ASSERT_TRUE(second.running());
  s = watched(second.pid(), "glibc");
  EXPECT_EQ(CountSeries(s, "memtrimd_allocator_risk", {"check=\"allocator_changed\""}), 0u)
      << m.log();

  // Restarted with jemalloc preloaded: the same command line.
  ASSERT_EQ(second.Stop(SIGTERM, 30s), 0);
  Process third = start(jemalloc);
  ASSERT_TRUE(third.running());
  s = watched(third.pid(), "jemalloc");
  EXPECT_EQ(
      Find(s, "memtrimd_allocator_risk", {PidLabel(third.pid()), "check=\"allocator_changed\""}),
      1.0)
      << m.log();

  std::optional<JsonValue> report = ParseJson(Curl(m.url("/report?format=json")).body);
  ASSERT_TRUE(report);
  const JsonValue* targets = report->Get("targets");
  ASSERT_TRUE(targets != nullptr && targets->items.size() == 1);
  const JsonValue& t = targets->items[0];
  EXPECT_EQ(Str(t.Get("pid")), std::to_string(third.pid()));
  EXPECT_EQ(Str(t.Path({"allocator", "changed_from"})), "glibc");
  EXPECT_EQ(Str(t.Path({"allocator", "changed_from_pid"})), std::to_string(second.pid()));
  bool explained = false;
  const JsonValue* findings = t.Path({"allocator", "findings"});
  ASSERT_NE(findings, nullptr);
  for (const JsonValue& f : findings->items) {
    if (Str(f.Get("check")) != "allocator_changed") continue;
    EXPECT_TRUE(f.Get("at_risk") != nullptr && f.Get("at_risk")->boolean);
    explained = Str(f.Get("explanation")).find("ran on glibc before") != std::string::npos;
  }
  EXPECT_TRUE(explained) << Curl(m.url("/report?format=json")).body;
  const std::string text = Curl(m.url("/report")).body;
  EXPECT_NE(text.find("ran on glibc before"), std::string::npos) << text;
  EXPECT_EQ(third.Stop(SIGTERM, 30s), 0);
}

}  // namespace
}  // namespace memtrimd::testing

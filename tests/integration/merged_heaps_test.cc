// Arena heaps the kernel merged into one mapping, in a real glibc program
// (tests/workloads/merged_heaps.c): memtrimd's heaps equal the workload's own
// list, found from inside by following each arena's heap_info chain from its
// top chunk, with resident bytes by mincore. The workload stops allocating
// before it writes that list, so both reads see the same heaps. Cases: one
// thread holding 250 MB of 1000-byte blocks (the incident: 4 heaps, 2 in one
// mapping; memtrimd saw 2), 24 threads churning under MALLOC_ARENA_MAX=2, the
// trim's per-heap list, and memtrimd without ptrace access to the target.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "collectors/glibc/glibc_heap_collector.h"
#include "collectors/procfs/target_reader.h"
#include "collectors/sample.h"
#include "tests/integration/harness.h"
#include "tests/integration/json_value.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kHeap = 64ull << 20;
constexpr uint64_t kPage = 4096;
// The workload idles after its truth is written, but glibc or the kernel may
// still move a page (a THP split): a page or two per heap.
constexpr uint64_t kSlack = 2 * kPage;

struct TruthHeap {
  uint64_t start = 0;
  uint64_t arena = 0;
  uint64_t resident = 0;
};

struct Truth {
  std::vector<TruthHeap> heaps;
  uint64_t resident = 0;
  uint64_t decoy = 0;
};

Truth ReadTruth(const std::string& path) {
  Truth t;
  std::istringstream in(ReadFile(path));
  std::string key;
  while (in >> key) {
    if (key == "heap") {
      TruthHeap h;
      std::string k, prev, mprotect;
      in >> std::hex >> h.start >> k >> h.arena >> k >> prev >> k >> mprotect >> k >> std::dec >>
          h.resident;
      t.heaps.push_back(h);
    } else if (key == "resident_bytes") {
      in >> std::dec >> t.resident;
    } else if (key == "decoy") {
      in >> std::hex >> t.decoy >> std::dec;
    } else {
      std::string skip;
      in >> skip;
    }
  }
  return t;
}

// Whether a heap's rw-p part is a mapping of its own (the shape memtrimd
// counted before), read plainly from the test's own smaps parser.
bool OwnMapping(const std::vector<RawMapping>& maps, uint64_t start) {
  for (std::size_t i = 0; i < maps.size(); ++i) {
    if (maps[i].start != start) continue;
    if (maps[i].perms != "rw-p" || maps[i].end > start + kHeap) return false;
    uint64_t reached = maps[i].end;
    for (std::size_t j = i + 1; j < maps.size() && reached < start + kHeap; ++j) {
      if (maps[j].start != reached || maps[j].perms != "---p" || maps[j].inode != 0) break;
      reached = maps[j].end;
    }
    return reached == start + kHeap;
  }
  return false;
}

std::size_t CountMerged(const Truth& truth, pid_t pid) {
  std::vector<RawMapping> maps = ReadSmapsIndependently(pid);
  std::size_t merged = 0;
  for (const TruthHeap& h : truth.heaps) merged += OwnMapping(maps, h.start) ? 0 : 1;
  return merged;
}

class MergedHeapsTest : public ::testing::Test {
 protected:
  // Starts the workload and waits for its truth; a not-running Process on failure.
  Process Start(std::vector<std::string> args, SpawnOptions o = {}) {
    std::vector<std::string> argv = {WorkloadBin("merged_heaps"), "--ready-file", ready(),
                                     "--truth-file", truth_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    o.stderr_path = dir_ / "merged_heaps.err";
    Process p(argv, o);
    if (!WaitFor([&] { return fs::exists(ready()) || !p.running(); }, 120s) || !p.running()) {
      ADD_FAILURE() << "merged_heaps did not get ready: " << ReadFile(dir_ / "merged_heaps.err");
      p.Kill();
    }
    return p;
  }

  // Starts the workload until the kernel merged at least one of its heaps
  // into a neighbour's mapping. Where a new heap lands is the kernel's
  // choice (address layout, the other threads' stacks, glibc's aligned-area
  // hint), so one run in four of the 24-thread case merged none here; each
  // attempt is a fresh process, hence a fresh layout. A not-running Process
  // when no attempt merged a heap.
  Process StartMerged(const std::vector<std::string>& args, const SpawnOptions& o, Truth& truth) {
    constexpr int kAttempts = 8;
    for (int attempt = 1; attempt <= kAttempts; ++attempt) {
      fs::remove(ready());
      fs::remove(truth_path());
      Process p = Start(args, o);
      if (!p.running()) return p;
      truth = ReadTruth(truth_path());
      if (CountMerged(truth, p.pid()) >= 1) return p;
      p.Kill();
    }
    ADD_FAILURE() << "the kernel merged no heaps in " << kAttempts << " runs of merged_heaps";
    return Process();
  }

  // The collector as the daemon runs it (heap headers read), compared heap
  // by heap with the workload's list.
  void ExpectCollectorMatches(pid_t pid, const Truth& truth) {
    Result<Target> t = procfs::ReadTarget("/proc", pid);
    ASSERT_TRUE(t.ok()) << t.status().message();
    glibc::GlibcHeapCollector collector({});
    TargetSample s;
    Status st = collector.Collect(*t, s);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_TRUE(s.glibc.has_value());
    const GlibcHeaps& g = *s.glibc;
    EXPECT_EQ(g.headers_unread, "");
    std::map<uint64_t, uint64_t> found;
    for (const glibc::ArenaHeap& h : g.heaps) {
      found[h.start] = h.resident_bytes;
      EXPECT_EQ(h.check, glibc::HeapCheck::kConfirmed) << std::hex << h.start;
    }
    ASSERT_EQ(found.size(), truth.heaps.size());
    for (const TruthHeap& h : truth.heaps) {
      SCOPED_TRACE(::testing::Message() << "heap 0x" << std::hex << h.start);
      auto it = found.find(h.start);
      ASSERT_NE(it, found.end());
      EXPECT_LE(it->second, h.resident + kSlack);
      EXPECT_GE(it->second + kSlack, h.resident);
    }
    EXPECT_EQ(g.merged, CountMerged(truth, pid));
    // The breakdown still adds up to the read's total, and holds the heaps.
    const glibc::RssBreakdown& b = g.breakdown;
    EXPECT_EQ(b.file_and_shared + b.java_heap + b.arena_heaps + b.main_arena + b.other_anonymous,
              b.total);
    EXPECT_EQ(b.arena_heaps, g.resident_bytes);
  }

  // `memtrimd inspect --json`: the same count and resident bytes.
  std::optional<JsonValue> Inspect(pid_t pid, std::optional<uid_t> without_ptrace = {}) {
    std::vector<std::string> argv = {MemtrimdBin(), "inspect", "--pid", std::to_string(pid),
                                     "--json"};
    if (without_ptrace) argv = AsUidWithoutPtrace(*without_ptrace - 1, *without_ptrace, argv);
    RunResult r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::optional<JsonValue> j = ParseJson(r.out);
    EXPECT_TRUE(j.has_value()) << r.out;
    return j;
  }

  static int64_t IntAt(const JsonValue& j, std::initializer_list<std::string_view> path) {
    const JsonValue* v = j.Path(path);
    return v != nullptr && v->Int() ? *v->Int() : -1;
  }

  std::string ready() const { return dir_ / "merged.ready"; }
  std::string truth_path() const { return dir_ / "truth.txt"; }
  TempDir dir_;
};

TEST_F(MergedHeapsTest, OneThreadHolding250MBOfSmallBlocks) {
  // The scenario the old shape rule got wrong: heaps in merged mappings,
  // which the test's own exact-shape count (the old rule) misses.
  Truth truth;
  Process p = StartMerged(
      {"--threads", "1", "--mib-per-thread", "250", "--block-bytes", "1000", "--decoy"}, {}, truth);
  ASSERT_TRUE(p.running());
  ASSERT_GE(truth.heaps.size(), 4u);
  ASSERT_NE(truth.decoy, 0u);
  EXPECT_LT(CountHeaps(ReadSmapsIndependently(p.pid())).count, truth.heaps.size());

  ExpectCollectorMatches(p.pid(), truth);

  std::optional<JsonValue> j = Inspect(p.pid());
  ASSERT_TRUE(j);
  EXPECT_EQ(IntAt(*j, {"glibc", "arena_heaps"}), static_cast<int64_t>(truth.heaps.size()));
  EXPECT_EQ(IntAt(*j, {"glibc", "arena_heaps_confirmed"}),
            static_cast<int64_t>(truth.heaps.size()));
  const int64_t resident = IntAt(*j, {"glibc", "arena_heap_resident_bytes"});
  const auto want = static_cast<int64_t>(truth.resident);
  const auto slack = static_cast<int64_t>(kSlack * truth.heaps.size());
  EXPECT_LE(resident, want + slack);
  EXPECT_GE(resident, want - slack);
  // The decoy (128 MiB of written pages on two boundaries, the second with a
  // header whose chain does not hold) is not a heap: its pages stay other
  // anonymous.
  EXPECT_GE(IntAt(*j, {"rss_breakdown", "other_anonymous_bytes"}), static_cast<int64_t>(2 * kHeap));
}

TEST_F(MergedHeapsTest, TwentyFourThreadsChurningUnderArenaMaxTwo) {
  SpawnOptions o;
  o.env = {"MALLOC_ARENA_MAX=2"};
  Truth truth;
  Process p = StartMerged(
      {"--threads", "24", "--mib-per-thread", "18", "--block-bytes", "1000", "--churn-rounds", "2"},
      o, truth);
  ASSERT_TRUE(p.running());
  ASSERT_GE(truth.heaps.size(), 2u);
  ExpectCollectorMatches(p.pid(), truth);
}

TEST_F(MergedHeapsTest, TheTrimsPerHeapListCoversMergedHeaps) {
  SpawnOptions o;
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Truth truth;
  Process p =
      StartMerged({"--threads", "1", "--mib-per-thread", "250", "--churn-rounds", "1"}, o, truth);
  ASSERT_TRUE(p.running());
  RunResult r = RunCommand({MemtrimdBin(), "trim", "--pid", std::to_string(p.pid()), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  std::optional<JsonValue> j = ParseJson(r.out);
  ASSERT_TRUE(j) << r.out;
  const JsonValue* list = j->Path({"trim", "arena_heaps"});
  if (list == nullptr) list = j->Get("arena_heaps");
  ASSERT_NE(list, nullptr) << r.out;
  std::map<std::string, const JsonValue*> by_start;
  for (const JsonValue& h : list->items) {
    if (const JsonValue* s = h.Get("start")) by_start[s->text] = &h;
  }
  // Every heap of the workload (the agent's own thread may add an arena).
  for (const TruthHeap& h : truth.heaps) {
    std::ostringstream hex;
    hex << "0x" << std::hex << h.start;
    SCOPED_TRACE(hex.str());
    auto it = by_start.find(hex.str());
    ASSERT_NE(it, by_start.end()) << r.out;
    const JsonValue* before = it->second->Get("before_resident_bytes");
    const JsonValue* after = it->second->Get("after_resident_bytes");
    ASSERT_TRUE(before != nullptr && before->Int() && after != nullptr && after->Int()) << r.out;
    EXPECT_LE(static_cast<uint64_t>(*before->Int()), h.resident + kSlack);
    EXPECT_GE(static_cast<uint64_t>(*before->Int()) + kSlack, h.resident);
    EXPECT_LE(*after->Int(), *before->Int() + static_cast<int64_t>(kSlack));
  }
}

// memtrimd with the target's uid as its effective (file system) uid but
// another real uid: it reads smaps and pagemap (the kernel checks the fs
// uid there) but not the target's memory (process_vm_readv checks the real
// uid), as under Yama's ptrace_scope=1 for a sidecar that is not the
// target's parent. Only heaps of their own mapping are counted, by shape;
// no merged heap and no part of the decoy is, and the reason is shown.
TEST_F(MergedHeapsTest, WithoutPtraceAccessMergedHeapsAreNotCountedAndTheReasonIsShown) {
  if (!IsRoot()) GTEST_SKIP() << "needs root to run the target and memtrimd as other uids";
  constexpr uid_t kTargetUid = 65534;
  fs::permissions(dir_.path(), fs::perms::all);
  SpawnOptions o;
  o.uid = kTargetUid;
  o.gid = kTargetUid;
  Truth truth;
  Process p = StartMerged({"--threads", "1", "--mib-per-thread", "250", "--decoy"}, o, truth);
  ASSERT_TRUE(p.running());
  const std::size_t merged = CountMerged(truth, p.pid());
  ASSERT_GE(merged, 1u);
  std::optional<JsonValue> j = Inspect(p.pid(), kTargetUid);
  ASSERT_TRUE(j);
  const JsonValue* why = j->Path({"glibc", "heap_headers_unread"});
  ASSERT_NE(why, nullptr);
  EXPECT_NE(why->text.find("process_vm_readv"), std::string::npos) << why->text;
  EXPECT_NE(why->text.find("permission denied"), std::string::npos) << why->text;
  // The heaps of their own mapping, and nothing else.
  std::vector<RawMapping> maps = ReadSmapsIndependently(p.pid());
  uint64_t own_resident = 0;
  std::size_t own = 0;
  for (const TruthHeap& h : truth.heaps) {
    if (!OwnMapping(maps, h.start)) continue;
    ++own;
    own_resident += h.resident;
  }
  EXPECT_EQ(IntAt(*j, {"glibc", "arena_heaps"}), static_cast<int64_t>(own));
  EXPECT_EQ(IntAt(*j, {"glibc", "arena_heaps_confirmed"}), 0);
  EXPECT_EQ(IntAt(*j, {"glibc", "arena_heaps_merged"}), 0);
  const int64_t resident = IntAt(*j, {"glibc", "arena_heap_resident_bytes"});
  EXPECT_LE(resident, static_cast<int64_t>(own_resident + kSlack * own));
  EXPECT_GE(resident + static_cast<int64_t>(kSlack * own), static_cast<int64_t>(own_resident));
  // The merged heaps and the decoy's two boundaries: candidates not counted.
  EXPECT_EQ(IntAt(*j, {"glibc", "arena_heap_candidates_uncounted"}),
            static_cast<int64_t>(merged + 2));
}

}  // namespace
}  // namespace memtrimd::testing

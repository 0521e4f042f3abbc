// The daemon's view of a target's allocator: which one (the agent's answer
// over maps), its measures, the RSS account's allocator_free part, the
// findings, the restart history, the trim backend, and what /metrics
// serves or leaves out under another allocator than glibc.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "daemon/analysis/allocator_findings.h"
#include "daemon/analysis/allocator_view.h"
#include "daemon/analysis/rss_account.h"
#include "daemon/exposition/exposition.h"
#include "daemon/sampling/allocator_history.h"
#include "daemon/trim/trim.h"

namespace memtrimd {
namespace {

constexpr uint64_t kMiB = 1u << 20;

agent::AllocatorStats Jemalloc(uint64_t dirty, uint64_t muzzy = 0) {
  agent::AllocatorStats a;
  a.allocator = Allocator::kJemalloc;
  a.object = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
  a.bytes = {{"allocated", 40 * kMiB}, {"active", 48 * kMiB},   {"resident", 120 * kMiB},
             {"mapped", 110 * kMiB},   {"retained", 30 * kMiB}, {"metadata", 3 * kMiB},
             {"dirty", dirty},         {"muzzy", muzzy}};
  a.dirty_decay_ms = 10000;
  a.muzzy_decay_ms = -1;
  return a;
}

Target JemallocTarget() {
  Target t;
  t.pid = 77;
  t.comm = "app";
  t.runtime = Runtime::kGlibc;
  t.allocator = Allocator::kJemalloc;
  t.allocator_source = "libjemalloc.so.2 mapped";
  return t;
}

// A glibc program's sample on jemalloc: RSS 200 MiB, 190 MiB anonymous.
TargetSample JemallocSample(uint64_t dirty) {
  TargetSample s;
  procfs::ProcStatus p;
  p.rss_anon = 190 * kMiB;
  p.rss_file = 10 * kMiB;
  s.process = p;
  GlibcHeaps g;
  g.arenas_not_applicable = "malloc is jemalloc (libjemalloc.so.2 mapped), not glibc's";
  g.allocator = Allocator::kJemalloc;
  g.breakdown.file_and_shared = 10 * kMiB;
  g.breakdown.main_arena = 1 * kMiB;  // [heap]: not glibc's arena here
  g.breakdown.other_anonymous = 189 * kMiB;
  g.breakdown.total = 200 * kMiB;
  s.glibc = g;
  s.agent_loaded = true;
  s.allocator = Jemalloc(dirty);
  return s;
}

TEST(AllocatorView, TheAgentsAnswerWinsOverMaps) {
  Target t = JemallocTarget();
  t.allocator = Allocator::kGlibc;  // maps saw nothing (a static link without symbols)
  AllocatorView v = ViewAllocator(t, JemallocSample(64 * kMiB));
  EXPECT_EQ(v.allocator, Allocator::kJemalloc);
  EXPECT_EQ(v.source, "the agent: malloc is served by /usr/lib/x86_64-linux-gnu/libjemalloc.so.2");
  EXPECT_EQ(v.measures_from, "agent");
  EXPECT_EQ(v.measures.allocated, 40 * kMiB);
  EXPECT_EQ(v.measures.held, 120 * kMiB);
  EXPECT_EQ(v.measures.free_kept, 64 * kMiB);
  EXPECT_EQ(v.measures.released, 30 * kMiB);
  EXPECT_TRUE(v.missing.empty());
}

TEST(AllocatorView, GlibcFromMallocInfoWithoutTheAgent) {
  Target t;
  t.allocator = Allocator::kGlibc;
  TargetSample s;
  MallocStats m;
  m.info.system_current = 100 * kMiB;
  m.info.total_mmap_bytes = 20 * kMiB;
  m.info.total_fast_bytes = 1 * kMiB;
  m.info.total_rest_bytes = 29 * kMiB;
  s.malloc = m;
  AllocatorView v = ViewAllocator(t, s);
  EXPECT_EQ(v.measures_from, "malloc_info");
  EXPECT_EQ(v.measures.held, 120 * kMiB);
  EXPECT_EQ(v.measures.allocated, 90 * kMiB);
  EXPECT_FALSE(v.measures.released);
  // malloc's 30 MiB of free chunks may have lost their pages to a trim:
  // without the smaps read nothing says how much of it is kept.
  EXPECT_FALSE(v.measures.free_kept);
  EXPECT_FALSE(v.release_gives);
  // With it: the arenas hold 80 MiB resident, 70 MiB in use, so 10 MiB is
  // free and kept; none of the 30 MiB free is in whole pages of free chunks
  // here, so a trim gives back nothing.
  GlibcHeaps g;
  g.breakdown.arena_heaps = 75 * kMiB;
  g.breakdown.main_arena = 5 * kMiB;
  s.glibc = g;
  v = ViewAllocator(t, s);
  EXPECT_EQ(v.measures.free_kept, 10 * kMiB);
  EXPECT_EQ(v.release_gives, 0u);
}

TEST(AllocatorView, SaysWhyFiguresAreMissing) {
  Target t;
  t.allocator = Allocator::kMusl;
  EXPECT_EQ(ViewAllocator(t, {}).missing, "musl's malloc has no statistics interface");
  t.allocator = Allocator::kTcmalloc;
  EXPECT_NE(ViewAllocator(t, {}).missing.find("not preloaded"), std::string::npos);
  TargetSample old_agent;
  old_agent.agent_loaded = true;
  old_agent.allocator_missing = "the agent did not answer \"allocator\" (unknown command)";
  EXPECT_EQ(ViewAllocator(t, old_agent).missing, old_agent.allocator_missing);
}

TEST(RssAccountAllocator, AnotherAllocatorsFreeMemoryIsItsOwnPartAndTheyAddUp) {
  std::optional<RssAccount> a = AccountRss(JemallocSample(64 * kMiB));
  ASSERT_TRUE(a);
  EXPECT_FALSE(a->glibc_free);
  EXPECT_EQ(a->allocator_free, 64 * kMiB);
  EXPECT_EQ(a->allocator, "jemalloc");
  EXPECT_EQ(a->outside, 190 * kMiB - 64 * kMiB);
  uint64_t parts = 0;
  bool has_part = false;
  for (const auto& [name, bytes] : AccountParts(*a)) {
    parts += bytes;
    has_part |= std::string(name) == "allocator_free";
  }
  EXPECT_TRUE(has_part);
  EXPECT_EQ(parts, a->rss);
  EXPECT_NE(a->Equation().find("jemalloc free kept 64.0 MiB"), std::string::npos) << a->Equation();
}

TEST(RssAccountAllocator, FreeKeptBeyondTheAnonymousMemoryIsCappedSoNothingIsNegative) {
  std::optional<RssAccount> a = AccountRss(JemallocSample(500 * kMiB));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->allocator_free, 190 * kMiB);
  EXPECT_EQ(a->outside, 0u);
}

TEST(RssAccountAllocator, WithoutTheAgentTheEquationNamesTheAllocator) {
  TargetSample s = JemallocSample(0);
  s.allocator.reset();
  std::optional<RssAccount> a = AccountRss(s);
  ASSERT_TRUE(a);
  EXPECT_FALSE(a->allocator_free);
  EXPECT_NE(a->Equation().find("native and jemalloc free"), std::string::npos) << a->Equation();
}

TEST(AllocatorFindings, FreeKeptHighNeedsSixteenMibAndATenthOfRss) {
  Target t = JemallocTarget();
  auto check = [&](uint64_t dirty) {
    for (const RiskFinding& f : AssessAllocator(t, JemallocSample(dirty))) {
      if (f.check == "free_kept_high") return std::optional<RiskFinding>(f);
    }
    return std::optional<RiskFinding>();
  };
  ASSERT_TRUE(check(64 * kMiB));
  EXPECT_TRUE(check(64 * kMiB)->at_risk);
  EXPECT_NE(check(64 * kMiB)->explanation.find("dirty_decay_ms (10000 ms)"), std::string::npos);
  EXPECT_NE(check(64 * kMiB)->explanation.find("retained"), std::string::npos);
  EXPECT_FALSE(check(15 * kMiB)->at_risk);  // under 16 MiB
  EXPECT_FALSE(check(19 * kMiB)->at_risk);  // under a tenth of 200 MiB
  EXPECT_TRUE(check(20 * kMiB)->at_risk);
}

TEST(AllocatorFindings, TcmallocsFreePageHeapAndItsCaches) {
  Target t = JemallocTarget();
  t.allocator = Allocator::kTcmalloc;
  TargetSample s = JemallocSample(0);
  agent::AllocatorStats tc;
  tc.allocator = Allocator::kTcmalloc;
  tc.object = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4";
  tc.bytes = {{"allocated", 50 * kMiB},         {"heap_size", 150 * kMiB},
              {"pageheap_free", 80 * kMiB},     {"pageheap_unmapped", 10 * kMiB},
              {"central_cache_free", 3 * kMiB}, {"transfer_cache_free", 2 * kMiB},
              {"thread_cache_free", 1 * kMiB}};
  s.allocator = tc;
  std::vector<RiskFinding> f = AssessAllocator(t, s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(f[0].at_risk);
  EXPECT_NE(f[0].explanation.find("page heap keeps 80.0 MiB"), std::string::npos)
      << f[0].explanation;
  EXPECT_NE(f[0].explanation.find("6.0 MiB more"), std::string::npos) << f[0].explanation;
}

TEST(AllocatorFindings, GlibcAndMuslHaveNoFreeKeptCheck) {
  Target t;
  t.allocator = Allocator::kGlibc;
  TargetSample s;
  s.allocator = agent::AllocatorStats{};
  s.allocator->allocator = Allocator::kGlibc;
  s.allocator->bytes = {{"fordblks", 500 * kMiB}};
  EXPECT_TRUE(AssessAllocator(t, s).empty());
  t.allocator = Allocator::kMusl;
  EXPECT_TRUE(AssessAllocator(t, {}).empty());
}

TEST(AllocatorHistory, ARestartOntoAnotherAllocatorIsAChange) {
  AllocatorHistory h;
  auto now = std::chrono::system_clock::now();
  Target first;
  first.pid = 10;
  first.start_ticks = 100;
  first.allocator = Allocator::kGlibc;
  EXPECT_FALSE(h.Seen("pod|java -jar app.jar", first, now));
  EXPECT_FALSE(h.Seen("pod|java -jar app.jar", first, now));  // the same process again
  Target second = first;
  second.pid = 11;
  second.start_ticks = 200;
  second.allocator = Allocator::kJemalloc;
  std::optional<AllocatorChange> c = h.Seen("pod|java -jar app.jar", second, now);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->before, Allocator::kGlibc);
  EXPECT_EQ(c->after, Allocator::kJemalloc);
  EXPECT_EQ(c->before_pid, 10);
  // Restarted again on jemalloc: no change; another program: none either.
  Target third = second;
  third.pid = 12;
  third.start_ticks = 300;
  EXPECT_FALSE(h.Seen("pod|java -jar app.jar", third, now));
  EXPECT_FALSE(h.Seen("pod|java -jar other.jar", first, now));
}

TEST(AllocatorHistory, UnknownIsNoChangeAndTheOldestAreForgotten) {
  AllocatorHistory h(2);
  auto now = std::chrono::system_clock::now();
  Target a;
  a.pid = 1;
  a.allocator = Allocator::kGlibc;
  h.Seen("a", a, now);
  Target unknown = a;
  unknown.pid = 2;
  unknown.allocator = Allocator::kUnknown;
  EXPECT_FALSE(h.Seen("a", unknown, now));
  h.Seen("b", a, now);
  h.Seen("c", a, now);  // "a" was the least recently seen
  EXPECT_EQ(h.size(), 2u);
  Target je = a;
  je.pid = 3;
  je.allocator = Allocator::kJemalloc;
  EXPECT_FALSE(h.Seen("a", je, now));  // forgotten: no before to compare with
}

// A directory that stands for /proc/<pid> with the given maps text.
class FakeProc {
 public:
  explicit FakeProc(const std::string& maps) {
    char tmpl[] = "/tmp/memtrimd-alloc-XXXXXX";
    dir_ = mkdtemp(tmpl);
    FILE* f = std::fopen((dir_ + "/maps").c_str(), "w");
    std::fputs(maps.c_str(), f);
    std::fclose(f);
  }
  ~FakeProc() {
    std::remove((dir_ + "/maps").c_str());
    rmdir(dir_.c_str());
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

constexpr const char* kAgentMaps =
    "7f00-7f01 r-xp 00000000 08:01 9 /usr/lib/memtrimd/libmemtrimd_agent.so\n";

TEST(TrimBackend, FollowsTheAllocator) {
  FakeProc with_agent(kAgentMaps);
  FakeProc without_agent("");
  Target jvm;
  jvm.runtime = Runtime::kJvm;
  jvm.allocator = Allocator::kGlibc;
  jvm.proc_dir = without_agent.dir();
  EXPECT_EQ(*ResolveBackend(jvm, TrimBackendKind::kAuto), TrimBackendKind::kJvm);

  // A JVM on jemalloc: through the agent, never System.trim_native_heap.
  jvm.allocator = Allocator::kJemalloc;
  Result<TrimBackendKind> none = ResolveBackend(jvm, TrimBackendKind::kAuto);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("System.trim_native_heap would only trim glibc"),
            std::string::npos);
  EXPECT_EQ(BackendUnavailableReason(jvm, TrimBackendKind::kAuto), "allocator_not_glibc");
  jvm.proc_dir = with_agent.dir();
  EXPECT_EQ(*ResolveBackend(jvm, TrimBackendKind::kAuto), TrimBackendKind::kAgent);
  EXPECT_FALSE(ResolveBackend(jvm, TrimBackendKind::kJvm).ok());  // asked for, still refused

  Target musl;
  musl.runtime = Runtime::kMusl;
  musl.allocator = Allocator::kMusl;
  musl.proc_dir = with_agent.dir();
  EXPECT_FALSE(ResolveBackend(musl, TrimBackendKind::kAuto).ok());
  EXPECT_EQ(BackendUnavailableReason(musl, TrimBackendKind::kAuto), "no_release_call");

  Target native;
  native.runtime = Runtime::kGlibc;
  native.allocator = Allocator::kTcmalloc;
  native.proc_dir = without_agent.dir();
  EXPECT_EQ(BackendUnavailableReason(native, TrimBackendKind::kAuto), "no_agent");
  native.proc_dir = with_agent.dir();
  EXPECT_EQ(*ResolveBackend(native, TrimBackendKind::kAuto), TrimBackendKind::kAgent);
}

// The one decision, pure: the skip label of a target without a backend is
// the same whether the agent is loaded or not; only whether there is a
// backend depends on it.
TEST(TrimBackend, ChooseBackendDecidesOnceWithoutReadingMaps) {
  // kAuto stands for "none" here.
  auto BackendOf = [](const BackendChoice& c) {
    return c.backend.value_or(TrimBackendKind::kAuto);
  };
  Target t;
  t.runtime = Runtime::kJvm;
  t.allocator = Allocator::kGlibc;
  EXPECT_EQ(BackendOf(ChooseBackend(t, TrimBackendKind::kAuto, false)), TrimBackendKind::kJvm);
  EXPECT_EQ(ChooseBackend(t, TrimBackendKind::kAgent, false).reason, "no_agent");
  EXPECT_EQ(BackendOf(ChooseBackend(t, TrimBackendKind::kAgent, true)), TrimBackendKind::kAgent);

  t.allocator = Allocator::kJemalloc;
  EXPECT_EQ(ChooseBackend(t, TrimBackendKind::kAuto, false).reason, "allocator_not_glibc");
  EXPECT_EQ(BackendOf(ChooseBackend(t, TrimBackendKind::kAuto, true)), TrimBackendKind::kAgent);
  EXPECT_EQ(ChooseBackend(t, TrimBackendKind::kJvm, true).reason, "allocator_not_glibc");
  EXPECT_EQ(ChooseBackend(t, TrimBackendKind::kAgent, false).reason, "allocator_not_glibc");

  t.runtime = Runtime::kGlibc;
  t.allocator = Allocator::kGlibc;
  EXPECT_EQ(ChooseBackend(t, TrimBackendKind::kJvm, true).reason, "not_a_jvm");
  EXPECT_EQ(ChooseBackend(t, TrimBackendKind::kAuto, false).reason, "no_agent");
  EXPECT_EQ(BackendOf(ChooseBackend(t, TrimBackendKind::kAuto, true)), TrimBackendKind::kAgent);
  EXPECT_TRUE(ChooseBackend(t, TrimBackendKind::kAuto, true).reason.empty());

  t.allocator = Allocator::kMusl;
  const BackendChoice musl = ChooseBackend(t, TrimBackendKind::kAuto, true);
  EXPECT_FALSE(musl.backend.has_value());
  EXPECT_EQ(musl.reason, "no_release_call");
  EXPECT_NE(musl.why.find("musl"), std::string::npos);
}

bool Has(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(AllocatorExposition, AnotherAllocatorsFiguresServedAndGlibcsLeftOut) {
  Snapshot snap;
  snap.taken_at = std::chrono::system_clock::now();
  TargetSnapshot ts;
  ts.target = JemallocTarget();
  ts.sample = JemallocSample(64 * kMiB);
  snap.targets.push_back(ts);
  std::string text = RenderText(SnapshotFamilies(&snap));
  EXPECT_NE(text.find("memtrimd_target_info{pid=\"77\",comm=\"app\",runtime=\"glibc\","
                      "allocator=\"jemalloc\""),
            std::string::npos)
      << text;
  EXPECT_TRUE(Has(text,
                  "memtrimd_allocator_bytes{pid=\"77\",allocator=\"jemalloc\",measure="
                  "\"free_kept\"} 67108864"));
  EXPECT_TRUE(Has(text,
                  "memtrimd_allocator_bytes{pid=\"77\",allocator=\"jemalloc\",measure="
                  "\"released\"} 31457280"));
  EXPECT_TRUE(Has(text,
                  "memtrimd_allocator_stat_bytes{pid=\"77\",allocator=\"jemalloc\",stat="
                  "\"metadata\"} 3145728"));
  EXPECT_TRUE(Has(text,
                  "memtrimd_allocator_decay_seconds{pid=\"77\",allocator=\"jemalloc\",pages="
                  "\"dirty\"} 10"));
  EXPECT_TRUE(Has(text,
                  "memtrimd_allocator_decay_seconds{pid=\"77\",allocator=\"jemalloc\",pages="
                  "\"muzzy\"} -1"));
  EXPECT_TRUE(Has(text, "memtrimd_allocator_risk{pid=\"77\",check=\"free_kept_high\"} 1"));
  EXPECT_TRUE(Has(text, "memtrimd_rss_account_bytes{pid=\"77\",part=\"allocator_free\"} 67108864"));
  // glibc's arena figures are absent, not zero; [heap] is plain anonymous.
  EXPECT_EQ(text.find("memtrimd_glibc_arena_heaps{"), std::string::npos);
  EXPECT_EQ(text.find("memtrimd_glibc_main_arena_resident_bytes{"), std::string::npos);
  EXPECT_EQ(text.find("part=\"glibc_main_arena\""), std::string::npos);
  EXPECT_TRUE(Has(text,
                  "memtrimd_rss_breakdown_bytes{pid=\"77\",part=\"other_anonymous\"} "
                  "199229440"));
  EXPECT_EQ(text.find("check=\"allocator_changed\""), std::string::npos);

  snap.targets[0].sample.allocator_change =
      AllocatorChange{Allocator::kGlibc, Allocator::kJemalloc, 70, snap.taken_at};
  text = RenderText(SnapshotFamilies(&snap));
  EXPECT_TRUE(Has(text, "memtrimd_allocator_risk{pid=\"77\",check=\"allocator_changed\"} 1"));
}

}  // namespace
}  // namespace memtrimd

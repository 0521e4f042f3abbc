#include "daemon/analysis/findings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "daemon/analysis/advice.h"
#include "daemon/analysis/rss_account.h"

namespace memtrimd {
namespace {

TargetSample Jvm(int feature) {
  TargetSample s;
  JvmSample j;
  j.attachable = true;
  jvm::JvmVersion v;
  v.feature = feature;
  v.full = std::to_string(feature) + ".0.1";
  j.version = v;
  j.settings["MaxHeapSize"] = "1073741824";
  j.settings["NativeMemoryTracking"] = "summary";
  jvm::NmtSummary n;
  n.enabled = true;
  n.total_committed = 600u << 20;
  jvm::NmtCategory heap;
  heap.name = "Java Heap";
  heap.committed = 512u << 20;
  jvm::NmtCategory other;
  other.name = "Other";
  other.committed = 100u << 20;
  n.categories = {heap, other};
  j.nmt = n;
  s.jvm = j;
  procfs::ProcStatus p;
  p.rss_anon = 700u << 20;
  p.rss_file = 20u << 20;
  s.process = p;
  return s;
}

const RiskFinding* FindCheck(const std::vector<RiskFinding>& v, const std::string& check) {
  for (const RiskFinding& f : v) {
    if (f.check == check) return &f;
  }
  return nullptr;
}

JvmBuffers Pool(uint64_t direct_used) {
  JvmBuffers b;
  b.direct = {3, direct_used, direct_used};
  return b;
}

// Issue 22: the unset property alone is advice, on every JVM; a risk is a
// cache that holds a share of a limit that matters now.
TEST(Findings, NioCacheUnsetIsAdviceOnEveryJdkAndNoRiskAtZeroBytes) {
  for (int feature : {17, 21, 25}) {
    TargetSample s = Jvm(feature);
    s.jvm->settings["MaxDirectMemorySize"] = std::to_string(64u << 20);
    s.jvm_buffers = Pool(0);
    s.jvm_buffers->temp_cache_bytes = 0;  // the agent measures it at 0 B
    s.jvm_buffers->temp_cache_buffers = 0;
    CgroupMemory cg;
    cg.limit_bytes = 256u << 20;
    s.cgroup = cg;
    std::vector<RiskFinding> risks = AssessJvmRisks(s);
    const RiskFinding* f = FindCheck(risks, "nio_cache_unbounded");
    ASSERT_NE(f, nullptr) << feature;
    EXPECT_FALSE(f->at_risk) << feature << ": " << f->explanation;
    EXPECT_NE(f->explanation.find("holds 0 B in 0 buffers now"), std::string::npos)
        << f->explanation;
    std::vector<Advice> advice = AdviseJvm(s);
    ASSERT_EQ(advice.size(), 1u) << feature;
    EXPECT_EQ(advice[0].check, "nio_cache_unbounded");
    EXPECT_NE(advice[0].text.find("-Djdk.nio.maxCachedBufferSize=262144"), std::string::npos);
  }
  TargetSample bounded = Jvm(21);
  bounded.jvm->settings["jdk.nio.maxCachedBufferSize"] = "262144";
  EXPECT_FALSE(FindCheck(AssessJvmRisks(bounded), "nio_cache_unbounded")->at_risk);
  EXPECT_TRUE(AdviseJvm(bounded).empty());
  // Without attach the settings are unknown: no advice either.
  TargetSample detached = Jvm(21);
  detached.jvm->attachable = false;
  EXPECT_TRUE(AdviseJvm(detached).empty());
}

TEST(Findings, NioCacheIsARiskWhenItHoldsAShareOfALimit) {
  constexpr uint64_t kMiB = 1 << 20;
  // JDK 17: the cache counts against MaxDirectMemorySize (64 MiB).
  TargetSample s17 = Jvm(17);
  s17.jvm->settings["MaxDirectMemorySize"] = std::to_string(64 * kMiB);
  s17.jvm_buffers = Pool(20 * kMiB);
  s17.jvm_buffers->temp_cache_bytes = 15 * kMiB;  // 23 %: under a quarter
  s17.jvm_buffers->temp_cache_buffers = 15;
  EXPECT_FALSE(FindCheck(AssessJvmRisks(s17), "nio_cache_unbounded")->at_risk);
  s17.jvm_buffers->temp_cache_bytes = 20 * kMiB;  // 31 %
  s17.jvm_buffers->temp_cache_buffers = 20;
  std::vector<RiskFinding> risks17 = AssessJvmRisks(s17);
  const RiskFinding* f = FindCheck(risks17, "nio_cache_unbounded");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->at_risk);
  EXPECT_NE(f->explanation.find("20.0 MiB in 20 buffers"), std::string::npos) << f->explanation;
  EXPECT_NE(f->explanation.find("31 % of the direct memory limit"), std::string::npos)
      << f->explanation;
  EXPECT_NE(f->explanation.find("-Djdk.nio.maxCachedBufferSize="), std::string::npos);

  // JDK 25: outside the direct limit; only the container's limit counts.
  TargetSample s25 = Jvm(25);
  s25.jvm->settings["MaxDirectMemorySize"] = std::to_string(64 * kMiB);
  s25.jvm_buffers = Pool(0);
  s25.jvm_buffers->temp_cache_bytes = 40 * kMiB;
  s25.jvm_buffers->temp_cache_buffers = 8;
  EXPECT_FALSE(FindCheck(AssessJvmRisks(s25), "nio_cache_unbounded")->at_risk);
  CgroupMemory cg;
  cg.limit_bytes = 1024 * kMiB;  // 3.9 %
  s25.cgroup = cg;
  EXPECT_FALSE(FindCheck(AssessJvmRisks(s25), "nio_cache_unbounded")->at_risk);
  s25.cgroup->limit_bytes = 256 * kMiB;  // 15.6 %
  std::vector<RiskFinding> risks25 = AssessJvmRisks(s25);
  f = FindCheck(risks25, "nio_cache_unbounded");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->at_risk);
  EXPECT_NE(f->explanation.find("16 % of the container's memory limit (256.0 MiB)"),
            std::string::npos)
      << f->explanation;
}

// A cache that grows between two of the agent's reads is a risk whatever
// its share: JDK 25 (outside the direct limit), no container limit.
TEST(Findings, NioCacheGrowingBetweenReadsIsARisk) {
  constexpr uint64_t kMiB = 1 << 20;
  TargetSample s = Jvm(25);
  s.jvm_buffers = Pool(0);
  s.jvm_buffers->temp_cache_bytes = 64 * kMiB;
  s.jvm_buffers->temp_cache_buffers = 8;
  EXPECT_FALSE(FindCheck(AssessJvmRisks(s), "nio_cache_unbounded")->at_risk);  // first read
  s.jvm_buffers->temp_cache_previous_bytes = 60 * kMiB;  // 4 MiB more: not growth that matters
  EXPECT_FALSE(FindCheck(AssessJvmRisks(s), "nio_cache_unbounded")->at_risk);
  s.jvm_buffers->temp_cache_previous_bytes = 32 * kMiB;
  std::vector<RiskFinding> risks = AssessJvmRisks(s);
  const RiskFinding* f = FindCheck(risks, "nio_cache_unbounded");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->at_risk);
  EXPECT_NE(f->explanation.find("grown by 32.0 MiB since the agent's previous read"),
            std::string::npos)
      << f->explanation;
  // A bound (no agent walk) says nothing of growth.
  s.jvm_buffers->temp_cache_bytes.reset();
  s.jvm_buffers->temp_cache_buffers.reset();
  EXPECT_FALSE(FindCheck(AssessJvmRisks(s), "nio_cache_unbounded")->at_risk);
}

// Without the agent, NMT Other bounds the cache from above: a small bound
// decides "no risk"; a bound above a share decides nothing.
TEST(Findings, NioCacheUpperBoundDecidesOnlyWhenSmall) {
  TargetSample s = Jvm(17);  // NMT Other 100 MiB, direct limit = max heap 1 GiB: 10 %
  std::vector<RiskFinding> risks = AssessJvmRisks(s);
  const RiskFinding* f = FindCheck(risks, "nio_cache_unbounded");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->at_risk);
  EXPECT_NE(f->explanation.find("at most 100.0 MiB"), std::string::npos) << f->explanation;
  s.jvm->settings["MaxDirectMemorySize"] = std::to_string(256u << 20);  // 39 %
  EXPECT_EQ(FindCheck(AssessJvmRisks(s), "nio_cache_unbounded"), nullptr);
  bool listed = false;
  for (const MissingFigure& m : MissingFigures(s)) {
    listed |= m.figure == "nio_cache_unbounded (undecided)";
  }
  EXPECT_TRUE(listed);
  EXPECT_EQ(AdviseJvm(s).size(), 1u);  // the advice stays
  // JDK 25 with the pool but not the cache walk: NMT Other less the pool.
  TargetSample s25 = Jvm(25);
  s25.jvm_buffers = Pool(10u << 20);
  std::optional<TempBufferCache> c = TempBufferCacheOf(s25);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->bytes, 90u << 20);
  EXPECT_STREQ(c->source, "estimate");
  EXPECT_FALSE(FindCheck(AssessJvmRisks(s25), "nio_cache_unbounded")->at_risk);
  CgroupMemory cg;
  cg.limit_bytes = 512u << 20;  // 90 MiB at most is 18 %: undecided
  s25.cgroup = cg;
  EXPECT_EQ(FindCheck(AssessJvmRisks(s25), "nio_cache_unbounded"), nullptr);
  // On 17 the cache is inside the pool: no estimate from NMT.
  TargetSample s17b = Jvm(17);
  s17b.jvm_buffers = Pool(10u << 20);
  EXPECT_FALSE(TempBufferCacheOf(s17b));
}

// NMT off and the JVM trimming itself are settings: advice, never a risk
// (a fleet where NMT is off nowhere near every JVM is not "at risk").
TEST(Findings, NmtOffAndSelfTrimmingAreAdviceNotRisks) {
  TargetSample s = Jvm(21);
  s.jvm->settings["jdk.nio.maxCachedBufferSize"] = "262144";
  auto advised = [&](const char* check) {
    for (const Advice& a : AdviseJvm(s)) {
      if (a.check == check) return true;
    }
    return false;
  };
  EXPECT_FALSE(advised("nmt_off"));
  s.jvm->settings["NativeMemoryTracking"] = "off";
  EXPECT_TRUE(advised("nmt_off"));
  EXPECT_FALSE(advised("jvm_trims_itself"));
  s.jvm->settings["TrimNativeHeapInterval"] = "5000";
  EXPECT_TRUE(advised("jvm_trims_itself"));
  s.jvm->settings["TrimNativeHeapInterval"] = "0";
  EXPECT_FALSE(advised("jvm_trims_itself"));
  s.jvm->settings["TrimNativeHeapInterval"] = "5000";
  for (const RiskFinding& f : AssessJvmRisks(s)) {
    EXPECT_NE(f.check, "nmt_off");
    EXPECT_NE(f.check, "jvm_trims_itself");
  }
  for (const Advice& a : AdviseJvm(s)) {
    EXPECT_NE(std::find(kAdviceChecks.begin(), kAdviceChecks.end(), a.check), kAdviceChecks.end())
        << a.check;
  }
}

TEST(Findings, DirectMemoryHighIsDecidedOnTheDirectPool) {
  TargetSample s = Jvm(21);
  s.jvm->settings["MaxDirectMemorySize"] = std::to_string(64u << 20);
  // NMT Other (100 MiB) above the limit, pool unknown: undecided, never at risk.
  EXPECT_EQ(FindCheck(AssessJvmRisks(s), "direct_memory_high"), nullptr);
  bool listed = false;
  for (const MissingFigure& m : MissingFigures(s)) {
    listed |= m.figure.find("direct_memory_high") != std::string::npos;
  }
  EXPECT_TRUE(listed);
  // The pool holds 2 MiB (the rest of Other is FFM): not at risk.
  s.jvm_buffers = Pool(2u << 20);
  DirectMemory d = DirectMemoryOf(s);
  EXPECT_EQ(d.used_bytes, 2u << 20);
  EXPECT_EQ(d.nmt_other_bytes, 100u << 20);
  EXPECT_FALSE(FindCheck(AssessJvmRisks(s), "direct_memory_high")->at_risk);
  // The pool at 60 of 64 MiB: at risk.
  s.jvm_buffers = Pool(60u << 20);
  EXPECT_TRUE(FindCheck(AssessJvmRisks(s), "direct_memory_high")->at_risk);
}

TEST(Findings, NmtOtherBelowTheLimitDecidesWithoutThePool) {
  TargetSample s = Jvm(21);  // Other 100 MiB, limit = max heap 1 GiB
  std::vector<RiskFinding> risks = AssessJvmRisks(s);
  const RiskFinding* f = FindCheck(risks, "direct_memory_high");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->at_risk);
  EXPECT_TRUE(DirectMemoryOf(s).limit_is_max_heap);
}

TEST(Findings, GcStormFromSystemGcHoldsOffDirectMemoryHigh) {
  TargetSample s = Jvm(17);
  s.jvm->settings["MaxDirectMemorySize"] = std::to_string(64u << 20);
  s.jvm_buffers = Pool(63u << 20);
  JvmPerf perf;
  perf.gc = jvm::PerfGc{{{"G1 young", 100, 1.0}, {"G1 full", 4000, 20.0}}, "No GC", "System.gc()"};
  perf.gc_per_second = 65;
  perf.full_gc_per_second = 65;
  perf.gc_time_ratio = 0.5;
  s.jvm_perf = perf;
  auto r = AssessJvmRisks(s);
  EXPECT_TRUE(FindCheck(r, "direct_buffer_gc_storm")->at_risk);
  EXPECT_FALSE(FindCheck(r, "direct_memory_high")->at_risk);
  // Rare full collections, or another cause: no storm.
  s.jvm_perf->full_gc_per_second = 0.1;
  EXPECT_FALSE(FindCheck(AssessJvmRisks(s), "direct_buffer_gc_storm")->at_risk);
  EXPECT_TRUE(FindCheck(AssessJvmRisks(s), "direct_memory_high")->at_risk);
  s.jvm_perf->full_gc_per_second = 65;
  s.jvm_perf->gc->last_cause = "G1 Evacuation Pause";
  EXPECT_FALSE(FindCheck(AssessJvmRisks(s), "direct_buffer_gc_storm")->at_risk);
  // No rate yet (first read): the check is not decided.
  s.jvm_perf->gc_per_second.reset();
  s.jvm_perf->full_gc_per_second.reset();
  EXPECT_EQ(FindCheck(AssessJvmRisks(s), "direct_buffer_gc_storm"), nullptr);
}

// Issue 22: 2-5 young collections a second and one System.gc() every 5 s.
// The window with the System.gc() in it holds 4 young and 1 full
// collection, the last caused by System.gc(): 5 collections a second, one
// of them full. Not a storm; a storm is more than one full collection a
// second (the window is at least a second, so one System.gc() never is).
TEST(Findings, PeriodicSystemGcAmongYoungCollectionsIsNoStorm) {
  TargetSample s;
  JvmPerf perf;
  perf.gc = jvm::PerfGc{{{"G1 young collection pauses", 120, 0.3},
                         {"G1 full collection pauses", 5, 0.1},
                         {"G1 concurrent cycle pauses", 0, 0}},
                        "No GC",
                        "System.gc()"};
  perf.gc_per_second = 5;
  perf.full_gc_per_second = 1.0;
  s.jvm_perf = perf;
  std::vector<RiskFinding> risks = AssessJvmRisks(s);
  const RiskFinding* f = FindCheck(risks, "direct_buffer_gc_storm");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->at_risk) << f->explanation;
  EXPECT_NE(f->explanation.find("1.0 full collections a second (of 5.0 in all)"), std::string::npos)
      << f->explanation;
  // Heap churn: hundreds of young collections, no full one.
  s.jvm_perf->gc_per_second = 320;
  s.jvm_perf->full_gc_per_second = 0;
  s.jvm_perf->gc->last_cause = "G1 Evacuation Pause";
  EXPECT_FALSE(FindCheck(AssessJvmRisks(s), "direct_buffer_gc_storm")->at_risk);
  // Two System.gc() a second is one more than the rule allows: a storm.
  s.jvm_perf->gc_per_second = 4;
  s.jvm_perf->full_gc_per_second = 2;
  s.jvm_perf->gc->last_cause = "System.gc()";
  EXPECT_TRUE(FindCheck(AssessJvmRisks(s), "direct_buffer_gc_storm")->at_risk);
}

TEST(Findings, MallocStatisticsReadBeforeTheLastTrimAreStale) {
  TargetSample s;
  s.malloc = MallocStats{};
  s.malloc->read_at = std::chrono::system_clock::now();
  s.malloc->read_steady = std::chrono::steady_clock::now();
  EXPECT_FALSE(MallocStatsStale(s));
  s.last_trim_at = s.malloc->read_at + std::chrono::seconds(1);
  s.last_trim_steady = s.malloc->read_steady + std::chrono::seconds(1);
  EXPECT_TRUE(MallocStatsStale(s));
  s.malloc->read_at = *s.last_trim_at + std::chrono::milliseconds(5);
  s.malloc->read_steady = *s.last_trim_steady + std::chrono::milliseconds(5);
  EXPECT_FALSE(MallocStatsStale(s));
}

TEST(Findings, AStepOfTheWallClockDoesNotMakeStatisticsStaleOrFresh) {
  // An NTP correction or a resumed VM between the trim and the read: the
  // wall times say the opposite of what happened; the monotonic ones decide.
  TargetSample s;
  s.malloc = MallocStats{};
  const auto wall = std::chrono::system_clock::now();
  const auto steady = std::chrono::steady_clock::now();
  s.last_trim_at = wall;
  s.last_trim_steady = steady;
  s.malloc->read_at = wall - std::chrono::hours(1);  // the clock stepped back
  s.malloc->read_steady = steady + std::chrono::milliseconds(5);
  EXPECT_FALSE(MallocStatsStale(s));
  s.malloc->read_at = wall + std::chrono::hours(1);  // read before it, then stepped ahead
  s.malloc->read_steady = steady - std::chrono::milliseconds(5);
  EXPECT_TRUE(MallocStatsStale(s));
}

// A fragmented program, before and after a trim. malloc_info lists 125 MiB
// of free chunks, 100 MiB of it in whole pages inside chunks (what a trim
// madvises) and a 256 KiB main arena top; the rest (25 MiB) is free space no
// trim takes. A trim leaves the chunks in the bins with their pages gone,
// so the same statistics are read after it: only the resident memory tells
// the two apart, and a trim right after a trim is offered nothing.
TEST(Findings, TrimmableEstimateIsTheResidentPartOfWhatATrimTakes) {
  constexpr uint64_t kMiB = 1 << 20;
  TargetSample s;
  GlibcHeaps g;
  g.breakdown.arena_heaps = 125 * kMiB;
  g.breakdown.main_arena = kMiB / 2;
  g.breakdown.total = 130 * kMiB;
  s.glibc = g;
  MallocStats m;
  for (int nr = 0; nr < 9; ++nr) {
    jvm::MallocArena a;
    a.nr = nr;
    a.bin_pages_bytes = (nr == 0 ? 4 : 12) * kMiB;
    a.top_bytes = nr == 0 ? kMiB / 4 : 0;
    m.info.arenas.push_back(a);
  }
  m.info.system_current = 132 * kMiB;
  m.info.total_rest_bytes = 124 * kMiB + kMiB / 2;
  m.info.total_fast_bytes = kMiB / 2;
  s.malloc = m;
  // systrim keeps 33 bytes of the top and gives whole pages: 63 of 64.
  constexpr uint64_t kTop = 63 * 4096;
  // Before: in use 132 - 125 = 7 MiB, resident free 125.5 - 7 = 118.5 MiB,
  // of which 25 MiB less the top's pages no trim takes.
  EXPECT_EQ(GlibcFreeResident(s), 118 * kMiB + kMiB / 2);
  EXPECT_EQ(TrimmableEstimate(s), 93 * kMiB + kMiB / 2 + kTop);
  // After: the same statistics, 100 MiB less resident. Resident free is
  // 18.5 MiB, all of it beside live blocks or in small chunks.
  s.glibc->breakdown.arena_heaps = 25 * kMiB;
  EXPECT_EQ(GlibcFreeResident(s), 18 * kMiB + kMiB / 2);
  EXPECT_EQ(TrimmableEstimate(s), 0u);
  // Half of the freed pages resident again (freed since): half come back.
  s.glibc->breakdown.arena_heaps = 75 * kMiB;
  EXPECT_EQ(TrimmableEstimate(s), 43 * kMiB + kMiB / 2 + kTop);
  // Without the smaps read nothing says what is resident.
  s.glibc.reset();
  EXPECT_EQ(TrimmableEstimate(s), std::nullopt);
}

TEST(Findings, MissingFiguresSayWhy) {
  TargetSample s = Jvm(17);
  bool malloc = false, pools = false;
  for (const MissingFigure& m : MissingFigures(s)) {
    if (m.figure.find("malloc statistics") != std::string::npos) {
      malloc = true;
      EXPECT_NE(m.why.find("System.native_heap_info"), std::string::npos) << m.why;
    }
    pools |= m.figure.find("buffer pools") != std::string::npos;
  }
  EXPECT_TRUE(malloc);
  EXPECT_TRUE(pools);
}

std::string WhyOf(const TargetSample& s, std::string_view figure) {
  for (const MissingFigure& m : MissingFigures(s)) {
    if (m.figure.find(figure) != std::string::npos) return m.why;
  }
  return "(not missing)";
}

// Each missing figure says what to do, or when it will be read when there
// is nothing to do.
TEST(Findings, MissingFiguresSayWhatToDo) {
  TargetSample s = Jvm(21);
  s.jvm->attachable = false;
  s.jvm->attach_error =
      "attach: the JVM's attach socket did not appear within 2000 ms; memtrimd will not signal "
      "this JVM again";
  s.jvm->attach_cause = Cause::kNoAttachListener;
  EXPECT_NE(WhyOf(s, "NMT, JVM flags").find("-XX:+StartAttachListener"), std::string::npos)
      << WhyOf(s, "NMT, JVM flags");
  s.jvm->attach_error =
      "attach: not signalling: the JVM's attach socket is owner-only: permission denied (needs "
      "CAP_DAC_OVERRIDE or the target's uid)";
  s.jvm->attach_cause = Cause::kNeedsCapability;
  EXPECT_NE(WhyOf(s, "NMT, JVM flags").find("give memtrimd the capability"), std::string::npos);
  EXPECT_NE(WhyOf(s, "malloc statistics").find("attach socket"), std::string::npos);

  // Right after memtrimd found it: nothing to do, and when it comes.
  s = Jvm(21);
  EXPECT_NE(WhyOf(s, "malloc statistics").find("not read yet"), std::string::npos);
  EXPECT_NE(WhyOf(s, "malloc statistics").find("every --jvm.interval"), std::string::npos);
  s.agent_loaded = true;
  EXPECT_NE(WhyOf(s, "malloc statistics").find("every --smaps.interval"), std::string::npos);
  s.agent_unreachable = "agent: no socket at /proc/9/root/tmp/memtrimd-agent.9";
  s.agent_unreachable_cause = Cause::kNoSocket;
  EXPECT_NE(WhyOf(s, "malloc statistics").find("stderr"), std::string::npos);

  GlibcHeaps g;
  s = Jvm(17);
  s.glibc = g;  // the heap's range is not known
  EXPECT_NE(WhyOf(s, "RSS account").find("next --jvm.interval"), std::string::npos);
  EXPECT_NE(WhyOf(s, "GC counters").find("-XX:-UsePerfData"), std::string::npos);
}

TEST(Findings, EveryCollectorFailureSaysWhatToDo) {
  // "open /proc/77/smaps: Permission denied": no capability named.
  EXPECT_NE(CollectorErrorAction("glibc", Cause::kNone).find("CAP_SYS_PTRACE"), std::string::npos);
  // "attach: process 9 is gone"
  EXPECT_NE(CollectorErrorAction("jvm", Cause::kGone).find("exited"), std::string::npos);
  // "open memory.max: No such file or directory"
  EXPECT_NE(CollectorErrorAction("cgroup", Cause::kNone).find("--target.memory-limit"),
            std::string::npos);
  for (const char* c : {"process", "cgroup", "hsperfdata", "agent", "jvm", "glibc", "other"}) {
    EXPECT_FALSE(CollectorErrorAction(c, Cause::kNone).empty()) << c;
  }
}

TEST(Findings, ArenaCapIsNotPresentedAsASafeFix) {
  TargetSample s;
  EXPECT_EQ(MallocEnvAdvice(s), "");
  s.malloc_env.emplace();
  EXPECT_EQ(MallocEnvAdvice(s), "");
  (*s.malloc_env)["MALLOC_ARENA_MAX"] = "2";
  std::string advice = MallocEnvAdvice(s);
  EXPECT_NE(advice.find("not a safe fix"), std::string::npos);
  EXPECT_NE(advice.find("trim first"), std::string::npos);
}

TEST(Findings, EveryCheckIsListedAndEveryListedCheckIsMade) {
  TargetSample s = Jvm(17);
  s.jvm->settings["TrimNativeHeapInterval"] = "0";
  JvmPerf perf;
  perf.gc = jvm::PerfGc{{{"G1 young", 1, 0.1}}, "No GC", "G1 Evacuation Pause"};
  perf.gc_per_second = 0.1;
  perf.full_gc_per_second = 0;
  s.jvm_perf = perf;
  std::set<std::string> made;
  for (const RiskFinding& f : AssessJvmRisks(s)) {
    made.insert(f.check);
    EXPECT_NE(std::find(kRiskChecks.begin(), kRiskChecks.end(), f.check), kRiskChecks.end())
        << f.check << " is not in kRiskChecks";
  }
  for (std::string_view c : kRiskChecks) EXPECT_EQ(made.count(std::string(c)), 1u) << c;
}

TEST(Findings, NothingIsClaimedWithoutAttach) {
  TargetSample s = Jvm(25);
  s.jvm->attachable = false;
  EXPECT_TRUE(AssessJvmRisks(s).empty());
  EXPECT_FALSE(DirectMemoryOf(s).used_bytes.has_value());
}

}  // namespace
}  // namespace memtrimd

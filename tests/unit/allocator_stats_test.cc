// The agent's "allocator" answers and its trim answers under each allocator
// (collectors/agent/client/allocator_stats.h, ParseAgentTrim), against answers
// recorded from libmemtrimd_agent.so under glibc, jemalloc, tcmalloc and
// mimalloc (fixtures/agent/allocator/, made by record.sh there), and against
// malformed input.
#include <gtest/gtest.h>

#include <string>

#include "collectors/agent/client/agent_client.h"
#include "collectors/agent/client/allocator_stats.h"
#include "tests/unit/fixtures.h"

namespace memtrimd::agent {
namespace {

std::string ReadFixture(const std::string& name) {
  return test::ReadFixture("agent/allocator/" + name);
}

AllocatorStats Parsed(const std::string& name) {
  Result<AllocatorStats> s = ParseAllocatorStats(ReadFixture(name));
  EXPECT_TRUE(s.ok()) << name << ": " << s.status().message();
  return s.ok() ? *s : AllocatorStats{};
}

TEST(AllocatorStatsTest, RecordedGlibc) {
  AllocatorStats s = Parsed("glibc_allocator.txt");
  EXPECT_EQ(s.allocator, Allocator::kGlibc);
  EXPECT_EQ(s.object, "/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ(s.Get("arena"), 69185536u);
  EXPECT_EQ(s.Get("hblkhd"), 0u);
  EXPECT_EQ(s.Get("uordblks"), 3680480u);
  EXPECT_EQ(s.Get("fordblks"), 65505056u);
  EXPECT_EQ(s.Get("keepcost"), 132368u);
  EXPECT_EQ(s.bytes.size(), 5u);
  EXPECT_FALSE(s.dirty_decay_ms);
  AllocatorMeasures m = CommonMeasures(s);
  EXPECT_EQ(m.allocated, 3680480u);
  EXPECT_EQ(m.held, 69185536u);
  EXPECT_EQ(m.free_kept, 65505056u);
  EXPECT_FALSE(m.released);
  // glibc's arena is in use + free, by its own definition.
  EXPECT_EQ(*m.held, *m.allocated + *m.free_kept);
}

TEST(AllocatorStatsTest, RecordedJemalloc) {
  AllocatorStats s = Parsed("jemalloc_allocator.txt");
  EXPECT_EQ(s.allocator, Allocator::kJemalloc);
  EXPECT_EQ(s.object, "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2");
  EXPECT_EQ(s.Get("allocated"), 5327312u);
  EXPECT_EQ(s.Get("active"), 19824640u);
  EXPECT_EQ(s.Get("resident"), 80252928u);
  EXPECT_EQ(s.Get("mapped"), 92827648u);
  EXPECT_EQ(s.Get("retained"), 9932800u);
  EXPECT_EQ(s.Get("metadata"), 4353728u);
  EXPECT_EQ(s.Get("dirty"), 56225792u);
  EXPECT_EQ(s.Get("muzzy"), 0u);
  EXPECT_EQ(s.dirty_decay_ms, 10000);
  EXPECT_EQ(s.muzzy_decay_ms, 0);
  AllocatorMeasures m = CommonMeasures(s);
  EXPECT_EQ(m.allocated, 5327312u);
  EXPECT_EQ(m.held, 80252928u);
  EXPECT_EQ(m.free_kept, 56225792u);
  EXPECT_EQ(m.released, 9932800u);

  // The purge moved the dirty pages to retained (address space jemalloc
  // keeps, pages given back).
  AllocatorMeasures after = CommonMeasures(Parsed("jemalloc_allocator_after_trim.txt"));
  EXPECT_EQ(after.free_kept, 0u);
  EXPECT_EQ(after.allocated, m.allocated);
  EXPECT_EQ(*after.released - *m.released, 56225792u);
  EXPECT_EQ(*m.held - *after.held, 56225792u);
}

TEST(AllocatorStatsTest, RecordedTcmalloc) {
  AllocatorStats s = Parsed("tcmalloc_allocator.txt");
  EXPECT_EQ(s.allocator, Allocator::kTcmalloc);
  EXPECT_EQ(s.object, "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4");
  EXPECT_EQ(s.Get("allocated"), 2948552u);
  EXPECT_EQ(s.Get("heap_size"), 30408704u);
  EXPECT_EQ(s.Get("pageheap_free"), 2555904u);
  EXPECT_EQ(s.Get("pageheap_unmapped"), 0u);
  EXPECT_EQ(s.Get("central_cache_free"), 7542056u);
  EXPECT_EQ(s.Get("transfer_cache_free"), 5819648u);
  EXPECT_EQ(s.Get("thread_cache_free"), 11542544u);
  AllocatorMeasures m = CommonMeasures(s);
  EXPECT_EQ(m.allocated, 2948552u);
  EXPECT_EQ(m.held, 30408704u);
  EXPECT_EQ(m.free_kept, 2555904u);
  EXPECT_EQ(m.released, 0u);

  // ReleaseFreeMemory unmapped the free page heap: held shrinks by it.
  AllocatorMeasures after = CommonMeasures(Parsed("tcmalloc_allocator_after_trim.txt"));
  EXPECT_EQ(after.free_kept, 0u);
  EXPECT_EQ(after.released, 2555904u);
  EXPECT_EQ(after.held, 30408704u - 2555904u);
}

TEST(AllocatorStatsTest, RecordedMimallocHasOnlyCommit) {
  AllocatorStats s = Parsed("mimalloc_allocator.txt");
  EXPECT_EQ(s.allocator, Allocator::kMimalloc);
  EXPECT_EQ(s.object, "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2");
  EXPECT_EQ(s.Get("committed"), 113278976u);
  EXPECT_EQ(s.Get("committed_peak"), 113278976u);
  AllocatorMeasures m = CommonMeasures(s);
  EXPECT_EQ(m.held, 113278976u);
  EXPECT_FALSE(m.allocated);
  EXPECT_FALSE(m.free_kept);
  EXPECT_FALSE(m.released);
}

TEST(AllocatorStatsTest, RecordedTrims) {
  struct Case {
    const char* file;
    Allocator allocator;
    const char* call;
    bool free_kept;
  };
  for (const Case& c : {Case{"glibc_trim.txt", Allocator::kGlibc, "malloc_trim", false},
                        Case{"jemalloc_trim.txt", Allocator::kJemalloc, "arena.4096.purge", true},
                        Case{"tcmalloc_trim.txt", Allocator::kTcmalloc, "ReleaseFreeMemory", true},
                        Case{"mimalloc_trim.txt", Allocator::kMimalloc, "mi_collect", false}}) {
    SCOPED_TRACE(c.file);
    Result<AgentTrim> t = ParseAgentTrim(ReadFixture(c.file));
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_EQ(t->allocator, c.allocator);
    EXPECT_EQ(t->call, c.call);
    EXPECT_EQ(t->result, 1);
    EXPECT_EQ(t->free_kept_before.has_value(), c.free_kept);
    EXPECT_EQ(t->free_kept_after.has_value(), c.free_kept);
    // Only mimalloc's answer carries its committed bytes around the call.
    EXPECT_EQ(t->committed_before.has_value(), c.allocator == Allocator::kMimalloc);
    EXPECT_EQ(t->committed_after.has_value(), c.allocator == Allocator::kMimalloc);
  }
  Result<AgentTrim> je = ParseAgentTrim(ReadFixture("jemalloc_trim.txt"));
  ASSERT_TRUE(je.ok());
  EXPECT_EQ(je->free_kept_before, 56225792u);
  EXPECT_EQ(je->free_kept_after, 0u);
  EXPECT_EQ(je->rss_before, 81162240u);
  EXPECT_EQ(je->rss_after, 25399296u);
  Result<AgentTrim> tc = ParseAgentTrim(ReadFixture("tcmalloc_trim.txt"));
  ASSERT_TRUE(tc.ok());
  EXPECT_EQ(tc->free_kept_before, 2555904u);
  EXPECT_EQ(tc->free_kept_after, 0u);
  // mimalloc: the fragmenter's freed pages are all in segments its live
  // threads still use, so the collect gives back nothing; the 8 KiB more is
  // the agent thread's own heap data (mi_thread_init, mmapped).
  Result<AgentTrim> mi = ParseAgentTrim(ReadFixture("mimalloc_trim.txt"));
  ASSERT_TRUE(mi.ok());
  EXPECT_EQ(mi->committed_before, 113278976u);
  EXPECT_EQ(mi->committed_after, 113287168u);
  EXPECT_EQ(mi->rss_after - mi->rss_before, 8192u);
}

TEST(AllocatorStatsTest, OldTrimAnswerIsGlibcMallocTrim) {
  // An agent from before other allocators (version 1): fixtures/agent/trim.txt.
  Result<AgentTrim> t = ParseAgentTrim(test::ReadFixture("agent/trim.txt"));
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->allocator, Allocator::kGlibc);
  EXPECT_EQ(t->call, "malloc_trim");
  EXPECT_FALSE(t->free_kept_before);
  EXPECT_FALSE(t->free_kept_after);
}

TEST(AllocatorStatsTest, BadTrimWords) {
  const std::string base = "duration_ns=1\nrss_before=2\nrss_after=3\nresult=1\n";
  EXPECT_TRUE(ParseAgentTrim(base + "allocator=jemalloc\ncall=arena.4096.purge\n").ok());
  EXPECT_FALSE(ParseAgentTrim(base + "allocator=jezmalloc\n").ok());
  EXPECT_FALSE(ParseAgentTrim(base + "allocator=glibc\nallocator=glibc\n").ok());
  EXPECT_FALSE(ParseAgentTrim(base + "call=\n").ok());
  EXPECT_FALSE(ParseAgentTrim(base + "call=a\ncall=b\n").ok());
  EXPECT_FALSE(ParseAgentTrim(base + "free_kept_before=x\n").ok());
  EXPECT_FALSE(ParseAgentTrim(base + "free_kept_after=1\nfree_kept_after=1\n").ok());
  EXPECT_FALSE(ParseAgentTrim(base + "committed_before=-1\n").ok());
  EXPECT_FALSE(ParseAgentTrim(base + "committed_after=1\ncommitted_after=2\n").ok());
}

TEST(AllocatorStatsTest, UnknownAllocatorHasNoFigures) {
  Result<AllocatorStats> s =
      ParseAllocatorStats("allocator=unknown\nobject=/opt/app/bin/server\narena=5\n");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->allocator, Allocator::kUnknown);
  EXPECT_EQ(s->object, "/opt/app/bin/server");
  EXPECT_TRUE(s->bytes.empty());  // glibc's key means nothing here
  AllocatorMeasures m = CommonMeasures(*s);
  EXPECT_FALSE(m.allocated || m.held || m.free_kept || m.released);
}

TEST(AllocatorStatsTest, FiguresTheAllocatorRefusedAreAbsent) {
  // jemalloc without arenas.page: no dirty/muzzy, so no free_kept.
  Result<AllocatorStats> s =
      ParseAllocatorStats("allocator=jemalloc\nobject=/x.so\nallocated=1\nresident=9\n");
  ASSERT_TRUE(s.ok()) << s.status().message();
  AllocatorMeasures m = CommonMeasures(*s);
  EXPECT_EQ(m.held, 9u);
  EXPECT_FALSE(m.free_kept);
  EXPECT_FALSE(m.released);
  // Only one of dirty and muzzy: still no sum.
  s = ParseAllocatorStats("allocator=jemalloc\nobject=/x.so\ndirty=4096\n");
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(CommonMeasures(*s).free_kept);
}

TEST(AllocatorStatsTest, SignedDecayAndNewerKeys) {
  Result<AllocatorStats> s = ParseAllocatorStats(
      "allocator=jemalloc\nobject=/x.so\ndirty_decay_ms=-1\nmuzzy_decay_ms=0\n"
      "future=words here\nfuture_bytes=12\n");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->dirty_decay_ms, -1);
  EXPECT_EQ(s->muzzy_decay_ms, 0);
  EXPECT_TRUE(s->bytes.empty());
}

TEST(AllocatorStatsTest, Malformed) {
  const std::string head = "allocator=jemalloc\nobject=/x.so\n";
  EXPECT_FALSE(ParseAllocatorStats("").ok());
  EXPECT_FALSE(ParseAllocatorStats(head + "allocated=12").ok());  // cut short
  EXPECT_FALSE(ParseAllocatorStats(head + "allocated\n").ok());
  EXPECT_FALSE(ParseAllocatorStats(head + "allocated=12x\n").ok());
  EXPECT_FALSE(ParseAllocatorStats(head + "allocated=-1\n").ok());
  EXPECT_FALSE(ParseAllocatorStats(head + "allocated=1\nallocated=1\n").ok());
  EXPECT_FALSE(ParseAllocatorStats(head + "dirty_decay_ms=--1\n").ok());
  EXPECT_FALSE(ParseAllocatorStats(head + "dirty_decay_ms=9223372036854775808\n").ok());
  EXPECT_FALSE(ParseAllocatorStats(head + "muzzy_decay_ms=1\nmuzzy_decay_ms=1\n").ok());
  EXPECT_FALSE(ParseAllocatorStats("object=/x.so\n").ok());
  EXPECT_FALSE(ParseAllocatorStats("allocator=jemalloc\n").ok());
  EXPECT_FALSE(ParseAllocatorStats("allocator=dlmalloc\nobject=/x.so\n").ok());
  EXPECT_FALSE(ParseAllocatorStats(head + "allocator=glibc\n").ok());
  EXPECT_FALSE(ParseAllocatorStats(head + "object=/y.so\n").ok());
  EXPECT_FALSE(ParseAllocatorStats("allocator=glibc\nobject=\n").ok());
  // The smallest decay jemalloc could send still parses.
  EXPECT_TRUE(ParseAllocatorStats(head + "dirty_decay_ms=-9223372036854775808\n").ok());
}

TEST(AllocatorStatsTest, SumsThatOverflowAreAbsent) {
  Result<AllocatorStats> s = ParseAllocatorStats(
      "allocator=glibc\nobject=/libc.so.6\narena=1\nhblkhd=18446744073709551615\nuordblks=1\n");
  ASSERT_TRUE(s.ok()) << s.status().message();
  AllocatorMeasures m = CommonMeasures(*s);
  EXPECT_FALSE(m.allocated);
  EXPECT_FALSE(m.held);
}

}  // namespace
}  // namespace memtrimd::agent

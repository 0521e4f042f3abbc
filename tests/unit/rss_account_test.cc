#include "daemon/analysis/rss_account.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <regex>

namespace memtrimd {
namespace {

constexpr uint64_t kMiB = 1u << 20;

jvm::NmtCategory Category(const char* name, uint64_t committed, uint64_t malloc = 0) {
  jvm::NmtCategory c;
  c.name = name;
  c.committed = committed;
  if (malloc) c.malloc_bytes = malloc;
  return c;
}

// A JVM sample: smaps parts, NMT categories, optional malloc statistics.
TargetSample Jvm(glibc::RssBreakdown b, std::vector<jvm::NmtCategory> cats) {
  TargetSample s;
  GlibcHeaps g;
  b.total = b.file_and_shared + b.java_heap + b.arena_heaps + b.main_arena + b.other_anonymous;
  g.breakdown = b;
  g.java_heap_known = true;
  s.glibc = g;
  JvmSample j;
  j.attachable = true;
  jvm::NmtSummary n;
  n.enabled = true;
  for (auto& c : cats) n.total_committed += c.committed;
  n.categories = std::move(cats);
  j.nmt = n;
  s.jvm = j;
  return s;
}

void ExpectAddsUp(const RssAccount& a) {
  uint64_t sum = a.file + a.java_heap.value_or(0) + (a.nmt ? a.nmt->total() : 0) +
                 a.glibc_free.value_or(0) + a.allocator_free.value_or(0) + a.outside;
  EXPECT_EQ(sum, a.rss);
  uint64_t parts = 0;
  for (const auto& [name, bytes] : AccountParts(a)) parts += bytes;
  EXPECT_EQ(parts, a.rss);
  // The printed equation adds up too: RSS X = a + b + ... in tenths of MiB.
  std::string eq = a.Equation();
  std::regex num(R"((\d+)\.(\d) MiB)");
  std::vector<uint64_t> tenths;
  for (auto it = std::sregex_iterator(eq.begin(), eq.end(), num); it != std::sregex_iterator();
       ++it) {
    tenths.push_back(std::stoull((*it)[1]) * 10 + std::stoull((*it)[2]));
  }
  ASSERT_GE(tenths.size(), 2u) << eq;
  uint64_t rhs = 0;
  for (std::size_t i = 1; i < tenths.size(); ++i) rhs += tenths[i];
  EXPECT_EQ(tenths[0], rhs) << eq;
  // The parts as a legend prints them: the equation's figures, the NMT
  // kinds adding up to its NMT-known term, each within a tenth of its value.
  const std::vector<std::string> shown = AccountPartsShown(a);
  const auto shown_parts = AccountParts(a);
  ASSERT_EQ(shown.size(), shown_parts.size());
  std::vector<uint64_t> terms;
  for (std::size_t i = 0; i < shown_parts.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(shown[i], m, num)) << shown[i];
    const uint64_t t = std::stoull(m[1]) * 10 + std::stoull(m[2]);
    EXPECT_LE(std::fabs(static_cast<double>(t) -
                        static_cast<double>(shown_parts[i].second) / (1024.0 * 1024.0 / 10.0)),
              1.0)
        << shown_parts[i].first;
    const bool nmt = std::string_view(shown_parts[i].first).rfind("nmt_", 0) == 0;
    const bool after_nmt =
        i > 0 && std::string_view(shown_parts[i - 1].first).rfind("nmt_", 0) == 0;
    if (nmt && after_nmt) {
      terms.back() += t;
    } else {
      terms.push_back(t);
    }
  }
  EXPECT_EQ(terms, std::vector<uint64_t>(tenths.begin() + 1, tenths.end())) << eq;
}

TEST(RssAccount, CommittedButUntouchedGcMemoryIsNotRss) {
  // -Xms1g, nothing allocated: G1 committed 78 MiB of bitmaps it never
  // touched; only 12 MiB of the JVM's own mappings are resident.
  glibc::RssBreakdown b;
  b.file_and_shared = 21 * kMiB;
  b.java_heap = 2 * kMiB;
  b.main_arena = 1 * kMiB;
  b.arena_heaps = 6 * kMiB;
  b.other_anonymous = 12 * kMiB;
  TargetSample s =
      Jvm(b, {Category("Java Heap", 1024 * kMiB), Category("GC", 78 * kMiB, kMiB),
              Category("Code", 8 * kMiB, 2 * kMiB), Category("Symbol", 1 * kMiB, 1 * kMiB)});
  auto a = AccountRss(s);
  ASSERT_TRUE(a);
  ExpectAddsUp(*a);
  ASSERT_TRUE(a->nmt);
  // 12 MiB of anonymous mappings; without malloc statistics the JVM's 4 MiB
  // of malloc'd memory may sit there too, leaving 8 MiB for its mappings:
  // code's 6 MiB mapped part stays whole, GC's is cut to the rest.
  EXPECT_EQ(a->nmt->code, 8 * kMiB);
  EXPECT_EQ(a->nmt->gc, 1 * kMiB + 2 * kMiB);
  EXPECT_EQ(a->nmt_committed_untouched, 75 * kMiB);
  EXPECT_TRUE(a->outside_is_estimate);
  EXPECT_FALSE(a->glibc_free);
}

TEST(RssAccount, MallocStatisticsSplitFreeMemoryFromOutsideNmt) {
  glibc::RssBreakdown b;
  b.file_and_shared = 20 * kMiB;
  b.java_heap = 100 * kMiB;
  b.main_arena = 10 * kMiB;
  b.arena_heaps = 300 * kMiB;
  b.other_anonymous = 150 * kMiB;  // 100 MiB of it: mmapped malloc chunks
  TargetSample s =
      Jvm(b, {Category("Java Heap", 512 * kMiB), Category("Other", 120 * kMiB, 120 * kMiB),
              Category("Metaspace", 30 * kMiB, 0), Category("Thread", 20 * kMiB, kMiB)});
  MallocStats m;
  m.info.system_current = 320 * kMiB;  // arenas
  m.info.total_rest_bytes = 200 * kMiB;
  m.info.total_fast_bytes = 0;
  m.info.total_mmap_bytes = 100 * kMiB;
  s.malloc = m;
  auto a = AccountRss(s);
  ASSERT_TRUE(a);
  ExpectAddsUp(*a);
  // In use in arenas: 120 MiB; resident arena memory 310 MiB: 190 MiB free kept.
  EXPECT_EQ(a->glibc_free, 190 * kMiB);
  // malloc in use: 120 + 100 MiB; NMT knows 121 MiB of malloc; the JVM's
  // mappings (50 MiB) hold its 49 MiB of mapped categories.
  EXPECT_EQ(a->nmt->buffers, 120 * kMiB);
  EXPECT_EQ(a->nmt->total(), 170 * kMiB);
  EXPECT_EQ(a->outside, 580 * kMiB - 20 * kMiB - 100 * kMiB - 170 * kMiB - 190 * kMiB);
  EXPECT_FALSE(a->outside_is_estimate);
}

TEST(RssAccount, ProgramWithoutJvm) {
  TargetSample s;
  GlibcHeaps g;
  g.breakdown.file_and_shared = 5 * kMiB;
  g.breakdown.arena_heaps = 64 * kMiB;
  g.breakdown.other_anonymous = 1 * kMiB;
  g.breakdown.total = 70 * kMiB;
  s.glibc = g;
  auto a = AccountRss(s);
  ASSERT_TRUE(a);
  EXPECT_FALSE(a->is_jvm);
  EXPECT_FALSE(a->java_heap);
  EXPECT_FALSE(a->nmt);
  EXPECT_EQ(a->outside, 65 * kMiB);
  ExpectAddsUp(*a);
  EXPECT_EQ(AccountParts(*a).back().first, std::string("native"));
}

TEST(RssAccount, JvmWithoutAHeapRangeHasNoAccount) {
  TargetSample s = Jvm({}, {});
  s.glibc->java_heap_known = false;
  EXPECT_FALSE(AccountRss(s));
}

TEST(RssAccount, NeverNegativeAndAlwaysAddsUp) {
  std::mt19937_64 rng(7);
  auto r = [&](uint64_t max) { return std::uniform_int_distribution<uint64_t>(0, max)(rng); };
  for (int i = 0; i < 2000; ++i) {
    glibc::RssBreakdown b;
    b.file_and_shared = r(500) * kMiB;
    b.java_heap = r(2000) * kMiB + r(4095);
    b.main_arena = r(100) * kMiB;
    b.arena_heaps = r(1000) * kMiB;
    b.other_anonymous = r(1000) * kMiB + r(4095);
    TargetSample s = Jvm(
        b,
        {Category("Java Heap", r(4000) * kMiB), Category("Other", r(2000) * kMiB, r(2000) * kMiB),
         Category("GC", r(300) * kMiB, r(10) * kMiB), Category("Code", r(240) * kMiB, r(5) * kMiB),
         Category("Thread", r(100) * kMiB, r(3) * kMiB), Category("Metaspace", r(200) * kMiB)});
    if (i % 2) {
      MallocStats m;
      m.info.system_current = r(2000) * kMiB;
      m.info.total_rest_bytes = r(2000) * kMiB;
      m.info.total_fast_bytes = r(10) * kMiB;
      m.info.total_mmap_bytes = r(2000) * kMiB;
      s.malloc = m;
    }
    auto a = AccountRss(s);
    ASSERT_TRUE(a);
    ExpectAddsUp(*a);
    EXPECT_LE(a->outside, a->rss);  // unsigned: a negative part would wrap
    if (::testing::Test::HasFailure()) break;
  }
}

// Issue 33: reads of different moments. Two reads are of one moment unless
// the RSS right after each differs by more than 10 % and more than 1 MiB.
TEST(RssAccount, RssInStepWithinTenPercentOrOneMiB) {
  EXPECT_TRUE(RssInStep(100 * kMiB, 110 * kMiB));      // 10 % of the larger: 9.1 %
  EXPECT_TRUE(RssInStep(100 * kMiB, 111 * kMiB));      // 9.9 %
  EXPECT_FALSE(RssInStep(100 * kMiB, 112 * kMiB));     // 10.7 %
  EXPECT_FALSE(RssInStep(112 * kMiB, 100 * kMiB));     // either way round
  EXPECT_TRUE(RssInStep(5 * kMiB, 6 * kMiB));          // 1 MiB apart: nothing to speak of
  EXPECT_FALSE(RssInStep(5 * kMiB, 6 * kMiB + 4096));  // more than 1 MiB and 10 %
  EXPECT_TRUE(RssInStep(0, 500 * kMiB));               // not known: not held against it
  EXPECT_TRUE(RssInStep(40 * kMiB, 0));
}

// A JVM that grew from 40 to 98 MiB between the smaps read and NMT's: with
// NMT's parts set into the older read, "outside NMT" came out 0 B. NMT is
// left out (said so), and the rest is all native memory of the smaps read.
TEST(RssAccount, NmtOfAnotherMomentIsLeftOutNotSqueezedIn) {
  glibc::RssBreakdown b;
  b.file_and_shared = 20 * kMiB;
  b.java_heap = 8 * kMiB;
  b.main_arena = 2 * kMiB;
  b.arena_heaps = 0;
  b.other_anonymous = 10 * kMiB;
  TargetSample s =
      Jvm(b, {Category("Java Heap", 64 * kMiB), Category("Other", 50 * kMiB, 50 * kMiB),
              Category("Thread", 8 * kMiB, kMiB)});
  const auto smaps_at = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
  s.glibc->read_at = smaps_at;
  s.glibc->status_rss_bytes = 40 * kMiB;
  s.jvm->nmt_read_at = smaps_at + std::chrono::seconds(35);
  s.jvm->nmt_rss_bytes = 98 * kMiB;
  procfs::ProcStatus now;
  now.rss_anon = 98 * kMiB;
  s.process = now;
  auto a = AccountRss(s);
  ASSERT_TRUE(a);
  ExpectAddsUp(*a);
  EXPECT_FALSE(a->nmt);
  EXPECT_FALSE(a->nmt_read);
  ASSERT_EQ(a->left_out.size(), 1u);
  EXPECT_EQ(a->left_out[0].what, "NMT");
  EXPECT_EQ(a->left_out[0].read.rss, 98 * kMiB);
  EXPECT_EQ(a->left_out[0].read.at, smaps_at + std::chrono::seconds(35));
  EXPECT_EQ(a->outside, 12 * kMiB);  // all anonymous memory outside the heap
  EXPECT_EQ(AccountParts(*a).back().first, std::string("native"));
  EXPECT_EQ(a->smaps_read.at, smaps_at);
  EXPECT_EQ(a->smaps_read.rss, 40 * kMiB);
  EXPECT_EQ(a->rss_now, 98 * kMiB);
  EXPECT_FALSE(a->InStepWithNow());

  // Read in step (RSS 41 MiB after NMT, 42 MiB now): NMT splits the rest,
  // and the account is of now.
  s.jvm->nmt_rss_bytes = 41 * kMiB;
  s.process->rss_anon = 42 * kMiB;
  a = AccountRss(s);
  ASSERT_TRUE(a);
  ExpectAddsUp(*a);
  ASSERT_TRUE(a->nmt);
  ASSERT_TRUE(a->nmt_read);
  EXPECT_EQ(a->nmt_read->at, smaps_at + std::chrono::seconds(35));
  EXPECT_TRUE(a->left_out.empty());
  EXPECT_TRUE(a->InStepWithNow());
  EXPECT_EQ(AccountParts(*a).back().first, std::string("outside_nmt"));
}

// The same for glibc's malloc statistics: read at another RSS, their
// "in use" does not split the smaps read's arenas into free and used.
TEST(RssAccount, MallocStatisticsOfAnotherMomentAreLeftOut) {
  TargetSample s;
  GlibcHeaps g;
  g.breakdown.file_and_shared = 5 * kMiB;
  g.breakdown.arena_heaps = 64 * kMiB;
  g.breakdown.other_anonymous = 1 * kMiB;
  g.breakdown.total = 70 * kMiB;
  g.status_rss_bytes = 70 * kMiB;
  s.glibc = g;
  MallocStats m;
  m.info.system_current = 300 * kMiB;
  m.info.total_rest_bytes = 10 * kMiB;
  m.rss_bytes = 310 * kMiB;
  s.malloc = m;
  auto a = AccountRss(s);
  ASSERT_TRUE(a);
  ExpectAddsUp(*a);
  EXPECT_FALSE(a->glibc_free);
  EXPECT_FALSE(a->malloc_read);
  EXPECT_TRUE(a->outside_is_estimate);
  ASSERT_EQ(a->left_out.size(), 1u);
  EXPECT_EQ(a->left_out[0].what, "malloc statistics");
  // Of the same moment: used.
  s.malloc->rss_bytes = 71 * kMiB;
  a = AccountRss(s);
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->glibc_free);
  EXPECT_TRUE(a->malloc_read);
  EXPECT_TRUE(a->left_out.empty());
}

}  // namespace
}  // namespace memtrimd

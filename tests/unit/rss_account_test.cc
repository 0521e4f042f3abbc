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

}  // namespace
}  // namespace memtrimd

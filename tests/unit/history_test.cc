#include "daemon/report/history.h"

#include <gtest/gtest.h>

namespace memtrimd {
namespace {

using namespace std::chrono_literals;
constexpr uint64_t kMiB = 1u << 20;

TargetSnapshot TargetWith(pid_t pid, uint64_t rss, std::optional<uint64_t> limit = std::nullopt) {
  TargetSnapshot ts;
  ts.target.pid = pid;
  ts.target.start_ticks = 1000 + static_cast<uint64_t>(pid);
  procfs::ProcStatus st;
  st.rss_anon = rss;
  ts.sample.process = st;
  if (limit) {
    CgroupMemory c;
    c.limit_bytes = limit;
    ts.sample.cgroup = c;
  }
  return ts;
}

Snapshot At(uint64_t seq, std::chrono::system_clock::time_point t,
            std::vector<TargetSnapshot> targets) {
  Snapshot s;
  s.sequence = seq;
  s.taken_at = t;
  s.targets = std::move(targets);
  return s;
}

const std::chrono::system_clock::time_point kT0{std::chrono::seconds(1'800'000'000)};

TEST(SampleHistory, OnePointPerSampleWithItsFigures) {
  SampleHistory h(1h);
  TargetSnapshot a = TargetWith(10, 100 * kMiB, 512 * kMiB);
  GlibcHeaps g;
  g.resident_bytes = 64 * kMiB;
  a.sample.glibc = g;
  for (uint64_t i = 1; i <= 5; ++i) {
    a.sample.process->rss_anon = i * kMiB;
    h.Record(At(i, kT0 + std::chrono::seconds(10 * i), {a}));
  }
  auto got = h.Of(a.target, 5);
  ASSERT_TRUE(got);
  ASSERT_EQ(got->points.size(), 5u);
  EXPECT_EQ(got->points.front().sequence, 1u);
  EXPECT_EQ(got->points.back().rss, 5 * kMiB);
  EXPECT_EQ(got->points.back().limit, 512 * kMiB);
  EXPECT_EQ(got->points.back().arena_resident, 64 * kMiB);
  EXPECT_EQ(got->points.back().direct, kNoValue);  // no buffer pools in this sample
  // A page drawn from sample 3 shows nothing newer.
  EXPECT_EQ(h.Of(a.target, 3)->points.size(), 3u);
}

// The direct buffer pool when the agent read it, else NMT Other marked as
// such (an upper bound of the pool, never drawn as the pool).
TEST(SampleHistory, DirectMemoryIsThePoolOrNmtOtherMarkedAsSuch) {
  TargetSample s;
  EXPECT_EQ(DirectOf(PointOf(s, 0, 1)), std::nullopt);
  JvmSample j;
  j.attachable = true;
  jvm::NmtSummary n;
  n.enabled = true;
  jvm::NmtCategory other;
  other.name = "Other";
  other.committed = 9 * kMiB;
  n.categories = {other};
  j.nmt = n;
  s.jvm = j;
  auto nmt = DirectOf(PointOf(s, 0, 1));
  ASSERT_TRUE(nmt);
  EXPECT_EQ(nmt->bytes, 9 * kMiB);
  EXPECT_TRUE(nmt->nmt_other);
  JvmBuffers b;
  b.direct = {8, 8 * kMiB, 8 * kMiB};
  s.jvm_buffers = b;
  auto pool = DirectOf(PointOf(s, 0, 1));
  ASSERT_TRUE(pool);
  EXPECT_EQ(pool->bytes, 8 * kMiB);
  EXPECT_FALSE(pool->nmt_other);
}

TEST(SampleHistory, KeepsOnlyTheWindow) {
  SampleHistory h(1h);
  TargetSnapshot a = TargetWith(10, kMiB);
  // Two hours of samples, one every 10 s.
  for (uint64_t i = 0; i < 720; ++i) h.Record(At(i + 1, kT0 + std::chrono::seconds(10 * i), {a}));
  auto got = h.Of(a.target, 720);
  ASSERT_TRUE(got);
  // The last hour: t >= newest - 3600 s, 361 points (both ends included).
  EXPECT_EQ(got->points.size(), 361u);
  EXPECT_EQ(got->points.front().t_ms, got->points.back().t_ms - 3'600'000);
}

TEST(SampleHistory, BoundedWhateverTheSampleInterval) {
  SampleHistory h(1h);
  TargetSnapshot a = TargetWith(10, kMiB);
  // 5000 samples 10 ms apart (--sample.interval=10ms): all within the hour.
  for (uint64_t i = 0; i < 5000; ++i) {
    h.Record(At(i + 1, kT0 + std::chrono::milliseconds(10 * i), {a}));
    ASSERT_LE(h.Of(a.target, i + 1)->points.size(), SampleHistory::kMaxPoints);
  }
  auto got = h.Of(a.target, 5000);
  // Thinned, not cut: the whole span is still there, oldest to newest.
  EXPECT_GT(got->points.size(), SampleHistory::kMaxPoints / 2);
  EXPECT_EQ(got->points.front().sequence, 1u);
  EXPECT_EQ(got->points.back().sequence, 5000u);
  for (std::size_t i = 1; i < got->points.size(); ++i) {
    EXPECT_LT(got->points[i - 1].sequence, got->points[i].sequence);
  }
}

TEST(SampleHistory, EverySampleKeptAtTheDefaultInterval) {
  SampleHistory h(1h);
  TargetSnapshot a = TargetWith(10, kMiB);
  // An hour at 10 s plus two extra samples after each of 12 trims.
  uint64_t seq = 0;
  for (int i = 0; i < 360; ++i) {
    h.Record(At(++seq, kT0 + std::chrono::seconds(10 * i), {a}));
    if (i % 30 == 0) {
      h.Record(At(++seq, kT0 + std::chrono::seconds(10 * i + 1), {a}));
      h.Record(At(++seq, kT0 + std::chrono::seconds(10 * i + 2), {a}));
    }
  }
  EXPECT_EQ(h.Of(a.target, seq)->points.size(), seq);
}

TEST(SampleHistory, DropsTargetsThatLeaveTheSnapshot) {
  SampleHistory h(1h);
  TargetSnapshot a = TargetWith(10, kMiB), b = TargetWith(11, 2 * kMiB);
  h.Record(At(1, kT0, {a, b}));
  EXPECT_EQ(h.targets(), 2u);
  h.Record(At(2, kT0 + 10s, {b}));
  EXPECT_EQ(h.targets(), 1u);
  EXPECT_FALSE(h.Of(a.target, 2));
  // The same pid with other start ticks is another process: no history.
  TargetSnapshot reused = TargetWith(11, kMiB);
  reused.target.start_ticks += 1;
  EXPECT_FALSE(h.Of(reused.target, 2));
  h.Record(At(3, kT0 + 20s, {}));
  EXPECT_EQ(h.targets(), 0u);
}

TEST(SampleHistory, AnExecStartsTheProcessesHistoryAfresh) {
  SampleHistory h(1h);
  TargetSnapshot shell = TargetWith(10, kMiB);
  shell.target.exec_mark = 1;
  h.Record(At(1, kT0, {shell}));
  h.Record(At(2, kT0 + 10s, {shell}));
  TargetSnapshot jvm = TargetWith(10, 40 * kMiB);  // same pid and start ticks
  jvm.target.exec_mark = 2;
  h.Record(At(3, kT0 + 20s, {jvm}));
  auto got = h.Of(jvm.target, 3);
  ASSERT_TRUE(got);
  ASSERT_EQ(got->points.size(), 1u);
  EXPECT_EQ(got->points.front().rss, 40 * kMiB);
}

TEST(SampleHistory, ACarriedSampleAddsNoPointAndKeepsTheTarget) {
  // After another target's trim the scheduler carries this target's last
  // sample into an extra snapshot without reading it.
  SampleHistory h(1h);
  TargetSnapshot a = TargetWith(10, kMiB), b = TargetWith(11, 2 * kMiB);
  h.Record(At(1, kT0, {a, b}));
  TargetSnapshot carried = b;
  carried.carried = true;
  h.Record(At(2, kT0 + 1s, {a, carried}));
  EXPECT_EQ(h.targets(), 2u);
  ASSERT_TRUE(h.Of(b.target, 2));
  ASSERT_EQ(h.Of(b.target, 2)->points.size(), 1u);
  EXPECT_EQ(h.Of(b.target, 2)->points.back().sequence, 1u);
  EXPECT_EQ(h.Of(a.target, 2)->points.size(), 2u);
  // Read again in the next sample: a point again.
  h.Record(At(3, kT0 + 10s, {a, b}));
  ASSERT_EQ(h.Of(b.target, 3)->points.size(), 2u);
  EXPECT_EQ(h.Of(b.target, 3)->points.back().sequence, 3u);
}

TEST(SampleHistory, TrimMarksOfSuccessfulTrimsOnlyAndCapped) {
  SampleHistory h(1h);
  TargetSnapshot a = TargetWith(10, kMiB);
  h.Record(At(1, kT0, {a}));
  TrimResult ok;
  ok.success = true;
  ok.at = kT0 - 1s;
  ok.before.rss_swap_bytes = 90 * kMiB;
  ok.after.rss_swap_bytes = 30 * kMiB;
  h.RecordTrim(a.target, ok);
  TrimResult failed = ok;
  failed.success = false;
  h.RecordTrim(a.target, failed);
  auto got = h.Of(a.target, 1);
  ASSERT_EQ(got->trims.size(), 1u);
  EXPECT_EQ(got->trims[0].before, 90 * kMiB);
  EXPECT_EQ(got->trims[0].after, 30 * kMiB);
  for (int i = 0; i < 200; ++i) h.RecordTrim(a.target, ok);
  EXPECT_EQ(h.Of(a.target, 1)->trims.size(), SampleHistory::kMaxTrimMarks);
}

TEST(SampleHistory, PointIsKeptCompactly) {
  // history.h, the flag's help and docs/flags.md state 32 bytes a point as
  // kept, 24 a trim mark; keep them true.
  EXPECT_EQ(SampleHistory::kStoredPointBytes, 32u);
  EXPECT_EQ(sizeof(TrimMark), 24u);
}

// What is kept in KiB comes back as it went in when it is whole KiB (RSS,
// a cgroup limit, smaps' Rss), and to the nearest KiB otherwise.
TEST(SampleHistory, FiguresComeBackFromTheirKiB) {
  SampleHistory h(1h);
  TargetSnapshot a = TargetWith(10, 5 * kMiB + 4096);
  JvmBuffers b;
  b.direct = {8, 8 * kMiB + 700, 8 * kMiB + 700};
  a.sample.jvm_buffers = b;
  h.Record(At(1, kT0, {a}));
  auto got = h.Of(a.target, 1);
  ASSERT_TRUE(got && got->points.size() == 1);
  EXPECT_EQ(got->points[0].rss, 5 * kMiB + 4096);
  ASSERT_TRUE(DirectOf(got->points[0]));
  EXPECT_EQ(DirectOf(got->points[0])->bytes, 8 * kMiB + 1024);
  EXPECT_FALSE(DirectOf(got->points[0])->nmt_other);
  EXPECT_EQ(got->points[0].limit, kNoValue);
}

}  // namespace
}  // namespace memtrimd

#include "daemon/trim/trim_policy.h"

#include <gtest/gtest.h>

namespace memtrimd {
namespace {

using namespace std::chrono_literals;
using Clock = TrimPolicy::Clock;
using Action = TrimDecision::Action;

TrimPolicyConfig Config() {
  TrimPolicyConfig c;
  c.interval = 60s;
  c.max_interval = 480s;
  c.jitter = 0;  // exact times unless a test is about jitter
  c.floor_bytes = 1 << 20;
  c.unproductive_runs = 2;
  c.reset_growth_bytes = 64 << 20;
  return c;
}

TrimInputs Up() {
  TrimInputs in;
  in.target_up = true;
  in.rss_bytes = 800 << 20;
  in.limit_bytes = 1000u << 20;
  in.arena_resident_bytes = 100 << 20;  // what a trim leaves (see Trim())
  return in;
}

struct Fixture {
  explicit Fixture(TrimPolicyConfig c) : policy(c, [] { return 0.5; }) { policy.Reset(t); }
  TrimPolicy policy;
  Clock::time_point t{};
  void Advance(std::chrono::milliseconds d) { t += d; }
  TrimDecision Decide(const TrimInputs& in = Up()) { return policy.Decide(t, in); }
  // One full trim that gave back `reclaimed` (nullopt: failed).
  void Trim(std::optional<int64_t> reclaimed, uint64_t arena_after = 100 << 20) {
    ASSERT_EQ(Decide().action, Action::kTrim);
    policy.Begin(t);
    policy.Finish(t, reclaimed, arena_after);
  }
};

TEST(TrimPolicy, TrimsOnTheIntervalAndNeverTwiceAtOnce) {
  Fixture f(Config());
  EXPECT_EQ(f.Decide().action, Action::kWait);
  f.Advance(59s);
  EXPECT_EQ(f.Decide().action, Action::kWait);
  f.Advance(1s);
  ASSERT_EQ(f.Decide().action, Action::kTrim);
  f.policy.Begin(f.t);
  f.Advance(600s);  // a long trim: still nothing else starts
  EXPECT_EQ(f.Decide().action, Action::kWait);
  f.policy.Finish(f.t, 100 << 20, 10 << 20);
  EXPECT_EQ(f.Decide().action, Action::kWait);
  f.Advance(60s);
  EXPECT_EQ(f.Decide().action, Action::kTrim);
}

TEST(TrimPolicy, ZeroIntervalDisables) {
  TrimPolicyConfig c = Config();
  c.interval = 0s;
  Fixture f(c);
  f.Advance(100h);
  EXPECT_EQ(f.Decide().action, Action::kWait);
}

TEST(TrimPolicy, LimitRatioGate) {
  TrimPolicyConfig c = Config();
  c.min_limit_ratio = 0.9;
  Fixture f(c);
  f.Advance(60s);
  TrimDecision d = f.Decide();  // 800/1000 < 0.9
  EXPECT_EQ(d.action, Action::kSkip);
  EXPECT_EQ(d.reason, "below_limit_ratio");
  f.Advance(60s);
  TrimInputs high = Up();
  high.rss_bytes = 950u << 20;
  EXPECT_EQ(f.Decide(high).action, Action::kTrim);
  TrimInputs nolimit = Up();
  nolimit.limit_bytes.reset();
  Fixture g(c);
  g.Advance(60s);
  EXPECT_EQ(g.Decide(nolimit).reason, "no_limit");
}

TEST(TrimPolicy, SkipsWhenTheJvmTrimsItselfUnlessForced) {
  TrimInputs in = Up();
  in.jvm_trims_itself = true;
  Fixture f(Config());
  f.Advance(60s);
  TrimDecision d = f.Decide(in);
  EXPECT_EQ(d.action, Action::kSkip);
  EXPECT_EQ(d.reason, "jvm_trims_itself");
  // The skip is counted once per interval, not on every tick.
  EXPECT_EQ(f.Decide(in).action, Action::kWait);
  TrimPolicyConfig c = Config();
  c.force_when_jvm_trims = true;
  Fixture forced(c);
  forced.Advance(60s);
  EXPECT_EQ(forced.Decide(in).action, Action::kTrim);
}

TEST(TrimPolicy, BacksOffWhenTrimsStopPayingAndResetsOnGrowth) {
  Fixture f(Config());
  f.Advance(60s);
  f.Trim(200 << 20);  // paid
  EXPECT_EQ(f.policy.effective_interval(), 60s);
  f.Advance(60s);
  f.Trim(1000);  // did not pay (1)
  EXPECT_EQ(f.policy.effective_interval(), 60s);
  f.Advance(60s);
  f.Trim(0);  // did not pay (2): back off
  EXPECT_EQ(f.policy.effective_interval(), 120s);
  f.Advance(60s);
  EXPECT_EQ(f.Decide().action, Action::kWait);
  f.Advance(60s);
  f.Trim(0);
  f.Advance(120s);
  f.Trim(0);
  EXPECT_EQ(f.policy.effective_interval(), 240s);
  for (int i = 0; i < 6; ++i) {
    f.Advance(f.policy.effective_interval());
    f.Trim(0);
  }
  EXPECT_EQ(f.policy.effective_interval(), 480s) << "capped at the maximum";
  // Arena heap RSS grows by the threshold since the last trim: back to base,
  // due now.
  f.Advance(10s);
  TrimInputs grown = Up();
  grown.arena_resident_bytes = (100 << 20) + (64 << 20);
  EXPECT_EQ(f.Decide(grown).action, Action::kTrim);
  EXPECT_EQ(f.policy.effective_interval(), 60s);
}

TEST(TrimPolicy, FailuresBackOffExponentiallyUpToTheMaximum) {
  Fixture f(Config());
  f.Advance(60s);
  f.Trim(std::nullopt);
  EXPECT_EQ(f.policy.failure_streak(), 1);
  f.Advance(119s);
  EXPECT_EQ(f.Decide().action, Action::kWait);
  f.Advance(1s);
  f.Trim(std::nullopt);
  f.Advance(239s);
  EXPECT_EQ(f.Decide().action, Action::kWait);
  f.Advance(1s);
  f.Trim(std::nullopt);
  f.Advance(480s);
  f.Trim(std::nullopt);  // capped at 480 s
  f.Advance(480s);
  f.Trim(100 << 20);
  EXPECT_EQ(f.policy.failure_streak(), 0);
  EXPECT_EQ(f.policy.next_due(), f.t + 60s);
}

TEST(TrimPolicy, JitterStaysWithinItsBounds) {
  TrimPolicyConfig c = Config();
  c.jitter = 0.1;
  for (double u : {0.0, 0.25, 0.5, 0.999}) {
    TrimPolicy p(c, [u] { return u; });
    Clock::time_point t0{};
    p.Reset(t0);
    auto due = p.next_due() - t0;
    EXPECT_GE(due, 54s) << u;
    EXPECT_LE(due, 66s) << u;
  }
  // Different random draws give different times (replicas spread out).
  TrimPolicy a(c, [] { return 0.0; }), b(c, [] { return 0.99; });
  a.Reset({});
  b.Reset({});
  EXPECT_NE(a.next_due(), b.next_due());
}

TEST(TrimPolicy, NoTargetOrNoBackendIsACountedSkip) {
  Fixture f(Config());
  f.Advance(60s);
  TrimInputs down;
  EXPECT_EQ(f.Decide(down).reason, "no_target");
  f.Advance(60s);
  TrimInputs nobackend = Up();
  nobackend.backend_available = false;
  nobackend.backend_unavailable_reason = "no_agent";
  TrimDecision d = f.Decide(nobackend);
  EXPECT_EQ(d.action, Action::kSkip);
  EXPECT_EQ(d.reason, "no_agent");
}

}  // namespace
}  // namespace memtrimd

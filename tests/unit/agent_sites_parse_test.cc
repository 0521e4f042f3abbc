// The allocation sampler's answers as recorded from a real site_holder
// (tests/fixtures/agent/record_sites.sh): 200, 50 and 10 MiB held in 1 MiB
// blocks beside two churning threads, then hold_50's blocks freed.
#include <gtest/gtest.h>

#include <string>

#include "collectors/agent/client/agent_sites.h"
#include "tests/unit/fixtures.h"

namespace memtrimd::agent {
namespace {

std::string ReadFixture(const std::string& rel) { return test::ReadFixture("agent/sites/" + rel); }

constexpr double kMiB = 1024.0 * 1024.0;

double LiveMiB(const AgentSites& s) {
  uint64_t live = 0;
  for (const AgentStack& st : s.stacks) live += st.values.live_bytes;
  return static_cast<double>(live) / kMiB;
}

TEST(AgentSitesParse, NeverTurnedOn) {
  Result<AgentSites> s = ParseAgentSites(ReadFixture("off.txt"));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_FALSE(s->on);
  EXPECT_EQ(s->period, 0u);
  EXPECT_EQ(s->sampler_bytes, 0u);
  EXPECT_TRUE(s->stacks.empty());
}

// A target's answer is its own: a stack line of any length keeps 64
// addresses (what a profile keeps of a stack), the rest read and dropped.
TEST(AgentSitesParse, LongStackLinesKeepSixtyFourAddresses) {
  std::string body =
      "on=1\nperiod=524288\ngeneration=1\nstarted_ns=1\nsamples=1\nlive_samples=1\n"
      "dropped_live=0\ndropped_stacks=0\nsampler_bytes=0\nhooked_objects=1\nstacks=1\n"
      "stack 1 1 1 1 1 1";
  for (int i = 0; i < 1000; ++i) body += " " + std::to_string(1000 + i);
  body += "\n";
  Result<AgentSites> s = ParseAgentSites(body);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->stacks.size(), 1u);
  EXPECT_EQ(s->stacks[0].pcs.size(), 64u);
  EXPECT_EQ(s->stacks[0].pcs[0], 0x1000u);
}

TEST(AgentSitesParse, MoreStacksThanAnAgentKeepsAreRefused) {
  const std::string head =
      "on=1\nperiod=524288\ngeneration=1\nstarted_ns=1\nsamples=1\nlive_samples=1\n"
      "dropped_live=0\ndropped_stacks=0\nsampler_bytes=0\nhooked_objects=1\n";
  std::string body = head + "stacks=8193\n";
  for (int i = 0; i < 8193; ++i) body += "stack 1 1 1 1 1 1 1\n";
  Result<AgentSites> s = ParseAgentSites(body);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ErrorCode::kParseError);
  EXPECT_NE(s.status().message().find("more than an agent keeps"), std::string::npos);
}

TEST(AgentSitesParse, SamplingOn) {
  Result<SamplingStarted> on = ParseSamplingStarted(ReadFixture("sampling_on.txt"));
  ASSERT_TRUE(on.ok()) << on.status().message();
  EXPECT_EQ(on->period, 524288u);
  EXPECT_EQ(on->generation, 1u);
  EXPECT_GT(on->hooked_objects, 0u);
  EXPECT_GE(on->hooked_entries, on->hooked_objects);
}

TEST(AgentSitesParse, HeldThenFreed) {
  Result<AgentSites> held = ParseAgentSites(ReadFixture("held.txt"));
  ASSERT_TRUE(held.ok()) << held.status().message();
  EXPECT_TRUE(held->on);
  EXPECT_EQ(held->period, 524288u);
  EXPECT_EQ(held->sampler_bytes, 3407872u);
  EXPECT_FALSE(held->truncated);
  ASSERT_FALSE(held->stacks.empty());
  for (const AgentStack& st : held->stacks) {
    EXPECT_FALSE(st.pcs.empty());
    EXPECT_LE(st.values.live_samples, st.values.alloc_samples);
    EXPECT_LE(st.values.live_bytes, st.values.alloc_bytes);
  }
  // 260 MiB held; the churn adds a little (its 32 live blocks a thread).
  EXPECT_NEAR(LiveMiB(*held), 260.0, 26.0);

  Result<AgentSites> freed = ParseAgentSites(ReadFixture("freed.txt"));
  ASSERT_TRUE(freed.ok()) << freed.status().message();
  EXPECT_EQ(freed->generation, held->generation);
  EXPECT_GT(freed->samples, held->samples);
  EXPECT_NEAR(LiveMiB(*freed), 210.0, 21.0);
}

TEST(AgentSitesParse, CutShortOrMiscountedIsRefused) {
  const std::string body = ReadFixture("held.txt");
  EXPECT_FALSE(ParseAgentSites(body.substr(0, body.size() - 1)).ok());
  // One stack line more than stacks= says.
  const std::size_t last = body.rfind("stack ", body.size() - 2);
  EXPECT_FALSE(ParseAgentSites(body + body.substr(last)).ok());
  // One fewer.
  EXPECT_FALSE(ParseAgentSites(body.substr(0, last)).ok());
  EXPECT_FALSE(ParseAgentSites("on=1\nperiod=1\n").ok());
  EXPECT_FALSE(ParseAgentSites("").ok());
}

}  // namespace
}  // namespace memtrimd::agent

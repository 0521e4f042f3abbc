// The allocation sampler's answers as recorded from a real site_holder
// (tests/fixtures/agent/record_sites.sh): 200, 50 and 10 MiB held in 1 MiB
// blocks beside two churning threads, then hold_50's blocks freed.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "collectors/agent/client/agent_ping.h"
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

// Protocol version 5: the lease and the budget in "sites" and "sampling
// on", the sampler's state in "ping"; an agent before it sends none.
TEST(AgentSitesParse, LeaseAndBudgetKeys) {
  Result<AgentSites> s = ParseAgentSites(
      "on=1\nperiod=1048576\nbase_period=4096\nmax_rate=20000\nraised=3\nlease_s=60\n"
      "lease_left_ms=59000\nlease_ended=2\ngeneration=1\nstarted_ns=5\nsamples=9\n"
      "live_samples=1\ndropped_live=0\ndropped_stacks=0\nsampler_bytes=8\nhooked_objects=2\n"
      "stacks=0\n");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->period, 1048576u);
  EXPECT_EQ(s->base_period, 4096u);
  EXPECT_EQ(s->max_rate, 20000u);
  EXPECT_EQ(s->raised, 3u);
  EXPECT_EQ(s->lease_s, 60u);
  EXPECT_EQ(s->lease_left_ms, 59000u);
  EXPECT_EQ(s->lease_ended, 2u);
  // Version 4: the period asked for is the one in force, no lease.
  Result<AgentSites> old = ParseAgentSites(ReadFixture("off.txt"));
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->base_period, old->period);
  EXPECT_EQ(old->lease_s, 0u);

  Result<SamplingStarted> on = ParseSamplingStarted(
      "period=4096\ngeneration=2\nhooked_objects=3\nhooked_entries=9\nlease_s=60\n"
      "max_rate=20000\n");
  ASSERT_TRUE(on.ok()) << on.status().message();
  EXPECT_EQ(on->lease_s, 60u);
  EXPECT_EQ(on->max_rate, 20000u);

  Result<AgentPing> p =
      ParseAgentPing("pid=7\nversion=5\nrefused=0\nsampling=1\nperiod=8192\nlease_left_ms=1500\n");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->sampling, true);
  EXPECT_EQ(p->period, 8192u);
  EXPECT_EQ(p->lease_left_ms, 1500u);
  Result<AgentPing> v4 = ParseAgentPing("pid=7\nversion=4\nrefused=0\n");
  ASSERT_TRUE(v4.ok()) << v4.status().message();
  EXPECT_FALSE(v4->sampling.has_value());
  EXPECT_FALSE(ParseAgentPing("pid=7\nversion=5\nrefused=0\nsampling=2\n").ok());
}

// Issue 33: the hooks' counts, added without a version: an agent that
// sends them, and one that does not.
TEST(AgentSitesParse, HookCounts) {
  const std::string head =
      "on=1\nperiod=65536\ngeneration=1\nstarted_ns=1\nsamples=1\nlive_samples=1\n"
      "dropped_live=0\ndropped_stacks=0\nsampler_bytes=0\nhooked_objects=7\n";
  Result<AgentSites> s =
      ParseAgentSites(head + "hooked_entries=20\nunhooked_objects=1\nstacks=0\n");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->hooks_counted);
  EXPECT_EQ(s->hooked_entries, 20u);
  EXPECT_EQ(s->unhooked_objects, 1u);
  Result<AgentSites> old = ParseAgentSites(head + "stacks=0\n");
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_FALSE(old->hooks_counted);
  EXPECT_EQ(old->unhooked_objects, 0u);
  EXPECT_FALSE(ParseAgentSites(head + "hooked_entries=x\nunhooked_objects=1\nstacks=0\n").ok());

  Result<SamplingStarted> on = ParseSamplingStarted(
      "period=65536\ngeneration=1\nhooked_objects=7\nhooked_entries=20\nlease_s=600\n"
      "max_rate=0\nunhooked_objects=2\n");
  ASSERT_TRUE(on.ok()) << on.status().message();
  EXPECT_EQ(on->unhooked_objects, std::optional<uint64_t>(2));
  Result<SamplingStarted> before = ParseSamplingStarted(ReadFixture("sampling_on.txt"));
  ASSERT_TRUE(before.ok());
  EXPECT_FALSE(before->unhooked_objects.has_value());
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

// Version 6, "sites live": after the stack lines, one line per live
// sample (recorded from the same site_holder, held_live.txt): each of a
// listed stack, their weights summing to its live bytes.
TEST(AgentSitesParse, LiveSamples) {
  Result<AgentSites> s = ParseAgentSites(ReadFixture("held_live.txt"));
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_TRUE(s->has_live);
  EXPECT_EQ(s->live_listed, s->live.size());
  EXPECT_EQ(s->live_seen, s->live_listed);  // nothing cut
  EXPECT_GT(s->live.size(), 200u);          // 260 blocks of 1 MiB, most sampled
  std::vector<uint64_t> weights(s->stacks.size(), 0);
  for (const LiveSample& l : s->live) {
    ASSERT_LT(l.stack, s->stacks.size());
    EXPECT_GT(l.ptr, 0u);
    EXPECT_LE(l.size, l.weight);  // a sample stands for at least its own bytes
    weights[l.stack] += l.weight;
  }
  for (std::size_t i = 0; i < s->stacks.size(); ++i) {
    // The stack's live bytes are its samples' weights (taken a moment
    // apart while the churn runs: the held stacks exactly).
    if (s->stacks[i].values.live_bytes >= (10u << 20)) {
      EXPECT_EQ(weights[i], s->stacks[i].values.live_bytes) << i;
    }
  }
  // Plain "sites" (and a version 5 agent): no live lines, none announced.
  Result<AgentSites> plain = ParseAgentSites(ReadFixture("held.txt"));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->has_live);
  EXPECT_TRUE(plain->live.empty());
}

TEST(AgentSitesParse, MalformedLiveLinesAreRefused) {
  const std::string head =
      "on=1\nperiod=524288\ngeneration=1\nstarted_ns=1\nsamples=1\nlive_samples=1\n"
      "dropped_live=0\ndropped_stacks=0\nsampler_bytes=0\nhooked_objects=1\nstacks=1\n";
  const std::string stack = "stack 1 100 1 1 100 1 abc\n";
  auto parse = [&](const std::string& live_keys, const std::string& lines) {
    return ParseAgentSites(head + live_keys + stack + lines);
  };
  Result<AgentSites> ok = parse("live_seen=3\nlive_listed=1\n", "live 0 7f00 50 100\n");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ASSERT_EQ(ok->live.size(), 1u);
  EXPECT_EQ(ok->live[0].ptr, 0x7f00u);
  EXPECT_EQ(ok->live[0].size, 50u);
  EXPECT_EQ(ok->live[0].weight, 100u);
  EXPECT_EQ(ok->live_seen, 3u);  // the agent's list was cut: 3 found, 1 sent
  const std::string keys = "live_seen=1\nlive_listed=1\n";
  EXPECT_FALSE(parse(keys, "live 1 7f00 50 100\n").ok());             // no stack 1
  EXPECT_FALSE(parse(keys, "live 0 7f00 50\n").ok());                 // three fields
  EXPECT_FALSE(parse(keys, "live 0 7f00 50 100 9\n").ok());           // five
  EXPECT_FALSE(parse(keys, "live 0 zz 50 100\n").ok());               // not hex
  EXPECT_FALSE(parse(keys, "live 0 7f00  100\n").ok());               // empty field
  EXPECT_FALSE(parse(keys, "live 0 1 1 1\nlive 0 2 1 1\n").ok());     // more than listed
  EXPECT_FALSE(parse(keys, "").ok());                                 // fewer
  EXPECT_FALSE(parse("", "live 0 7f00 50 100\n").ok());               // not announced
  EXPECT_FALSE(parse("live_seen=1\nlive_listed=999999\n", "").ok());  // more than kept
  // A stack line after the live lines.
  EXPECT_FALSE(ParseAgentSites(head + keys + "live 0 1 1 1\n" + stack).ok());
}

// Version 7: the Java frame keys in the head and one "java" line per
// named frame after everything else, names and files %XX-escaped.
TEST(AgentSitesParse, JavaFrameNames) {
  const std::string head =
      "on=1\nperiod=524288\ngeneration=1\nstarted_ns=1\nsamples=1\nlive_samples=1\n"
      "dropped_live=0\ndropped_stacks=0\nsampler_bytes=0\nhooked_objects=1\nstacks=1\n"
      "java_frames=1\njava_ids=10553\njava_walks=996\njava_walks_empty=20\n";
  const std::string stack = "stack 1 100 1 1 100 1 abc 80087fbf400c20e0 fffeffbf400dab70\n";
  auto parse = [&](const std::string& names, const std::string& lines) {
    return ParseAgentSites(head + names + stack + lines);
  };
  Result<AgentSites> ok =
      parse("java_names=2\n",
            "java 80087fbf400c20e0 34 JavaFramesHolder.holdDeflatersA JavaFramesHolder.java\n"
            "java fffeffbf400dab70 0 [java:%20unknown%20method] -\n");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_TRUE(ok->java_counted);
  EXPECT_TRUE(ok->java_frames);
  EXPECT_EQ(ok->java_ids, 10553u);
  EXPECT_EQ(ok->java_walks, 996u);
  EXPECT_EQ(ok->java_walks_empty, 20u);
  ASSERT_EQ(ok->java.size(), 2u);
  EXPECT_EQ(ok->java[0].frame, 0x80087fbf400c20e0u);
  EXPECT_EQ(ok->java[0].line, 34u);
  EXPECT_EQ(ok->java[0].name, "JavaFramesHolder.holdDeflatersA");
  EXPECT_EQ(ok->java[0].file, "JavaFramesHolder.java");
  EXPECT_EQ(ok->java[1].name, "[java: unknown method]");
  EXPECT_EQ(ok->java[1].file, "");
  ASSERT_EQ(ok->stacks.size(), 1u);
  EXPECT_EQ(ok->stacks[0].pcs.size(), 3u);  // the Java words kept as addresses

  const std::string one = "java_names=1\n";
  EXPECT_FALSE(parse(one, "java 7f00 1 a.b F.java\n").ok());          // bit 63 not set
  EXPECT_FALSE(parse(one, "java 8000000000000001 1 a.b\n").ok());     // three fields
  EXPECT_FALSE(parse(one, "java 8000000000000001 x a.b -\n").ok());   // bad line
  EXPECT_FALSE(parse(one, "java 8000000000000001 1 a%2 -\n").ok());   // cut escape
  EXPECT_FALSE(parse(one, "java 8000000000000001 1 a%zz -\n").ok());  // bad escape
  EXPECT_FALSE(parse(one, "").ok());                                  // fewer than said
  EXPECT_FALSE(parse("", "java 8000000000000001 1 a.b -\n").ok());    // not announced
  EXPECT_FALSE(parse("java_names=999999\n", "").ok());                // more than kept
  // A stack line after the java lines.
  EXPECT_FALSE(ParseAgentSites(head + one + "java 8000000000000001 1 a.b -\n" + stack).ok());
  // A version 6 agent: no Java keys, nothing said of Java frames.
  Result<AgentSites> v6 = ParseAgentSites(ReadFixture("held.txt"));
  ASSERT_TRUE(v6.ok());
  EXPECT_FALSE(v6->java_counted);
  EXPECT_TRUE(v6->java.empty());
}

}  // namespace
// A JVM's "sites live" with Java frames (protocol 7, recorded from
// JavaFramesHolder on JDK 17: held_java.txt): every Java word of a stack has
// its name line, and the app's methods are among them with their files.
TEST(AgentSitesParse, JavaFramesAndTheirNames) {
  Result<AgentSites> s = ParseAgentSites(ReadFixture("held_java.txt"));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->java_counted);
  EXPECT_TRUE(s->java_frames);
  EXPECT_GT(s->java_walks, 0u);
  EXPECT_GT(s->java_ids, 1000u);
  ASSERT_FALSE(s->java.empty());
  std::set<uint64_t> named;
  std::set<std::string> names;
  for (const symbols::JavaFrameName& j : s->java) {
    named.insert(j.frame);
    names.insert(j.name);
    if (j.name.rfind("JavaFramesHolder.", 0) == 0) {
      EXPECT_EQ(j.file, "JavaFramesHolder.java");
    }
  }
  std::size_t java_words = 0;
  for (const AgentStack& st : s->stacks) {
    for (uint64_t pc : st.pcs) {
      if ((pc >> 63) == 0) continue;
      ++java_words;
      EXPECT_EQ(named.count(pc), 1u) << std::hex << pc << " has no name line";
    }
  }
  EXPECT_GT(java_words, 0u);
  for (const char* m : {"JavaFramesHolder.holdDeflatersA", "JavaFramesHolder.holdDeflatersB",
                        "JavaFramesHolder.holdDirect", "JavaFramesHolder.readWithHeapBuffers",
                        "java.util.zip.Deflater.<init>"}) {
    EXPECT_EQ(names.count(m), 1u) << m;
  }
  // Cut before its last java line: the count in the head no longer matches.
  const std::string body = ReadFixture("held_java.txt");
  const std::size_t last = body.rfind("\njava ");
  ASSERT_NE(last, std::string::npos);
  EXPECT_FALSE(ParseAgentSites(body.substr(0, last + 1)).ok());
}

}  // namespace memtrimd::agent

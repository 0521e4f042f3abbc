// Parsers of the agent's answers (collectors/agent/client/agent_client.h) against
// answers recorded from libmemtrimd_agent.so in fixtures/agent/ and against
// malformed input.
#include <gtest/gtest.h>

#include "tests/unit/fixtures.h"

#include <fstream>
#include <sstream>
#include <string>

#include "collectors/agent/client/agent_client.h"
#include "collectors/jvm/malloc_info.h"

namespace memtrimd::agent {
namespace {

std::string ReadFixture(const std::string& rel) { return test::ReadFixture("agent/" + rel); }

TEST(AgentParseTest, RecordedTrim) {
  Result<AgentTrim> t = ParseAgentTrim(ReadFixture("trim.txt"));
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->duration.count(), 677373231);
  EXPECT_EQ(t->rss_before, 140480512u);
  EXPECT_EQ(t->rss_after, 29093888u);
  EXPECT_EQ(t->result, 1);
}

TEST(AgentParseTest, RecordedSecondTrimGaveNothingBack) {
  Result<AgentTrim> t = ParseAgentTrim(ReadFixture("trim_second.txt"));
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->rss_before, t->rss_after);
  EXPECT_EQ(t->result, 1);  // "a free chunk spans a page", not "memory was released"
  EXPECT_LT(t->duration.count(), 677373231);
}

TEST(AgentParseTest, RecordedMallinfo2) {
  Result<Mallinfo2> m = ParseMallinfo2(ReadFixture("mallinfo2.txt"));
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->arena, 138223616u);
  EXPECT_EQ(m->ordblks, 4941u);
  EXPECT_EQ(m->smblks, 3u);
  EXPECT_EQ(m->hblks, 0u);
  EXPECT_EQ(m->hblkhd, 0u);
  EXPECT_EQ(m->usmblks, 0u);
  EXPECT_EQ(m->fsmblks, 368u);
  EXPECT_EQ(m->uordblks, 7383056u);
  EXPECT_EQ(m->fordblks, 130840560u);
  EXPECT_EQ(m->keepcost, 131584u);
  // arena = in use + free, by glibc's definition.
  EXPECT_EQ(m->arena, m->uordblks + m->fordblks);

  Result<Mallinfo2> after = ParseMallinfo2(ReadFixture("mallinfo2_after_trim.txt"));
  ASSERT_TRUE(after.ok()) << after.status().message();
  EXPECT_EQ(after->uordblks, m->uordblks);
  EXPECT_EQ(after->arena, after->uordblks + after->fordblks);
}

TEST(AgentParseTest, RecordedMallocInfoIsTheXmlTheJvmParserReads) {
  std::string xml = ReadFixture("malloc_info.xml");
  EXPECT_EQ(xml.rfind("<malloc version=\"1\">", 0), 0u);
  Result<jvm::MallocInfo> info = jvm::ParseMallocInfo(xml);
  ASSERT_TRUE(info.ok()) << info.status().message();
  // The main arena and one per fragmenter thread (8): none for the agent.
  EXPECT_EQ(info->arenas.size(), 9u);
  // The main arena's top chunk, derived from <total type="rest"> less the
  // listed bins, is what mallinfo2 (recorded from the same process) calls
  // keepcost.
  Result<Mallinfo2> m = ParseMallinfo2(ReadFixture("mallinfo2.txt"));
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(info->arenas.front().nr, 0);
  EXPECT_EQ(info->arenas.front().top_bytes, m->keepcost);
  // Every arena: top + listed bins = rest.
  for (const jvm::MallocArena& a : info->arenas) EXPECT_LE(a.top_bytes, a.rest_bytes) << a.nr;
}

TEST(AgentParseTest, PingIsKeyValueLines) {
  std::string ping = ReadFixture("ping.txt");
  EXPECT_NE(ping.find("version=1\n"), std::string::npos);
  EXPECT_EQ(ping.rfind("pid=", 0), 0u);
}

TEST(AgentParseTest, UnknownKeysAndBlankLinesAreIgnored) {
  Result<AgentTrim> t = ParseAgentTrim(
      "future=7\nduration_ns=1\n\nrss_before=20\nrss_after=10\nresult=0\nsomething=else\n");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->duration.count(), 1);
  EXPECT_EQ(t->rss_before, 20u);
  EXPECT_EQ(t->rss_after, 10u);
  EXPECT_EQ(t->result, 0);
}

TEST(AgentParseTest, MalformedTrim) {
  const char* const bad[] = {
      "",
      "\n",
      "duration_ns=1\nrss_before=2\nrss_after=3\n",                      // missing result
      "duration_ns=1\nrss_before=2\nrss_after=3\nresult=1\nresult=1\n",  // repeated
      "duration_ns=1\nrss_before=2\nrss_after=3\nresult=-1\n",           // sign
      "duration_ns=1\nrss_before=2\nrss_after=3\nresult=4294967296\n",   // past int
      "duration_ns=x\nrss_before=2\nrss_after=3\nresult=1\n",
      "duration_ns=\nrss_before=2\nrss_after=3\nresult=1\n",
      "duration_ns=1 \nrss_before=2\nrss_after=3\nresult=1\n",                    // trailing space
      "duration_ns=18446744073709551615\nrss_before=2\nrss_after=3\nresult=1\n",  // > int64
      "duration_ns=1\nrss_before=18446744073709551616\nrss_after=3\nresult=1\n",  // > uint64
      "duration_ns 1\nrss_before=2\nrss_after=3\nresult=1\n",                     // no '='
      "0\nduration_ns=1\nrss_before=2\nrss_after=3\nresult=1\n",  // status line left in
      "<malloc version=\"1\">\n</malloc>\n",
      "duration_ns=1\nrss_before=2\nrss_after=3\nresult=1",  // cut short: no final newline
  };
  for (const char* b : bad) {
    Result<AgentTrim> t = ParseAgentTrim(b);
    ASSERT_FALSE(t.ok()) << "accepted: " << b;
    EXPECT_EQ(t.status().code(), ErrorCode::kParseError) << b;
  }
}

TEST(AgentParseTest, MalformedMallinfo2) {
  std::string good = ReadFixture("mallinfo2.txt");
  ASSERT_TRUE(ParseMallinfo2(good).ok());
  // Drop each line in turn: every field is required.
  std::size_t start = 0;
  while (start < good.size()) {
    std::size_t end = good.find('\n', start);
    std::string without = good.substr(0, start) + good.substr(end + 1);
    EXPECT_FALSE(ParseMallinfo2(without).ok())
        << "accepted without: " << good.substr(start, end - start);
    start = end + 1;
  }
  EXPECT_FALSE(ParseMallinfo2(good + "arena=1\n").ok());
  EXPECT_FALSE(ParseMallinfo2("").ok());
  EXPECT_FALSE(ParseMallinfo2(ReadFixture("trim.txt")).ok());
  EXPECT_FALSE(ParseMallinfo2(ReadFixture("malloc_info.xml")).ok());
  // Cut short at any byte: rejected, even inside the last number.
  for (std::size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(ParseMallinfo2(good.substr(0, n)).ok()) << n;
  }
}

}  // namespace
}  // namespace memtrimd::agent

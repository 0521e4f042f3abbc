// jvm::ParseLoadAnswer against the answers real JVMs (JDK 17 and 25) gave to
// the attach operation "load" (tests/fixtures/jvm/load, recorded by
// tests/fixtures/jvm/record_load.sh; statuses as its README says).

#include <gtest/gtest.h>

#include <string>

#include "collectors/jvm/agent_load.h"
#include "tests/unit/fixtures.h"

namespace memtrimd::jvm {
namespace {

struct Case {
  const char* file;
  int status_17;  // the status JDK 17 sent (25 sent 0 for every answer)
  AgentLoadResult result;
  const char* says;  // a part of the outcome's text
};

constexpr Case kCases[] = {
    {"loaded.txt", 0, AgentLoadResult::kLoaded, "loaded into the JVM from /tmp/x.so"},
    {"running.txt", 0, AgentLoadResult::kPresent, "runs in the JVM already"},
    {"version_refused.txt", 0, AgentLoadResult::kRefused, "is not agent version "},
    {"missing.txt", -1, AgentLoadResult::kFailed, "could not load /tmp/x.so: /tmp/memtrimd-load."},
    {"no_onattach.txt", -1, AgentLoadResult::kRefused, "has no Agent_OnAttach"},
    {"noexec.txt", -1, AgentLoadResult::kFailed, "failed to map segment from shared object"},
    {"dynamic_off.txt", -1, AgentLoadResult::kRefused, "-XX:-EnableDynamicAgentLoading"},
};

TEST(AgentLoadAnswer, RecordedAnswersOfBothJdks) {
  for (const char* jdk : {"17", "25"}) {
    for (const Case& c : kCases) {
      AttachResponse r;
      r.status = std::string(jdk) == "17" ? c.status_17 : 0;
      r.output = test::ReadFixture(std::string("jvm/load/") + jdk + "/" + c.file);
      ASSERT_FALSE(r.output.empty()) << jdk << "/" << c.file;
      AgentLoadOutcome o = ParseLoadAnswer(r, "/tmp/x.so");
      EXPECT_EQ(AgentLoadResultName(o.result), std::string(AgentLoadResultName(c.result)))
          << jdk << "/" << c.file << ": " << o.text;
      EXPECT_NE(o.text.find(c.says), std::string::npos) << jdk << "/" << c.file << ": " << o.text;
      EXPECT_EQ(o.text.find('\n'), std::string::npos) << "one line: " << o.text;
    }
  }
}

TEST(AgentLoadAnswer, OtherCodesAndTexts) {
  AgentLoadOutcome o = ParseLoadAnswer({0, "return code: 5\n"}, "/p");
  EXPECT_EQ(o.result, AgentLoadResult::kOptedOut);
  o = ParseLoadAnswer({0, "return code: 6\n"}, "/p");
  EXPECT_EQ(o.result, AgentLoadResult::kFailed);
  o = ParseLoadAnswer({0, "return code: -1\n"}, "/p");
  EXPECT_EQ(o.result, AgentLoadResult::kRefused);
  EXPECT_NE(o.text.find("returned -1"), std::string::npos) << o.text;
  // A digitless code or something else entirely: said as the JVM said it.
  o = ParseLoadAnswer({-1, "return code: x\nmore"}, "/p");
  EXPECT_EQ(o.result, AgentLoadResult::kFailed);
  EXPECT_NE(o.text.find("status -1: return code: x"), std::string::npos) << o.text;
  o = ParseLoadAnswer({0, ""}, "/p");
  EXPECT_EQ(o.result, AgentLoadResult::kFailed);
  EXPECT_EQ(o.text, "the JVM answered status 0");
}

}  // namespace
}  // namespace memtrimd::jvm

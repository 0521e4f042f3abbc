// Why a JVM has no hsperfdata file (perf_data_cause.h): the user name a
// recorded /etc/passwd gives a uid, and the cause decided from the JVM's
// options and that name. Each cause with the case that must not name it.

#include "collectors/jvm/perf_data_cause.h"

#include <gtest/gtest.h>

#include "tests/unit/fixtures.h"

namespace memtrimd::jvm {
namespace {

TEST(PasswdNameOf, RecordedDebianFile) {
  // tests/fixtures/jvm/passwd/debian12: /etc/passwd of the machine the JVM
  // fixtures were recorded on; the names below are what `getent passwd <uid>`
  // printed there.
  const std::string passwd = test::ReadFixture("jvm/passwd/debian12");
  bool complete = false;
  EXPECT_EQ(PasswdNameOf(passwd, 0, &complete), "root");
  EXPECT_TRUE(complete);
  EXPECT_EQ(PasswdNameOf(passwd, 65534), "nobody");
  EXPECT_EQ(PasswdNameOf(passwd, 33), "www-data");
  // The uids the integration tests run nameless JVMs as.
  EXPECT_EQ(PasswdNameOf(passwd, 4242), std::nullopt);
  EXPECT_EQ(PasswdNameOf(passwd, 1000680000), std::nullopt);  // an OpenShift-style uid
}

TEST(PasswdNameOf, FieldsAreReadNotSearched) {
  // A gid, a home directory or a name that looks like the uid is not it.
  const std::string passwd =
      "app:x:1001:4242:uid 4242:/home/4242:/bin/sh\n"
      "4242:x:1002:1002::/:/bin/sh\n"
      "broken:x\n"
      "noint:x:42a:1::/:/bin/sh\n"
      ":x:4243:1::/:/bin/sh\n"  // no name: not a name
      "crlf:x:4244:1::/:/bin/sh\r\n"
      "last:x:4245:1::/:/bin/sh";  // no final newline
  EXPECT_EQ(PasswdNameOf(passwd, 4242), std::nullopt);
  EXPECT_EQ(PasswdNameOf(passwd, 1002), "4242");
  EXPECT_EQ(PasswdNameOf(passwd, 42), std::nullopt);
  EXPECT_EQ(PasswdNameOf(passwd, 4243), std::nullopt);
  EXPECT_EQ(PasswdNameOf(passwd, 4244), "crlf");
  EXPECT_EQ(PasswdNameOf(passwd, 4245), "last");
  EXPECT_EQ(PasswdNameOf("", 0), std::nullopt);
  EXPECT_EQ(PasswdNameOf("big:x:99999999999:1::/:/bin/sh\n", 1215752191), std::nullopt);
}

TEST(PasswdNameOf, NisCompatLinesMakeTheAnswerIncomplete) {
  bool complete = true;
  EXPECT_EQ(PasswdNameOf("root:x:0:0::/root:/bin/sh\n+::::::\n", 4242, &complete), std::nullopt);
  EXPECT_FALSE(complete);
}

PerfDataCauseFacts Facts(std::optional<bool> named, std::vector<JvmOption> options) {
  PerfDataCauseFacts f;
  f.uid = 4242;
  f.uid_named = named;
  f.options_known = true;
  f.options = std::move(options);
  return f;
}

bool Says(const std::string& text, const char* what) {
  return text.find(what) != std::string::npos;
}

TEST(PerfDataCause, UidWithoutNameIsNamedAndTheFlagsAreNot) {
  PerfDataCauseFacts f = Facts(false, {{"-Xmx64m", "command line"}});
  PerfDataVerdict v = DecidePerfDataCause(f);
  EXPECT_EQ(v.cause, PerfDataCause::kUidWithoutName);
  std::string text = PerfDataCauseText(v, f);
  EXPECT_TRUE(Says(text, "uid 4242 has no user name")) << text;
  EXPECT_TRUE(Says(text, "passwd entry")) << text;
  EXPECT_FALSE(Says(text, "UsePerfData")) << text;
  EXPECT_FALSE(Says(text, "PerfDisableSharedMem")) << text;
}

TEST(PerfDataCause, AFlagThatIsSetIsNamedWithItsSource) {
  PerfDataCauseFacts f = Facts(
      true, {{"-XX:+PerfDisableSharedMem", "JAVA_TOOL_OPTIONS"}, {"-Xmx64m", "command line"}});
  PerfDataVerdict v = DecidePerfDataCause(f);
  EXPECT_EQ(v.cause, PerfDataCause::kSharedMemOff);
  EXPECT_EQ(v.where, "JAVA_TOOL_OPTIONS");
  EXPECT_TRUE(
      Says(PerfDataCauseText(v, f), "-XX:+PerfDisableSharedMem (seen in JAVA_TOOL_OPTIONS)"));
  EXPECT_FALSE(Says(PerfDataCauseText(v, f), "no user name"));

  // -XX:-UsePerfData comes first: there are no counters at all, also for a
  // uid without a name.
  f = Facts(false, {{"-XX:+PerfDisableSharedMem", "command line"},
                    {"-XX:-UsePerfData", "@/app/jvm.args"}});
  v = DecidePerfDataCause(f);
  EXPECT_EQ(v.cause, PerfDataCause::kPerfDataOff);
  EXPECT_TRUE(Says(PerfDataCauseText(v, f), "-XX:-UsePerfData (seen in @/app/jvm.args)"));
}

TEST(PerfDataCause, AFlagTurnedBackIsNotNamed) {
  // The last one wins, as in the JVM.
  PerfDataCauseFacts f = Facts(false, {{"-XX:-UsePerfData", "JAVA_TOOL_OPTIONS"},
                                       {"-XX:+UsePerfData", "command line"},
                                       {"-XX:+PerfDisableSharedMem", "command line"},
                                       {"-XX:-PerfDisableSharedMem", "_JAVA_OPTIONS"}});
  PerfDataVerdict v = DecidePerfDataCause(f);
  EXPECT_EQ(v.cause, PerfDataCause::kUidWithoutName);
  // A look-alike is not the flag.
  f = Facts(true,
            {{"-XX:-UsePerfDataX", "command line"}, {"-Dx=-XX:-UsePerfData", "command line"}});
  v = DecidePerfDataCause(f);
  EXPECT_EQ(v.cause, PerfDataCause::kUnknown);
  std::string text = PerfDataCauseText(v, f);
  EXPECT_TRUE(Says(text, "set neither")) << text;
  EXPECT_TRUE(Says(text, "uid 4242 has a user name")) << text;
}

TEST(PerfDataCause, UnknownFactsClaimNothing) {
  PerfDataCauseFacts f;
  f.uid = 4242;  // passwd unreadable, options unknown
  PerfDataVerdict v = DecidePerfDataCause(f);
  EXPECT_EQ(v.cause, PerfDataCause::kUnknown);
  std::string text = PerfDataCauseText(v, f);
  EXPECT_TRUE(Says(text, "could not all be read")) << text;
  EXPECT_TRUE(Says(text, "is unknown")) << text;
  EXPECT_FALSE(Says(text, "runs with")) << text;
  EXPECT_FALSE(Says(text, "has no user name")) << text;
}

}  // namespace
}  // namespace memtrimd::jvm

// The launcher's `jcmd` line parser: it must take exactly the simple,
// well-formed lines and leave everything else to the full parser.

#include "daemon/cli/jcmd_command.h"

#include <gtest/gtest.h>

#include <vector>

namespace memtrimd {
namespace {

std::optional<JcmdConfig> Parse(std::vector<const char*> args) {
  return ParseSimpleJcmdLine(std::span<const char* const>(args.data(), args.size()));
}

TEST(SimpleJcmdLine, PidAndCommandWords) {
  auto c = Parse({"--pid", "42", "VM.native_memory", "summary", "scale=B"});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->pid, 42);
  EXPECT_EQ(c->command, "VM.native_memory summary scale=B");
  EXPECT_EQ(c->timeout, std::chrono::seconds(10));
}

TEST(SimpleJcmdLine, EqualsFormsAndTimeout) {
  auto c = Parse({"--timeout=2s", "--pid=7", "Thread.print"});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->pid, 7);
  EXPECT_EQ(c->timeout, std::chrono::seconds(2));
  EXPECT_EQ(c->command, "Thread.print");
}

TEST(SimpleJcmdLine, WordsAfterTheCommandBelongToIt) {
  auto c = Parse({"--pid", "7", "GC.class_histogram", "-all", "--pid"});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->command, "GC.class_histogram -all --pid");
}

TEST(SimpleJcmdLine, LeavesEverythingElseToTheFullParser) {
  EXPECT_FALSE(Parse({}));
  EXPECT_FALSE(Parse({"--help"}));
  EXPECT_FALSE(Parse({"--pid", "7"}));                              // no command
  EXPECT_FALSE(Parse({"VM.version"}));                              // no pid
  EXPECT_FALSE(Parse({"--pid"}));                                   // pid without value
  EXPECT_FALSE(Parse({"--pid", "x", "VM.version"}));                // not a pid
  EXPECT_FALSE(Parse({"--pid", "0", "VM.version"}));                // not a pid
  EXPECT_FALSE(Parse({"--pidfile", "7", "VM.version"}));            // unknown option
  EXPECT_FALSE(Parse({"--pid", "7", "--pid", "8", "VM.version"}));  // twice
  EXPECT_FALSE(Parse({"--pid", "7", "--timeout", "0s", "VM.version"}));
  EXPECT_FALSE(Parse({"--pid", "7", "--timeout", "soon", "VM.version"}));
  EXPECT_FALSE(Parse({"-p", "7", "VM.version"}));
  // "++" ends a subcommand for CLI11, so the full parser rejects what
  // follows it (fuzz regression).
  EXPECT_FALSE(Parse({"--pid", "7", "++", ""}));
  EXPECT_FALSE(Parse({"--pid", "7", "++", "VM.version"}));
}

}  // namespace
}  // namespace memtrimd

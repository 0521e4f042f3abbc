#include "collectors/jvm/attach_protocol.h"

#include <gtest/gtest.h>

#include <csignal>

namespace memtrimd::jvm {
namespace {

TEST(AttachProtocol, EncodesVersion1WithExactlyThreeArguments) {
  Result<std::string> r = EncodeRequestV1("jcmd", "VM.version");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, std::string("1\0jcmd\0VM.version\0\0\0", 20));
  r = EncodeRequestV1("load", "a", "b", "c");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, std::string("1\0load\0a\0b\0c\0", 13));
}

TEST(AttachProtocol, RefusesASecondCommandAndOversizedParts) {
  EXPECT_EQ(EncodeRequestV1("jcmd", "VM.version\nVM.flags").status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(EncodeRequestV1("jcmd", std::string("a\0b", 3)).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(EncodeRequestV1("jcmd", std::string(1025, 'x')).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_TRUE(EncodeRequestV1("jcmd", std::string(1024, 'x')).ok());
  EXPECT_FALSE(EncodeRequestV1("an-operation-name-too-long", "").ok());
  EXPECT_FALSE(EncodeRequestV1("", "").ok());
}

TEST(AttachProtocol, ParsesStatusAndOutput) {
  Result<AttachResponse> ok = ParseAttachResponse("0\nJDK 17.0.15\n");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->status, 0);
  EXPECT_EQ(ok->output, "JDK 17.0.15\n");
  Result<AttachResponse> err = ParseAttachResponse("-1\njava.lang.IllegalArgumentException\n");
  ASSERT_TRUE(err.ok());
  EXPECT_EQ(err->status, -1);
  Result<AttachResponse> v = ParseAttachResponse("101");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->status, 101);
  EXPECT_EQ(v->output, "");
  EXPECT_FALSE(ParseAttachResponse("").ok());
  EXPECT_FALSE(ParseAttachResponse("hello\n").ok());
  EXPECT_FALSE(ParseAttachResponse("99999999999999999999\n").ok());
}

SignalFacts Jvm() {
  SignalFacts f;
  f.is_hotspot = true;
  f.options_known = true;
  f.sig_caught = 1ull << (SIGQUIT - 1);
  f.cmdline = "java -Xmx1g -jar app.jar";
  return f;
}

TEST(AttachProtocol, SignalsOnlyAHotspotJvmThatCatchesSigquit) {
  EXPECT_EQ(DecideSignal(Jvm()), SignalVerdict::kMaySignal);
  SignalFacts f = Jvm();
  f.is_hotspot = false;
  EXPECT_EQ(DecideSignal(f), SignalVerdict::kNotHotspot);
  f = Jvm();
  f.sig_caught = 0;
  EXPECT_EQ(DecideSignal(f), SignalVerdict::kSigquitNotCaught);
  f = Jvm();
  f.sig_ignored = 1ull << (SIGQUIT - 1);
  EXPECT_EQ(DecideSignal(f), SignalVerdict::kSigquitNotCaught);
  f = Jvm();
  f.options_known = false;
  EXPECT_EQ(DecideSignal(f), SignalVerdict::kOptionsUnknown);
}

TEST(AttachProtocol, NeverSignalsDisabledAttachOrReducedSignals) {
  SignalFacts f = Jvm();
  f.cmdline = "java -XX:+DisableAttachMechanism -jar app.jar";
  EXPECT_EQ(DecideSignal(f), SignalVerdict::kAttachDisabled);
  f = Jvm();
  f.java_tool_options = "-XX:+DisableAttachMechanism";
  EXPECT_EQ(DecideSignal(f), SignalVerdict::kAttachDisabled);
  f = Jvm();
  f.underscore_java_options = "-Xmx1g -XX:+DisableAttachMechanism";
  EXPECT_EQ(DecideSignal(f), SignalVerdict::kAttachDisabled);
  f = Jvm();
  f.cmdline = "java -Xrs -jar app.jar";
  EXPECT_EQ(DecideSignal(f), SignalVerdict::kReducedSignals);
  f = Jvm();
  f.jdk_java_options = "-Xrs";
  EXPECT_EQ(DecideSignal(f), SignalVerdict::kReducedSignals);
}

TEST(AttachProtocol, LaterOptionsOverrideEarlierOnes) {
  // JAVA_TOOL_OPTIONS is applied first, the command line after it, and
  // _JAVA_OPTIONS last.
  SignalFacts f = Jvm();
  f.java_tool_options = "-XX:+DisableAttachMechanism";
  f.cmdline = "java -XX:-DisableAttachMechanism Main";
  EXPECT_EQ(DecideSignal(f), SignalVerdict::kMaySignal);
  f.underscore_java_options = "-XX:+DisableAttachMechanism";
  EXPECT_EQ(DecideSignal(f), SignalVerdict::kAttachDisabled);
  // A program argument that merely mentions the text is a whole token too;
  // that is the JVM's own rule as well (it stops at the main class, we do
  // not), so memtrimd errs on the side of not signalling.
  f = Jvm();
  f.cmdline = "java Main -Xrs";
  EXPECT_EQ(DecideSignal(f), SignalVerdict::kReducedSignals);
}

}  // namespace
}  // namespace memtrimd::jvm

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

// A JVM without hsperfdata whose options were read from the given sources.
SignalFacts Jvm(std::vector<JvmOption> options = {{"-Xmx1g", "command line"}}) {
  SignalFacts f;
  f.is_hotspot = true;
  f.options_known = true;
  f.sig_caught = 1ull << (SIGQUIT - 1);
  f.options = std::move(options);
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
  std::string where;
  EXPECT_EQ(DecideSignal(Jvm({{"-XX:+DisableAttachMechanism", "@/app/jvm.args"}}), &where),
            SignalVerdict::kAttachDisabled);
  EXPECT_EQ(where, "@/app/jvm.args");
  EXPECT_EQ(DecideSignal(Jvm({{"-Xrs", "command line"}}), &where), SignalVerdict::kReducedSignals);
  EXPECT_EQ(where, "command line");
  EXPECT_EQ(DecideSignal(Jvm({{"-XX:+ReduceSignalUsage", "JDK_JAVA_OPTIONS"}})),
            SignalVerdict::kReducedSignals);
  // A tool launcher's -J prefix counts only in the careful direction.
  EXPECT_EQ(DecideSignal(Jvm({{"-J-XX:+DisableAttachMechanism", "command line"}})),
            SignalVerdict::kAttachDisabled);
  EXPECT_EQ(DecideSignal(Jvm({{"-XX:+DisableAttachMechanism", "JAVA_TOOL_OPTIONS"},
                              {"-J-XX:-DisableAttachMechanism", "command line"}})),
            SignalVerdict::kAttachDisabled);
}

TEST(AttachProtocol, LaterOptionsOverrideEarlierOnes) {
  SignalFacts f = Jvm({{"-XX:+DisableAttachMechanism", "JAVA_TOOL_OPTIONS"},
                       {"-XX:-DisableAttachMechanism", "command line"}});
  EXPECT_EQ(DecideSignal(f), SignalVerdict::kMaySignal);
  f.options.push_back({"-XX:+DisableAttachMechanism", "_JAVA_OPTIONS"});
  EXPECT_EQ(DecideSignal(f), SignalVerdict::kAttachDisabled);
}

TEST(AttachProtocol, TheJvmsOwnVerdictWinsOverItsOptions) {
  // hsperfdata's sun.rt.jvmCapabilities is the flag as the JVM resolved it.
  SignalFacts f = Jvm({{"-XX:-DisableAttachMechanism", "command line"}});
  f.perf_attach_supported = false;
  std::string where;
  EXPECT_EQ(DecideSignal(f, &where), SignalVerdict::kAttachDisabled);
  EXPECT_EQ(where, "the JVM's hsperfdata");
  f = Jvm({{"-XX:+DisableAttachMechanism", "an argfile that changed since"}});
  f.perf_attach_supported = true;
  EXPECT_EQ(DecideSignal(f), SignalVerdict::kMaySignal);
  // With the JVM's verdict, unreadable options do not matter; -Xrs in its
  // own list of arguments still does.
  f = Jvm();
  f.options_known = false;
  f.perf_attach_supported = true;
  EXPECT_EQ(DecideSignal(f), SignalVerdict::kMaySignal);
  f.perf_vm_args = "-Xmx64m -Xrs";
  EXPECT_EQ(DecideSignal(f), SignalVerdict::kReducedSignals);
}

TEST(AttachProtocol, AJvmSignalledWithoutEffectIsNotSignalledAgain) {
  SignalFacts f = Jvm();
  f.perf_attach_supported = true;
  f.signalled_before = true;
  EXPECT_EQ(DecideSignal(f), SignalVerdict::kSignalledBefore);
  EXPECT_NE(std::string(SignalVerdictText(SignalVerdict::kSignalledBefore)).find("at most once"),
            std::string::npos);
}

}  // namespace
}  // namespace memtrimd::jvm

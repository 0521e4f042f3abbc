// Advice and the trim failure label follow an error's cause, never its
// wording: every error that drives advice or a label today, reworded with its
// cause kept, gives the same advice and label.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

#include "collectors/common/access.h"
#include "collectors/common/private_socket.h"
#include "collectors/common/status.h"
#include "collectors/jvm/attach_protocol.h"
#include "daemon/analysis/findings.h"
#include "daemon/report/incident_page.h"
#include "daemon/report/inspect.h"
#include "daemon/sampling/snapshot.h"
#include "daemon/trim/trim.h"

namespace memtrimd {
namespace {

using namespace std::chrono_literals;

// Each error as the code that makes it words it, with the cause it sets.
std::vector<Status> AdvisedErrors() {
  const std::string not_signalling = "attach: not signalling: ";
  auto verdict = [&](jvm::SignalVerdict v, Cause c) {
    return Status(ErrorCode::kUnavailable, not_signalling + jvm::SignalVerdictText(v), c);
  };
  return {
      Status(ErrorCode::kPermissionDenied,
             not_signalling + "the JVM's attach socket is owner-only: " +
                 NeedsCapability(Capability::kDacOverride),
             Cause::kNeedsCapability),
      Status(ErrorCode::kPermissionDenied,
             "attach: SIGQUIT to start the JVM's attach listener: " +
                 NeedsCapability(Capability::kKill),
             Cause::kNeedsCapability),
      Status(ErrorCode::kPermissionDenied,
             "agent: connect /proc/9/root/tmp/.memtrimd_agent.9.1: " +
                 NeedsCapability(Capability::kDacOverride, "root"),
             Cause::kNeedsCapabilityOrRoot),
      Status(ErrorCode::kPermissionDenied,
             "perf memory: process_vm_readv: " + NeedsCapability(Capability::kSysPtrace),
             Cause::kNeedsCapability),
      Status(ErrorCode::kNotFound, "attach: process 9 is gone", Cause::kGone),
      Status(ErrorCode::kNotFound,
             "attach: the JVM exited while memtrimd waited for its attach socket", Cause::kGone),
      Status(ErrorCode::kNotFound, "pid 9 exited (zombie)", Cause::kGone),
      Status(ErrorCode::kNotFound, "the target exited during the smaps read", Cause::kGone),
      Status(ErrorCode::kUnavailable, "attach: connect /proc/9/root/tmp/.java_pid9 timed out",
             Cause::kDeadline),
      Status(ErrorCode::kUnavailable, "agent: write timed out", Cause::kDeadline),
      Status(ErrorCode::kUnavailable, "agent: no complete answer before the deadline",
             Cause::kDeadline),
      Status::FromErrno(ETIMEDOUT, "attach: connect"),
      verdict(jvm::SignalVerdict::kAttachDisabled, Cause::kAttachDisabled),
      verdict(jvm::SignalVerdict::kOptionsUnknown, Cause::kJvmOptionsUnknown),
      verdict(jvm::SignalVerdict::kNotHotspot, Cause::kNotHotspot),
      verdict(jvm::SignalVerdict::kSigquitNotCaught, Cause::kStarting),
      verdict(jvm::SignalVerdict::kReducedSignals, Cause::kNoAttachListener),
      verdict(jvm::SignalVerdict::kSignalledBefore, Cause::kNoAttachListener),
      Status(ErrorCode::kUnavailable,
             "attach: the JVM's attach socket did not appear within 2000 ms; memtrimd will not "
             "signal this JVM again",
             Cause::kNoAttachListener),
      Status(ErrorCode::kUnavailable,
             "attach: no listener (attach: no socket at /proc/9/root/tmp/.java_pid9) and "
             "signalling is off",
             Cause::kNoAttachListener),
      Status(ErrorCode::kUnavailable, "agent: no socket at /proc/9/root/tmp/.memtrimd_agent.9.1",
             Cause::kNoSocket),
      Status(ErrorCode::kNotFound,
             "hsperfdata: no perf data file: the JVM's uid 1000 has no user name",
             Cause::kNoPerfFile),
      Status(ErrorCode::kNotFound,
             "perf memory: the JVM has none (-XX:-UsePerfData, or it is still starting)",
             Cause::kStarting),
      // No cause: the collector's own advice.
      Status(ErrorCode::kPermissionDenied, "open /proc/9/smaps: Permission denied"),
  };
}

// `text` with every `message` in it replaced, so that two renderings compare
// on what surrounds the message.
std::string Without(std::string text, const std::string& message) {
  for (std::size_t at = text.find(message); at != std::string::npos; at = text.find(message, at)) {
    text.replace(at, message.size(), "<error>");
  }
  return text;
}

std::string Missing(const TargetSample& s) {
  std::string out;
  for (const MissingFigure& m : MissingFigures(s)) out += m.figure + ": " + m.why + "\n";
  return out;
}

TargetSample JvmWithVersion() {
  TargetSample s;
  JvmSample j;
  j.attachable = true;
  jvm::JvmVersion v;
  v.feature = 21;
  j.version = v;
  s.jvm = j;
  return s;
}

// The "What to do" of every collector's failure on the incident page.
std::string CollectorAdvice(const Status& e) {
  TargetSnapshot ts;
  ts.target.pid = 9;
  ts.target.comm = "prog";
  for (const char* name : {"process", "glibc", "cgroup", "jvm", "hsperfdata", "agent", "sites"}) {
    ts.collectors.push_back({name, false, 0.1, e.message(), e.cause()});
  }
  Snapshot snap;
  snap.sequence = 1;
  snap.taken_at = std::chrono::system_clock::time_point(1'800'000'000s);
  snap.targets.push_back(ts);
  const std::string html = RenderIncidentPage(&snap, nullptr, nullptr, {}).html;
  std::string out;
  const std::string start = "What to do: ";
  for (std::size_t at = html.find(start); at != std::string::npos; at = html.find(start, at)) {
    std::size_t end = html.find("</span>", at);
    out += html.substr(at, end - at) + "\n";
    at = end;
  }
  return out;
}

// Everything memtrimd says or labels after `e`, with the message itself
// taken out.
std::string AdviceAfter(const Status& e) {
  const std::string& m = e.message();
  std::string out = "trim label: " + TrimFailureReason(e) + "\n";

  TargetSample attach;
  attach.jvm = JvmSample{};
  attach.jvm->attach_error = m;
  attach.jvm->attach_cause = e.cause();
  out += Without(Missing(attach), m);

  TargetSample agent = JvmWithVersion();
  agent.agent_loaded = true;
  agent.agent_unreachable = m;
  agent.agent_unreachable_cause = e.cause();
  agent.jvm_buffers_missing = "agent unreachable: " + m;
  agent.jvm_perf_missing = m;
  agent.jvm_perf_missing_cause = e.cause();
  out += Without(Missing(agent), m);

  TargetSnapshot inspect;
  inspect.target.pid = 9;
  inspect.target.comm = "prog";
  inspect.sample.agent_loaded = true;
  inspect.sample.agent_unreachable = m;
  inspect.sample.agent_unreachable_cause = e.cause();
  out += Without(RenderInspectTable(inspect, std::chrono::system_clock::time_point(1'800'000'000s)),
                 m);

  return out + CollectorAdvice(e);
}

TEST(CauseAdvice, RewordedErrorsGiveTheSameAdviceAndLabel) {
  for (const Status& e : AdvisedErrors()) {
    const Status reworded(e.code(), "reworded", e.cause());
    EXPECT_EQ(AdviceAfter(e), AdviceAfter(reworded)) << e.message();
  }
}

// The advice above is not the same for every error: each cause is told
// apart where today's advice tells it apart.
TEST(CauseAdvice, CausesChooseTheAdvice) {
  auto reworded = [](ErrorCode code, Cause cause) {
    return AdviceAfter(Status(code, "reworded", cause));
  };
  auto has = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  EXPECT_TRUE(has(reworded(ErrorCode::kUnavailable, Cause::kDeadline), "trim label: deadline"));
  EXPECT_TRUE(has(reworded(ErrorCode::kUnavailable, Cause::kNone), "trim label: unavailable"));
  EXPECT_TRUE(has(reworded(ErrorCode::kUnavailable, Cause::kNoSocket), "the agent did not start"));
  EXPECT_TRUE(has(reworded(ErrorCode::kPermissionDenied, Cause::kNeedsCapabilityOrRoot),
                  "run memtrimd as root"));
  EXPECT_FALSE(
      has(reworded(ErrorCode::kPermissionDenied, Cause::kNeedsCapability), "run memtrimd as root"));
  EXPECT_TRUE(has(reworded(ErrorCode::kPermissionDenied, Cause::kNeedsCapability),
                  "give memtrimd the capability named"));
  EXPECT_TRUE(has(reworded(ErrorCode::kNotFound, Cause::kGone), "the process exited"));
  EXPECT_TRUE(has(reworded(ErrorCode::kUnavailable, Cause::kAttachDisabled),
                  "start the JVM without -XX:+DisableAttachMechanism"));
  EXPECT_TRUE(has(reworded(ErrorCode::kUnavailable, Cause::kJvmOptionsUnknown),
                  "start the JVM without -XX:+DisableAttachMechanism"));
  EXPECT_TRUE(has(reworded(ErrorCode::kUnavailable, Cause::kNotHotspot), "HotSpot JVMs only"));
  EXPECT_TRUE(has(reworded(ErrorCode::kUnavailable, Cause::kStarting), "nothing to do yet"));
  EXPECT_TRUE(
      has(reworded(ErrorCode::kUnavailable, Cause::kNoAttachListener), "-XX:+StartAttachListener"));
  EXPECT_TRUE(has(reworded(ErrorCode::kNotFound, Cause::kNoPerfFile),
                  "memtrimd looks for the file again every sample"));
}

// Where errors are made, they carry their cause, and wrapping keeps it.
TEST(CauseAdvice, ErrorsCarryTheirCause) {
  EXPECT_EQ(Status::FromErrno(ETIMEDOUT, "x").cause(), Cause::kDeadline);
  EXPECT_EQ(Status::FromErrno(EACCES, "x").cause(), Cause::kNone);
  EXPECT_EQ(Status(ErrorCode::kNotFound, "a", Cause::kGone).WithContext("b: ").cause(),
            Cause::kGone);
  EXPECT_EQ(Status(ErrorCode::kNotFound, "a").WithCause(Cause::kGone).cause(), Cause::kGone);
  EXPECT_EQ(FirstCause(Cause::kNoSocket, Cause::kNoAttachListener), Cause::kNoAttachListener);
  EXPECT_EQ(FirstCause(Cause::kStarting, Cause::kNoPerfFile), Cause::kNoPerfFile);
  EXPECT_EQ(FirstCause(Cause::kNeedsCapability, Cause::kNoPerfFile), Cause::kNeedsCapability);
  EXPECT_EQ(FirstCause(Cause::kNone, Cause::kGone), Cause::kGone);

  Target t;
  t.pid = 1;
  Result<UniqueFd> none = ConnectPrivateSocket(t, "/nonexistent-memtrimd-dir/socket",
                                               SocketClock::now() + 100ms, "agent");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().cause(), Cause::kNoSocket);
}

}  // namespace
}  // namespace memtrimd

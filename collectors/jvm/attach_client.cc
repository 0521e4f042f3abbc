#include "collectors/jvm/attach_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "collectors/common/access.h"
#include "collectors/common/file_reader.h"
#include "collectors/common/private_socket.h"
#include "collectors/jvm/attach_trigger.h"
#include "collectors/jvm/signal_facts.h"
#include "collectors/procfs/proc_stat.h"

namespace memtrimd::jvm {
namespace {

using Clock = SocketClock;
using namespace std::chrono_literals;

std::string SocketPath(const Target& t) {
  return t.proc_dir + "/root/tmp/.java_pid" + std::to_string(t.nspid);
}

// A handle on the target process itself (pidfd, Linux 5.3+): a signal sent
// through it cannot reach another process that reused the pid, and polling
// it tells when the process exits. Without pidfds, kill() after a start
// time check.
class ProcessHandle {
 public:
  // kNotFound when the process is gone or its pid now names another one.
  static Result<ProcessHandle> Open(const Target& t) {
    ProcessHandle h;
    h.pid_ = t.pid;
    long fd = ::syscall(SYS_pidfd_open, t.pid, 0);
    if (fd < 0 && errno == ESRCH) return Gone(t);
    if (fd >= 0) h.fd_ = UniqueFd(static_cast<int>(fd));
    // Checked after the pidfd exists, so the pidfd is this very process.
    Result<std::string> stat = ReadSmallFile(t.proc_dir + "/stat");
    if (!stat.ok()) return Gone(t);
    Result<procfs::ProcStat> parsed = procfs::ParseProcStat(*stat);
    if (!parsed.ok() || (t.start_ticks != 0 && parsed->start_ticks != t.start_ticks)) {
      return Gone(t);
    }
    return h;
  }

  int Signal(int sig) const {
    if (fd_.get() >= 0) {
      return static_cast<int>(::syscall(SYS_pidfd_send_signal, fd_.get(), sig, nullptr, 0));
    }
    return ::kill(pid_, sig);
  }

  // Waits up to `ms`; true when the process has exited.
  bool WaitExit(int ms) const {
    if (fd_.get() < 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      return ::kill(pid_, 0) != 0 && errno == ESRCH;
    }
    pollfd p{fd_.get(), POLLIN, 0};
    return ::poll(&p, 1, ms) > 0;
  }

 private:
  static Status Gone(const Target& t) {
    return Status(ErrorCode::kNotFound, "attach: process " + std::to_string(t.pid) + " is gone",
                  Cause::kGone);
  }
  pid_t pid_ = 0;
  UniqueFd fd_;
};

int MsUntil(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
}

// Whether memtrimd could start the JVM's attach listener and then use it:
// kill(2)'s rule (a matching uid, or CAP_KILL) for the SIGQUIT, and write
// permission on the owner-only socket the JVM makes (its uid, or
// CAP_DAC_OVERRIDE). The JVM's real and saved uids are taken to be its
// effective one, as for every JVM that was not started setuid.
Status MayStartListener(const Target& t) {
  const bool same_uid = ::geteuid() == t.uid;
  if (!same_uid && !HaveCapability(Capability::kDacOverride)) {
    return Status(ErrorCode::kPermissionDenied,
                  "attach: not signalling: the JVM's attach socket is owner-only: " +
                      NeedsCapability(Capability::kDacOverride),
                  Cause::kNeedsCapability);
  }
  if (!same_uid && ::getuid() != t.uid && !HaveCapability(Capability::kKill)) {
    return Status(ErrorCode::kPermissionDenied,
                  "attach: not signalling: SIGQUIT to start the JVM's attach listener: " +
                      NeedsCapability(Capability::kKill),
                  Cause::kNeedsCapability);
  }
  return Status::Ok();
}

// Why a verdict keeps memtrimd from signalling, for the advice: -Xrs and a
// JVM signalled before both leave it without a listener that a signal could
// start.
Cause VerdictCause(SignalVerdict v) {
  switch (v) {
    case SignalVerdict::kMaySignal:
      return Cause::kNone;
    case SignalVerdict::kAttachDisabled:
      return Cause::kAttachDisabled;
    case SignalVerdict::kReducedSignals:
    case SignalVerdict::kSignalledBefore:
      return Cause::kNoAttachListener;
    case SignalVerdict::kNotHotspot:
      return Cause::kNotHotspot;
    case SignalVerdict::kSigquitNotCaught:
      return Cause::kStarting;
    case SignalVerdict::kOptionsUnknown:
      return Cause::kJvmOptionsUnknown;
  }
  return Cause::kNone;
}

// Finds the socket, starting the listener with SIGQUIT when needed and safe.
Result<UniqueFd> Open(const Target& t, const AttachOptions& o) {
  const auto deadline = Clock::now() + o.connect_timeout;
  const std::string path = SocketPath(t);
  SocketFailure failure;
  Result<UniqueFd> fd = ConnectPrivateSocket(t, path, deadline, "attach", &failure);
  if (fd.ok()) return fd;
  // Only "no socket" and "stale socket" are worth a signal.
  if (failure != SocketFailure::kMissing && failure != SocketFailure::kStale) return fd.status();
  if (!o.allow_signal) {
    return Status(ErrorCode::kUnavailable,
                  "attach: no listener (" + fd.status().message() + ") and signalling is off",
                  FirstCause(fd.status().cause(), Cause::kNoAttachListener));
  }
  // Not a signal memtrimd could not follow up: the listener's socket will
  // be the JVM user's, owner-only, and the signal itself needs that user or
  // CAP_KILL. Checked before the trigger file exists and before anything is
  // sent, so the JVM is left exactly as it was.
  if (Status can = MayStartListener(t); !can.ok()) return can;
  Result<ProcessHandle> process = ProcessHandle::Open(t);
  if (!process.ok()) return process.status();
  SignalFacts facts = ReadSignalFacts(t, o.signal_record.get());
  std::string where;
  SignalVerdict verdict = DecideSignal(facts, &where);
  if (verdict != SignalVerdict::kMaySignal) {
    std::string why = std::string("attach: not signalling: ") + SignalVerdictText(verdict);
    if (!where.empty()) why += " (seen in " + where + ")";
    // Say which read failed: a command line or environment over the read cap
    // is refused on purpose, and the user should see that, not a mystery.
    if (verdict == SignalVerdict::kOptionsUnknown && !facts.options_error.empty()) {
      why += " (" + facts.options_error + ")";
    }
    return Status(ErrorCode::kUnavailable, why, VerdictCause(verdict));
  }
  // Removed on every way out of here, through its directory descriptor.
  Result<AttachTrigger> trigger = AttachTrigger::Create(t);
  if (!trigger.ok()) return trigger.status();
  if (process->Signal(SIGQUIT) != 0) {
    const int err = errno;
    if (err == EPERM) {
      return Status(ErrorCode::kPermissionDenied,
                    "attach: SIGQUIT to start the JVM's attach listener: " +
                        NeedsCapability(Capability::kKill),
                    Cause::kNeedsCapability);
    }
    return Status::FromErrno(err, "attach: SIGQUIT");
  }
  // One signal only: a second one to a JVM whose listener did not start
  // (attach disabled where memtrimd cannot see it) is a second thread dump.
  // The socket appears ~20 ms later.
  for (;;) {
    struct stat st;
    if (::lstat(path.c_str(), &st) == 0) {
      SocketFailure again;
      Result<UniqueFd> c = ConnectPrivateSocket(t, path, deadline, "attach", &again);
      if (c.ok() || again != SocketFailure::kStale) return c;
    }
    const int left = MsUntil(deadline);
    if (left == 0) break;
    if (process->WaitExit(std::min(left, 10))) {
      return Status(ErrorCode::kNotFound,
                    "attach: the JVM exited while memtrimd waited for its attach socket",
                    Cause::kGone);
    }
  }
  if (o.signal_record) o.signal_record->RecordSignalWithoutListener(t.Key());
  return Status(ErrorCode::kUnavailable,
                "attach: the JVM's attach socket did not appear within " +
                    std::to_string(o.connect_timeout.count()) +
                    " ms; memtrimd will not signal this JVM again",
                Cause::kNoAttachListener);
}

}  // namespace

Result<AttachResponse> ExecuteJcmd(const Target& target, std::string_view command,
                                   const AttachOptions& options) {
  return ExecuteAttach(target, "jcmd", command, {}, {}, options);
}

Result<AttachResponse> ExecuteAttach(const Target& target, std::string_view op,
                                     std::string_view arg0, std::string_view arg1,
                                     std::string_view arg2, const AttachOptions& options) {
  Result<std::string> request = EncodeRequestV1(op, arg0, arg1, arg2);
  if (!request.ok()) return request.status();
  Result<UniqueFd> sock = Open(target, options);
  if (!sock.ok()) return sock.status();
  const auto deadline = Clock::now() + options.command_timeout;
  Status w = SendAll(sock->get(), *request, deadline, "attach");
  if (!w.ok()) return w;
  Result<std::string> answer =
      ReceiveAll(sock->get(), options.max_response_bytes, deadline, "attach");
  if (!answer.ok()) return answer.status();
  return ParseAttachResponse(*answer);
}

}  // namespace memtrimd::jvm

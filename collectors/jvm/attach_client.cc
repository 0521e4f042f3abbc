#include "collectors/jvm/attach_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "collectors/common/file_reader.h"
#include "collectors/common/private_socket.h"
#include "collectors/procfs/cmdline.h"
#include "collectors/procfs/proc_status.h"

namespace memtrimd::jvm {
namespace {

using Clock = SocketClock;
using namespace std::chrono_literals;

std::string SocketPath(const Target& t) {
  return t.proc_dir + "/root/tmp/.java_pid" + std::to_string(t.nspid);
}

// Creates the trigger file the JVM looks for on SIGQUIT: in its working
// directory, else in its /tmp. Returns the path created ("" if it existed
// already, e.g. another client is attaching: then it is not ours to remove).
Result<std::string> CreateTrigger(const Target& t) {
  const std::string name = "/.attach_pid" + std::to_string(t.nspid);
  Status last;
  for (const std::string& dir : {t.proc_dir + "/cwd", t.proc_dir + "/root/tmp"}) {
    std::string path = dir + name;
    // O_NOFOLLOW|O_EXCL: a pre-planted symlink is never followed.
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::close(fd);
      return path;
    }
    if (errno == EEXIST) {
      struct stat st;
      if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return std::string();
    }
    last = Status::FromErrno(errno, "attach: create " + path);
  }
  return last;
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
                  "attach: no listener (" + fd.status().message() + ") and signalling is off");
  }
  SignalFacts facts = ReadSignalFacts(t);
  SignalVerdict verdict = DecideSignal(facts);
  if (verdict != SignalVerdict::kMaySignal) {
    std::string why = std::string("attach: not signalling: ") + SignalVerdictText(verdict);
    // Say which read failed: a command line or environment over the read cap
    // is refused on purpose, and the user should see that, not a mystery.
    if (verdict == SignalVerdict::kOptionsUnknown && !facts.options_error.empty()) {
      why += " (" + facts.options_error + ")";
    }
    return Status(ErrorCode::kUnavailable, why);
  }
  Result<std::string> trigger = CreateTrigger(t);
  if (!trigger.ok()) return trigger.status();
  auto cleanup = [&] {
    if (!trigger->empty()) ::unlink(trigger->c_str());
  };
  if (::kill(t.pid, SIGQUIT) != 0) {
    Status st = Status::FromErrno(errno, "attach: kill SIGQUIT");
    cleanup();
    return st;
  }
  // The socket appears ~20 ms later; signal once more at half time in case
  // the first signal raced with the JVM's start-up.
  const auto half = Clock::now() + (deadline - Clock::now()) / 2;
  bool resent = false;
  for (;;) {
    struct stat st;
    if (::lstat(path.c_str(), &st) == 0) {
      SocketFailure again;
      Result<UniqueFd> c = ConnectPrivateSocket(t, path, deadline, "attach", &again);
      if (c.ok() || again != SocketFailure::kStale) {
        cleanup();
        return c;
      }
    }
    if (Clock::now() >= deadline) break;
    if (!resent && Clock::now() >= half) {
      ::kill(t.pid, SIGQUIT);
      resent = true;
    }
    std::this_thread::sleep_for(10ms);
  }
  cleanup();
  return Status(ErrorCode::kUnavailable, "attach: the JVM's attach socket did not appear within " +
                                             std::to_string(o.connect_timeout.count()) + " ms");
}

}  // namespace

SignalFacts ReadSignalFacts(const Target& t) {
  SignalFacts f;
  f.is_hotspot = t.runtime == Runtime::kJvm;
  Result<std::string> status = ReadSmallFile(t.proc_dir + "/status");
  if (status.ok()) {
    Result<procfs::ProcStatus> st = procfs::ParseProcStatus(*status);
    if (st.ok()) {
      f.sig_caught = st->sig_caught;
      f.sig_ignored = st->sig_ignored;
    }
  }
  Result<std::string> cmdline = ReadSmallFile(t.proc_dir + "/cmdline", 1u << 20);
  Result<std::string> environ = ReadSmallFile(t.proc_dir + "/environ", 1u << 20);
  f.options_known = cmdline.ok() && environ.ok();
  if (!cmdline.ok()) f.options_error = cmdline.status().message();
  if (cmdline.ok() && !environ.ok()) f.options_error = environ.status().message();
  if (f.options_known) {
    f.cmdline = procfs::CmdlineToString(*cmdline);
    f.java_tool_options = EnvValue(*environ, "JAVA_TOOL_OPTIONS").value_or("");
    f.jdk_java_options = EnvValue(*environ, "JDK_JAVA_OPTIONS").value_or("");
    f.underscore_java_options = EnvValue(*environ, "_JAVA_OPTIONS").value_or("");
  }
  return f;
}

Result<AttachResponse> ExecuteJcmd(const Target& target, std::string_view command,
                                   const AttachOptions& options) {
  Result<std::string> request = EncodeRequestV1("jcmd", command);
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

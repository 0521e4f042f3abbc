// A HotSpot attach client: runs one diagnostic command in a JVM, from
// outside, without jcmd and without starting any process.
//
// It reaches the JVM's /tmp through /proc/<pid>/root (so a JVM with its own
// mount namespace and private /tmp works), checks the socket's owner and
// mode before connecting and the peer's pid after, and starts the JVM's
// attach listener with SIGQUIT only when that is safe (signal_facts.h,
// DecideSignal), once per JVM at most when the listener does not come up
// (SignalRecord, signal_record.h). Every blocking step has a deadline.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>

#include "collectors/common/status.h"
#include "collectors/common/target.h"
#include "collectors/jvm/attach_protocol.h"
#include "collectors/jvm/signal_record.h"

namespace memtrimd::jvm {

struct AttachOptions {
  // Budget for finding or starting the listener and connecting.
  std::chrono::milliseconds connect_timeout{3000};
  // Budget for sending the command and reading the whole answer.
  std::chrono::milliseconds command_timeout{10000};
  // Answers larger than this are an error, not memory growth.
  std::size_t max_response_bytes = 4u << 20;
  // Whether memtrimd may send SIGQUIT to start a listener that is not running.
  bool allow_signal = true;
  // The JVMs signalled in vain, shared by every attach of the process (the
  // daemon sets its own); each options struct starts with one of its own,
  // so an attach never signals a JVM twice for want of a record.
  std::shared_ptr<SignalRecord> signal_record = std::make_shared<SignalRecord>();
};

// Runs `command` (a single jcmd line such as "VM.native_memory summary
// scale=B") in the JVM `target`. Errors: kUnavailable (no listener and it may
// not or could not be started; stale socket; deadline), kPermissionDenied,
// kInvalidArgument (bad command), kTooLarge, kNotFound (process gone).
// Thread-safe; one command per connection.
Result<AttachResponse> ExecuteJcmd(const Target& target, std::string_view command,
                                   const AttachOptions& options = {});

// Runs one attach operation other than "jcmd" (e.g. "load" <library>
// <absolute> <options>), with ExecuteJcmd's checks and deadlines.
Result<AttachResponse> ExecuteAttach(const Target& target, std::string_view op,
                                     std::string_view arg0, std::string_view arg1,
                                     std::string_view arg2, const AttachOptions& options = {});

// Something that runs one diagnostic command in a JVM: ExecuteJcmd, or a
// recording of its answers.
using JcmdExecutor = std::function<Result<AttachResponse>(
    const Target& target, std::string_view command, const AttachOptions& options)>;

}  // namespace memtrimd::jvm

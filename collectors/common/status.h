// Errors as values: everything that touches the target (files, sockets,
// memory) returns a Status or a Result<T>; nothing throws across modules.
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace memtrimd {

enum class ErrorCode {
  kOk = 0,
  kNotFound,          // the process or file is gone (ENOENT, ESRCH)
  kPermissionDenied,  // EACCES, EPERM
  kInvalidArgument,   // bad user input (flags, config)
  kParseError,        // a source said something we do not understand
  kTooLarge,          // a source exceeded its size cap
  kUnavailable,       // not there right now; may work later
  kBusy,              // another operation of the same kind is running
  kInternal,
};

// Why an error happened, in the terms advice and metric labels tell apart
// (ErrorCode says how to treat it; Cause says what to tell the user). Set
// where the error is made, so that rewording a message changes neither.
// Declared in precedence order: when one error is reported with another one
// inside it (FirstCause), the earlier cause decides the advice.
enum class Cause {
  kNone = 0,
  kNeedsCapability,        // a capability memtrimd lacks, or the target's uid
  kNeedsCapabilityOrRoot,  // a capability memtrimd lacks, or root (a socket root made)
  kGone,                   // the target exited
  kDeadline,               // a step ran out of time
  kNoPerfFile,             // the JVM's hsperfdata file was not found
  kAttachDisabled,         // -XX:+DisableAttachMechanism
  kJvmOptionsUnknown,      // options unread: attach disabled and -Xrs not ruled out
  kNotHotspot,             // not a HotSpot JVM
  kStarting,               // the JVM is still starting
  kNoAttachListener,       // no listener, and no signal starts one (-Xrs, signalled before, off)
  kNoSocket,               // no socket file where the listener would be
};

// The cause that decides when an error carries two: the earlier declared,
// kNone losing to any.
Cause FirstCause(Cause a, Cause b);

class Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message, Cause cause = Cause::kNone)
      : code_(code), message_(std::move(message)), cause_(cause) {}

  static Status Ok() { return {}; }
  // Maps an errno value to a code and appends strerror to `what`.
  static Status FromErrno(int err, const std::string& what);

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  Cause cause() const { return cause_; }

  // The same error with `cause`.
  Status WithCause(Cause cause) const { return Status(code_, message_, cause); }
  // The same error, its message after `context` ("memory.stat: "): code and
  // cause kept.
  Status WithContext(const std::string& context) const {
    return Status(code_, context + message_, cause_);
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
  Cause cause_ = Cause::kNone;
};

// Holds either a value or a non-ok Status.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  // REQUIRES: ok().
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  // Ok status when ok().
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace memtrimd

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

class Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  // Maps an errno value to a code and appends strerror to `what`.
  static Status FromErrno(int err, const std::string& what);

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
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

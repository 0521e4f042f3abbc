#include "collectors/common/status.h"

#include <cstring>

namespace memtrimd {

Status Status::FromErrno(int err, const std::string& what) {
  ErrorCode code = ErrorCode::kInternal;
  Cause cause = Cause::kNone;
  switch (err) {
    case ENOENT:
    case ESRCH:
      code = ErrorCode::kNotFound;
      break;
    case EACCES:
    case EPERM:
      code = ErrorCode::kPermissionDenied;
      break;
    case EFBIG:
      code = ErrorCode::kTooLarge;
      break;
    case ETIMEDOUT:
      code = ErrorCode::kUnavailable;
      cause = Cause::kDeadline;
      break;
    case EAGAIN:
    case ECONNREFUSED:
      code = ErrorCode::kUnavailable;
      break;
    default:
      break;
  }
  return Status(code, what + ": " + std::strerror(err), cause);
}

Cause FirstCause(Cause a, Cause b) {
  if (a == Cause::kNone) return b;
  if (b == Cause::kNone) return a;
  return static_cast<int>(a) < static_cast<int>(b) ? a : b;
}

}  // namespace memtrimd

#include "collectors/common/status.h"

#include <cstring>

namespace memtrimd {

Status Status::FromErrno(int err, const std::string& what) {
  ErrorCode code = ErrorCode::kInternal;
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
    case EAGAIN:
    case ETIMEDOUT:
    case ECONNREFUSED:
      code = ErrorCode::kUnavailable;
      break;
    default:
      break;
  }
  return Status(code, what + ": " + std::strerror(err));
}

}  // namespace memtrimd

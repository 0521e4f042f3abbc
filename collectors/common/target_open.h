// Opening a file by the name a target would use for it, in its own view of
// the filesystem (its root, its working directory), from outside it.
#pragma once

#include <string>

#include "collectors/common/target.h"
#include "collectors/common/unique_fd.h"

namespace memtrimd {

// Opens `path` as the target would, without blocking (O_NONBLOCK): an
// absolute name inside its root directory (openat2 RESOLVE_IN_ROOT where the
// kernel has it), a relative one beneath its working directory
// (RESOLVE_BENEATH: EXDEV when it leaves it). -1 (errno set) on failure.
// With `path_only`, an O_PATH descriptor: nothing is opened for reading
// (no device's open runs) until the caller has checked what it is.
UniqueFd OpenAsTarget(const Target& target, const std::string& path, bool path_only = false);

}  // namespace memtrimd

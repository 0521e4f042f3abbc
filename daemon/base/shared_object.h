// Loading memtrimd's own shared objects (the web module, the civetweb TLS
// shims) from where the build or the install puts them.
#pragma once

#include <string>

#include "collectors/common/status.h"

namespace memtrimd {

// dlopen()s `name` from beside the running executable, else from
// ../lib/memtrimd relative to it (the install layout). Never unloaded.
// kUnavailable naming the file (and dlerror()'s reason when it is there but
// does not load).
Result<void*> OpenBesideExecutable(const std::string& name, int dlopen_flags);

}  // namespace memtrimd

#include "daemon/base/shared_object.h"

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

namespace memtrimd {
namespace {

std::string ExecutableDir() {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return ".";
  std::string path(self, static_cast<std::size_t>(n));
  return path.substr(0, path.rfind('/'));
}

}  // namespace

Result<void*> OpenBesideExecutable(const std::string& name, int dlopen_flags) {
  std::string dir = ExecutableDir();
  std::string error;
  for (const std::string& candidate : {dir + "/" + name, dir + "/../lib/memtrimd/" + name}) {
    if (access(candidate.c_str(), R_OK) != 0) continue;
    // RTLD_NODELETE: what it defines stays in use until exit.
    if (void* handle = dlopen(candidate.c_str(), dlopen_flags | RTLD_NODELETE)) return handle;
    const char* e = dlerror();
    error = e != nullptr ? e : "dlopen failed";
  }
  if (!error.empty()) return Status(ErrorCode::kUnavailable, "cannot load " + name + ": " + error);
  return Status(ErrorCode::kUnavailable,
                name + " is missing beside memtrimd-daemon and in ../lib/memtrimd");
}

}  // namespace memtrimd

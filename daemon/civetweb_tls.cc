#include "daemon/civetweb_tls.h"

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <string>

namespace memtrimd {
namespace {

std::string ExecutableDir() {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return ".";
  std::string path(self, static_cast<std::size_t>(n));
  return path.substr(0, path.rfind('/'));
}

Status LoadShim(const std::string& name) {
  std::string dir = ExecutableDir();
  std::string error;
  for (const std::string& candidate : {dir + "/" + name, dir + "/../lib/memtrimd/" + name}) {
    if (access(candidate.c_str(), R_OK) != 0) continue;
    // Never unloaded: civetweb keeps using it.
    if (dlopen(candidate.c_str(), RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE) != nullptr) {
      return Status::Ok();
    }
    const char* e = dlerror();
    error = e != nullptr ? e : "dlopen failed";
  }
  return Status(ErrorCode::kUnavailable, "TLS needs " + name +
                                             " beside memtrimd-daemon or in ../lib/memtrimd" +
                                             (error.empty() ? std::string() : ": " + error));
}

}  // namespace

Status PrepareCivetwebTls() {
  static const Status loaded = [] {
    Status crypto = LoadShim("libmemtrimd_civetweb_crypto.so");
    if (!crypto.ok()) return crypto;
    return LoadShim("libmemtrimd_civetweb_ssl.so");
  }();
  return loaded;
}

}  // namespace memtrimd

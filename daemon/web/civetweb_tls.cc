#include "daemon/web/civetweb_tls.h"

#include <dlfcn.h>

#include <string>

#include "daemon/base/shared_object.h"

namespace memtrimd {
namespace {

Status LoadShim(const std::string& name) {
  // RTLD_GLOBAL: civetweb's own dlopen("libssl.so") must find the shim.
  Result<void*> shim = OpenBesideExecutable(name, RTLD_NOW | RTLD_GLOBAL);
  if (!shim.ok()) return Status(ErrorCode::kUnavailable, "TLS: " + shim.status().message());
  return Status::Ok();
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

// Finding the web module from memtrimd-daemon (see web_module.h).
#include <dlfcn.h>

#include "daemon/base/shared_object.h"
#include "daemon/build_info.h"
#include "daemon/web/web_module.h"

namespace memtrimd {
namespace {

Result<const WebModule*> Load() {
  Result<void*> handle = OpenBesideExecutable(kWebModuleFile, RTLD_NOW | RTLD_LOCAL);
  if (!handle.ok()) return handle.status();
  using Entry = const WebModule* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(*handle, kWebModuleEntry));
  if (entry == nullptr) {
    return Status(ErrorCode::kUnavailable,
                  std::string(kWebModuleFile) + " has no " + kWebModuleEntry);
  }
  const WebModule* module = entry();
  if (std::string(module->revision) != kRevision) {
    return Status(ErrorCode::kUnavailable, std::string(kWebModuleFile) + " is from build " +
                                               module->revision + ", memtrimd-daemon from " +
                                               kRevision + ": install both from one build");
  }
  return module;
}

}  // namespace

Result<const WebModule*> LoadWebModule() {
  static const Result<const WebModule*> module = Load();
  return module;
}

}  // namespace memtrimd

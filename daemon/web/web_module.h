// The web module, libmemtrimd_web.so: everything --web.config.file needs
// that links YAML and OpenSSL (the config parser, TLS, bcrypt). memtrimd-daemon
// loads it only when a web config is given, so that a plain memtrimd does not
// map libcrypto, libssl and yaml-cpp: about 1.9 MiB of its RSS
// (docs/benchmarks.md).
//
// The host calls the module only through the function pointers of WebModule
// and the virtual functions of what they return, so memtrimd-daemon has no
// link-time reference into it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "collectors/common/status.h"
#include "daemon/web/tls_server.h"
#include "daemon/web/web_state.h"

namespace memtrimd {

struct WebModule {
  // kRevision of the build the module comes from: host and module share C++
  // types, so they must come from one build.
  const char* revision;
  Result<std::shared_ptr<const WebState>> (*load)(const std::string& path);
  SSL_CTX* (*new_server_context)(TlsMaterialSource source, std::function<void()> handshake_started);
  void (*free_server_context)(SSL_CTX* ctx);
};

// The module's entry point, extern "C" memtrimd_web_module(), is the only
// symbol libmemtrimd_web.so exports (web_module_entry.cc).
inline constexpr const char* kWebModuleFile = "libmemtrimd_web.so";
inline constexpr const char* kWebModuleEntry = "memtrimd_web_module";

// In memtrimd-daemon: the module, loaded once from beside memtrimd-daemon or
// from ../lib/memtrimd. kUnavailable with one line when it cannot be loaded
// or comes from another build.
Result<const WebModule*> LoadWebModule();

// In the module: the table of its functions.
const WebModule* LinkedWebModule();

}  // namespace memtrimd

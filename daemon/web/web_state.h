// One version of the --web.config.file as served: the parsed config, its
// TLS material and its basic auth users.
#pragma once

#include <memory>
#include <string>

#include "collectors/common/status.h"
#include "daemon/web/basic_auth.h"
#include "daemon/web/web_config.h"

namespace memtrimd {

class TlsMaterial;  // tls_server.h; held here, used only inside the web module

struct WebState {
  WebConfig config;
  std::shared_ptr<const TlsMaterial> tls;     // null without TLS
  std::shared_ptr<const Authenticator> auth;  // a BasicAuth; null without basic_auth_users
  std::string extra_headers;                  // "Name: value\r\n" for every response
};

// Reads `path` and everything it names. kInvalidArgument with one line
// ("<path>: <reason>") for what `promtool check web-config` rejects, for an
// unreadable file, and for a key that does not match its certificate.
Result<std::shared_ptr<const WebState>> LoadWebState(const std::string& path);

}  // namespace memtrimd

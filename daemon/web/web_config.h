// --web.config.file: the Prometheus exporter-toolkit web configuration
// (TLS, client certificates, basic auth, response headers), parsed and
// checked the way `promtool check web-config` checks it. Pure: text in,
// struct out; reading certificates is tls_material's job.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collectors/common/status.h"

namespace memtrimd {

// Go's crypto/tls names, as exporter-toolkit uses them.
enum class ClientAuth {
  kNoClientCert,
  kRequestClientCert,
  kRequireAnyClientCert,
  kVerifyClientCertIfGiven,
  kRequireAndVerifyClientCert,
};

struct TlsServerConfig {
  std::string cert_file;  // absolute, or relative to the config file's directory (resolved)
  std::string key_file;
  std::string client_ca_file;
  ClientAuth client_auth = ClientAuth::kNoClientCert;
  // TLS protocol versions as on the wire (0x0301 = TLS 1.0 ... 0x0304 = TLS 1.3).
  int min_version = 0x0303;  // exporter-toolkit's default: TLS 1.2
  int max_version = 0x0304;
  std::string cipher_list;  // OpenSSL names for cipher_suites; empty = OpenSSL's default
  std::string groups_list;  // OpenSSL names for curve_preferences; empty = default
  bool prefer_server_cipher_suites = true;  // exporter-toolkit's default

  // exporter-toolkit serves plain HTTP unless both files are set.
  bool enabled() const { return !cert_file.empty(); }
};

struct WebConfig {
  TlsServerConfig tls;
  std::vector<std::pair<std::string, std::string>> headers;  // added to every response
  std::map<std::string, std::string> basic_auth_users;       // user -> bcrypt hash
  bool http2 = true;  // accepted for compatibility; memtrimd speaks HTTP/1.1

  bool has_basic_auth() const { return !basic_auth_users.empty(); }
  // Whether every request proves who sent it (what the trim API needs).
  bool authenticates() const {
    return has_basic_auth() ||
           (tls.enabled() && tls.client_auth == ClientAuth::kRequireAndVerifyClientCert);
  }
};

// Parses the YAML text of a web config file. Relative file names are resolved
// against `base_dir` (the config file's directory, as exporter-toolkit does).
// kInvalidArgument with one line (e.g. "line 3: field foo not found in
// tls_server_config") for anything promtool rejects, and for the few
// exporter-toolkit settings memtrimd cannot honour.
Result<WebConfig> ParseWebConfig(std::string_view yaml, std::string_view base_dir);

// Whether `hash` is a well-formed bcrypt hash ($2a$/$2b$/$2x$/$2y$, cost
// 4-31, 53 characters of salt and hash); "" when fine, else why not.
std::string CheckBcryptHash(std::string_view hash);

}  // namespace memtrimd

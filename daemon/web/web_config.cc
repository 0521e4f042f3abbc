#include "daemon/web/web_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <set>

namespace memtrimd {
namespace {

// Error messages are one line: YAML error texts and quoted scalars can hold
// line breaks and other control characters, which are shown escaped.
std::string OneLine(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

Status Invalid(const std::string& message) {
  return Status(ErrorCode::kInvalidArgument, OneLine(message));
}

std::string LineOf(const YAML::Node& n) {
  return "line " + std::to_string(n.Mark().line + 1) + ": ";
}

// One key of a mapping, its value, and "line N: " of the key (a null
// value's own position is past the line it belongs to).
struct Entry {
  std::string key;
  YAML::Node value;
  std::string at;
};

// A mapping's entries in file order; duplicate keys are an error (as in
// Go's yaml.v2, which exporter-toolkit uses) rather than "last one wins".
Result<std::vector<Entry>> Entries(const YAML::Node& map, const std::string& what) {
  std::vector<Entry> out;
  if (!map || map.IsNull()) return out;
  if (!map.IsMap()) return Invalid(LineOf(map) + what + " must be a mapping");
  std::set<std::string> seen;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) return Invalid(LineOf(kv.first) + what + ": keys must be strings");
    std::string key = kv.first.Scalar();
    if (!seen.insert(key).second) {
      return Invalid(LineOf(kv.first) + "key \"" + key + "\" already set in " + what);
    }
    out.push_back({key, kv.second, LineOf(kv.first)});
  }
  return out;
}

Result<std::string> String(const YAML::Node& n, const std::string& field) {
  if (!n || n.IsNull()) return std::string();
  if (!n.IsScalar()) return Invalid(LineOf(n) + field + " must be a string");
  return n.Scalar();
}

Result<bool> Bool(const YAML::Node& n, const std::string& field) {
  if (!n.IsScalar()) return Invalid(LineOf(n) + field + " must be true or false");
  bool v = false;
  if (!YAML::convert<bool>::decode(n, v)) {
    return Invalid(LineOf(n) + field + ": \"" + n.Scalar() + "\" is not true or false");
  }
  return v;
}

Result<std::vector<std::string>> StringList(const YAML::Node& n, const std::string& field) {
  std::vector<std::string> out;
  if (!n || n.IsNull()) return out;
  if (!n.IsSequence()) return Invalid(LineOf(n) + field + " must be a list");
  for (const auto& item : n) {
    if (!item.IsScalar()) return Invalid(LineOf(item) + field + " entries must be strings");
    out.push_back(item.Scalar());
  }
  return out;
}

std::string Resolve(const std::string& path, std::string_view base_dir) {
  if (path.empty() || path.front() == '/' || base_dir.empty()) return path;
  std::string out(base_dir);
  if (out.back() != '/') out += '/';
  return out + path;
}

std::optional<int> TlsVersion(const std::string& name) {
  if (name == "TLS10") return 0x0301;
  if (name == "TLS11") return 0x0302;
  if (name == "TLS12") return 0x0303;
  if (name == "TLS13") return 0x0304;
  return std::nullopt;
}

std::optional<ClientAuth> ClientAuthFrom(const std::string& name) {
  if (name.empty() || name == "NoClientCert") return ClientAuth::kNoClientCert;
  if (name == "RequestClientCert") return ClientAuth::kRequestClientCert;
  if (name == "RequireAnyClientCert") return ClientAuth::kRequireAnyClientCert;
  if (name == "VerifyClientCertIfGiven") return ClientAuth::kVerifyClientCertIfGiven;
  if (name == "RequireAndVerifyClientCert") return ClientAuth::kRequireAndVerifyClientCert;
  return std::nullopt;
}

// Go's secure cipher suites (tls.CipherSuites(), what exporter-toolkit
// accepts) and their OpenSSL names. The TLS 1.3 suites are accepted and, as
// in Go, not configurable: they map to nothing.
struct CipherName {
  std::string_view go;
  std::string_view openssl;
};
constexpr std::array<CipherName, 20> kCiphers = {{
    {"TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA"},
    {"TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA"},
    {"TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256"},
    {"TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA-AES128-SHA"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA-AES256-SHA"},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA"},
    {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256"},
    {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384"},
    {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384"},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "ECDHE-RSA-CHACHA20-POLY1305"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "ECDHE-ECDSA-CHACHA20-POLY1305"},
    {"TLS_AES_128_GCM_SHA256", ""},
    {"TLS_AES_256_GCM_SHA384", ""},
    {"TLS_CHACHA20_POLY1305_SHA256", ""},
    {"TLS_FALLBACK_SCSV", ""},
}};

std::optional<std::string_view> CurveFrom(const std::string& name) {
  if (name == "CurveP256") return "P-256";
  if (name == "CurveP384") return "P-384";
  if (name == "CurveP521") return "P-521";
  if (name == "X25519") return "X25519";
  return std::nullopt;
}

// Headers exporter-toolkit lets a config set, and the values it allows
// (an empty list: any value).
struct AllowedHeader {
  std::string_view name;
  std::vector<std::string_view> values;
};
const std::vector<AllowedHeader>& AllowedHeaders() {
  static const std::vector<AllowedHeader> kAllowed = {
      {"Strict-Transport-Security", {}},
      {"X-Content-Type-Options", {"nosniff"}},
      {"X-Frame-Options", {"deny", "sameorigin"}},
      {"X-XSS-Protection", {}},
      {"Content-Security-Policy", {}},
  };
  return kAllowed;
}

Status ParseTls(const YAML::Node& node, std::string_view base_dir, TlsServerConfig& tls) {
  auto entries = Entries(node, "tls_server_config");
  if (!entries.ok()) return entries.status();
  std::string client_auth_name;
  for (const auto& [key, v, at] : *entries) {
    if (key == "cert_file" || key == "key_file" || key == "client_ca_file" ||
        key == "client_auth_type" || key == "min_version" || key == "max_version") {
      auto s = String(v, key);
      if (!s.ok()) return s.status();
      if (key == "cert_file") tls.cert_file = Resolve(*s, base_dir);
      if (key == "key_file") tls.key_file = Resolve(*s, base_dir);
      if (key == "client_ca_file") tls.client_ca_file = Resolve(*s, base_dir);
      if (key == "client_auth_type") client_auth_name = *s;
      if (key == "min_version" || key == "max_version") {
        auto ver = TlsVersion(*s);
        if (!ver) return Invalid(at + "unknown TLS version: " + *s);
        (key == "min_version" ? tls.min_version : tls.max_version) = *ver;
      }
    } else if (key == "cipher_suites") {
      auto names = StringList(v, key);
      if (!names.ok()) return names.status();
      for (const std::string& name : *names) {
        auto it = std::find_if(kCiphers.begin(), kCiphers.end(),
                               [&](const CipherName& c) { return c.go == name; });
        if (it == kCiphers.end()) return Invalid(at + "unknown cipher: " + name);
        if (it->openssl.empty()) continue;
        if (!tls.cipher_list.empty()) tls.cipher_list += ':';
        tls.cipher_list += it->openssl;
      }
    } else if (key == "curve_preferences") {
      auto names = StringList(v, key);
      if (!names.ok()) return names.status();
      for (const std::string& name : *names) {
        auto curve = CurveFrom(name);
        if (!curve) return Invalid(at + "unknown curve: " + name);
        if (!tls.groups_list.empty()) tls.groups_list += ':';
        tls.groups_list += *curve;
      }
    } else if (key == "prefer_server_cipher_suites") {
      auto b = Bool(v, key);
      if (!b.ok()) return b.status();
      tls.prefer_server_cipher_suites = *b;
    } else {
      return Invalid(at + "field " + key + " not found in tls_server_config");
    }
  }
  auto auth = ClientAuthFrom(client_auth_name);
  if (!auth) return Invalid("Invalid ClientAuth: " + client_auth_name);
  tls.client_auth = *auth;
  // As exporter-toolkit: no files and no client auth means plain HTTP (a
  // lone min_version is ignored); anything else needs both files.
  bool any = !tls.cert_file.empty() || !tls.key_file.empty() || !tls.client_ca_file.empty() ||
             !client_auth_name.empty();
  if (!any) return Status::Ok();
  if (tls.cert_file.empty()) return Invalid("missing cert_file");
  if (tls.key_file.empty()) return Invalid("missing key_file");
  if (!tls.client_ca_file.empty() && tls.client_auth == ClientAuth::kNoClientCert) {
    return Invalid("Client CA's have been configured without a Client Auth Policy");
  }
  // Go (and so exporter-toolkit and promtool) then verifies client
  // certificates against the system's roots: any certificate a public CA
  // signed would pass, and with RequireAndVerifyClientCert that is what lets
  // a client use the trim API. Nobody means that; memtrimd refuses it.
  if (tls.client_ca_file.empty() && (tls.client_auth == ClientAuth::kVerifyClientCertIfGiven ||
                                     tls.client_auth == ClientAuth::kRequireAndVerifyClientCert)) {
    return Invalid("client_auth_type " + client_auth_name +
                   " needs client_ca_file: without it any certificate from the system's CAs "
                   "would be accepted");
  }
  // promtool lets this pass, but no client could ever connect.
  if (tls.min_version > tls.max_version) {
    return Invalid("min_version is newer than max_version");
  }
  return Status::Ok();
}

Status ParseHttp(const YAML::Node& node, WebConfig& c) {
  auto entries = Entries(node, "http_server_config");
  if (!entries.ok()) return entries.status();
  for (const auto& [key, v, at] : *entries) {
    if (key == "http2") {
      auto b = Bool(v, key);
      if (!b.ok()) return b.status();
      c.http2 = *b;
    } else if (key == "headers") {
      auto headers = Entries(v, "headers");
      if (!headers.ok()) return headers.status();
      for (const auto& [name, value_node, name_at] : *headers) {
        auto value = String(value_node, name);
        if (!value.ok()) return value.status();
        const auto& allowed = AllowedHeaders();
        const std::string& header = name;  // clang < 16 cannot capture a structured binding
        auto it = std::find_if(allowed.begin(), allowed.end(),
                               [&](const AllowedHeader& h) { return h.name == header; });
        if (it == allowed.end()) {
          return Invalid("HTTP header \"" + name + "\" can not be configured");
        }
        if (!it->values.empty() &&
            std::find(it->values.begin(), it->values.end(), *value) == it->values.end()) {
          std::string expected;
          for (std::string_view a : it->values) {
            expected += (expected.empty() ? "\"" : " \"") + std::string(a) + "\"";
          }
          return Invalid("invalid value for " + name + ". Expected one of: [" + expected +
                         "], but got: \"" + *value + "\"");
        }
        // Header values go on the wire as they are: no line breaks.
        if (value->find_first_of("\r\n") != std::string::npos) {
          return Invalid(name_at + "header " + name + " contains a line break");
        }
        c.headers.emplace_back(name, *value);
      }
    } else {
      return Invalid(at + "field " + key + " not found in http_server_config");
    }
  }
  return Status::Ok();
}

Status ParseUsers(const YAML::Node& node, WebConfig& c) {
  auto entries = Entries(node, "basic_auth_users");
  if (!entries.ok()) return entries.status();
  for (const auto& [user, v, at] : *entries) {
    auto hash = String(v, "basic_auth_users." + user);
    if (!hash.ok()) return hash.status();
    std::string problem = CheckBcryptHash(*hash);
    if (!problem.empty()) return Invalid(at + "basic_auth_users." + user + ": " + problem);
    c.basic_auth_users[user] = *hash;
  }
  return Status::Ok();
}

}  // namespace

std::string CheckBcryptHash(std::string_view hash) {
  // $2b$10$ + 22 characters of salt + 31 of hash.
  if (hash.size() < 7) return "hashedSecret too short to be a bcrypted password";
  if (hash[0] != '$') return "not a bcrypt hash (it must start with $2b$ or $2y$)";
  if (hash[1] > '2') {
    return "bcrypt algorithm version '" + std::string(1, hash[1]) +
           "' requested is newer than current version '2'";
  }
  if (hash[1] != '2' || std::string_view("abxy").find(hash[2]) == std::string_view::npos ||
      hash[3] != '$') {
    return "not a bcrypt hash (it must start with $2b$ or $2y$)";
  }
  if (hash[4] < '0' || hash[4] > '9' || hash[5] < '0' || hash[5] > '9' || hash[6] != '$') {
    return "not a bcrypt hash (no cost)";
  }
  int cost = (hash[4] - '0') * 10 + (hash[5] - '0');
  if (cost < 4 || cost > 31) {
    return "cost " + std::to_string(cost) + " is outside allowed range (4,31)";
  }
  if (hash.size() != 60) return "not a bcrypt hash (it must be 60 characters long)";
  constexpr std::string_view kAlphabet =
      "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  if (hash.substr(7).find_first_not_of(kAlphabet) != std::string_view::npos) {
    return "not a bcrypt hash (a character outside its alphabet)";
  }
  return "";
}

Result<WebConfig> ParseWebConfig(std::string_view yaml, std::string_view base_dir) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return Invalid("yaml: line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  WebConfig c;
  // yaml-cpp reports errors in what it could not build (e.g. a scalar read as
  // a map) by throwing too; nothing leaves this function as an exception.
  try {
    auto entries = Entries(root, "the web config");
    if (!entries.ok()) return entries.status();
    for (const auto& [key, v, at] : *entries) {
      Status st;
      if (key == "tls_server_config") {
        st = ParseTls(v, base_dir, c.tls);
      } else if (key == "http_server_config") {
        st = ParseHttp(v, c);
      } else if (key == "basic_auth_users") {
        st = ParseUsers(v, c);
      } else {
        st = Invalid(at + "field " + key + " not found in the web config");
      }
      if (!st.ok()) return st;
    }
  } catch (const YAML::Exception& e) {
    return Invalid("yaml: line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return c;
}

}  // namespace memtrimd

// Fuzz target: the --web.config.file parser (ParseWebConfig in
// daemon/web/web_config.h: exporter-toolkit's YAML format, tls_server_config,
// basic_auth_users with bcrypt hashes, http_server_config), and the bcrypt
// hash check it uses (CheckBcryptHash).
//
// Invariants: a rejection is kInvalidArgument with one non-empty line; an
// accepted config has TLS either off or with both files, no client CA
// without a client auth policy, min_version <= max_version, header values
// without line breaks, only well-formed bcrypt hashes, and relative file
// names resolved against the base directory. A hash CheckBcryptHash accepts
// is 60 characters and starts with "$2".
#include <cstddef>
#include <cstdint>
#include <string>

#include "daemon/web/web_config.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memtrimd;
  std::string_view text = memtrimd::fuzz::AsText(data, size);
  if (CheckBcryptHash(text).empty()) FUZZ_CHECK(text.size() == 60 && text.substr(0, 2) == "$2");

  auto config = ParseWebConfig(text, "/etc/memtrimd");
  if (!config.ok()) {
    FUZZ_CHECK(config.status().code() == ErrorCode::kInvalidArgument);
    FUZZ_CHECK(!config.status().message().empty());
    if (config.status().message().find('\n') != std::string::npos) {
      std::fprintf(stderr, "message: [%s]\n", config.status().message().c_str());
    }
    FUZZ_CHECK(config.status().message().find('\n') == std::string::npos);
    return 0;
  }
  const WebConfig& c = *config;
  const TlsServerConfig& tls = c.tls;
  if (tls.enabled()) FUZZ_CHECK(!tls.key_file.empty());
  if (!tls.enabled()) FUZZ_CHECK(tls.key_file.empty() && tls.client_ca_file.empty());
  if (!tls.client_ca_file.empty()) FUZZ_CHECK(tls.client_auth != ClientAuth::kNoClientCert);
  if (tls.enabled()) FUZZ_CHECK(tls.min_version <= tls.max_version);
  for (const std::string* f : {&tls.cert_file, &tls.key_file, &tls.client_ca_file}) {
    FUZZ_CHECK(f->empty() || f->front() == '/');
  }
  for (const auto& [name, value] : c.headers) {
    FUZZ_CHECK(!name.empty());
    FUZZ_CHECK(value.find_first_of("\r\n") == std::string::npos);
  }
  for (const auto& [user, hash] : c.basic_auth_users) FUZZ_CHECK(CheckBcryptHash(hash).empty());
  FUZZ_CHECK(c.has_basic_auth() == !c.basic_auth_users.empty());
  return 0;
}

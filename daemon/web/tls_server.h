// TLS for the HTTP server: certificates, keys and client CAs loaded from a
// TlsServerConfig, and the SSL_CTX civetweb serves with. The context takes
// the material current at each handshake, so a rotated certificate is used
// from the next connection on, without a restart.
#pragma once

#include <functional>
#include <memory>

#include "collectors/common/status.h"
#include "daemon/web/web_config.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace memtrimd {

// The OpenSSL objects for one version of the config's files.
class TlsMaterial {
 public:
  // Reads cert_file (with any chain after it), key_file and client_ca_file.
  // kInvalidArgument naming the file and OpenSSL's reason when one cannot be
  // read, holds no PEM data, or the key does not match the certificate.
  static Result<std::shared_ptr<const TlsMaterial>> Load(const TlsServerConfig& config);

  ~TlsMaterial();
  TlsMaterial(const TlsMaterial&) = delete;
  TlsMaterial& operator=(const TlsMaterial&) = delete;

  // Sets this material (certificate, versions, ciphers, client verification)
  // on one connection. false when OpenSSL refuses.
  bool ApplyTo(SSL* ssl) const;

 private:
  struct Objects;
  explicit TlsMaterial(std::unique_ptr<Objects> o);
  std::unique_ptr<Objects> o_;
};

using TlsMaterialSource = std::function<std::shared_ptr<const TlsMaterial>()>;

// A server SSL_CTX whose handshakes use `source()`'s material (asked once per
// ClientHello). `handshake_started` (may be empty) is called on the thread
// that runs a handshake, when it starts, before anything of it is read: a
// slow handshake holds an HTTP worker as a slow request head does
// (head_guard.h). nullptr if OpenSSL cannot make one. The caller frees it
// with FreeServerContext.
SSL_CTX* NewServerContext(TlsMaterialSource source, std::function<void()> handshake_started);
void FreeServerContext(SSL_CTX* ctx);

}  // namespace memtrimd

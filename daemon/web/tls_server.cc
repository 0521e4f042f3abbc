#include "daemon/web/tls_server.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace memtrimd {

struct TlsMaterial::Objects {
  TlsServerConfig config;
  X509* cert = nullptr;
  STACK_OF(X509) * chain = nullptr;
  EVP_PKEY* key = nullptr;
  X509_STORE* ca_store = nullptr;            // trust for client certificates
  STACK_OF(X509_NAME) * ca_names = nullptr;  // sent in the CertificateRequest

  ~Objects() {
    X509_free(cert);
    sk_X509_pop_free(chain, X509_free);
    EVP_PKEY_free(key);
    X509_STORE_free(ca_store);
    sk_X509_NAME_pop_free(ca_names, X509_NAME_free);
  }
};

namespace {

// OpenSSL's last error as text (and the queue cleared).
std::string OpenSslError() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "no PEM data";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

Status FileError(const std::string& what, const std::string& path, const std::string& why) {
  return Status(ErrorCode::kInvalidArgument, what + " " + path + ": " + why);
}

// Opens a PEM file; nullptr with `err` set when it cannot be read.
BIO* OpenPem(const std::string& path, std::string& err) {
  std::FILE* f = std::fopen(path.c_str(), "re");
  if (f == nullptr) {
    err = std::string(std::strerror(errno));
    return nullptr;
  }
  return BIO_new_fp(f, BIO_CLOSE);
}

int AcceptAnyCertificate(int, X509_STORE_CTX*) { return 1; }

// What a server context's callbacks need (its app data).
struct ContextHooks {
  TlsMaterialSource source;
  std::function<void()> handshake_started;
};

int OnClientHello(SSL* ssl, int* alert, void* arg) {
  auto* hooks = static_cast<ContextHooks*>(arg);
  std::shared_ptr<const TlsMaterial> m = hooks->source();
  if (!m || !m->ApplyTo(ssl)) {
    *alert = SSL_AD_INTERNAL_ERROR;
    return SSL_CLIENT_HELLO_ERROR;
  }
  return SSL_CLIENT_HELLO_SUCCESS;
}

}  // namespace

TlsMaterial::TlsMaterial(std::unique_ptr<Objects> o) : o_(std::move(o)) {}
TlsMaterial::~TlsMaterial() = default;

Result<std::shared_ptr<const TlsMaterial>> TlsMaterial::Load(const TlsServerConfig& config) {
  auto o = std::make_unique<Objects>();
  o->config = config;
  ERR_clear_error();
  std::string err;
  {
    BIO* bio = OpenPem(config.cert_file, err);
    if (bio == nullptr) return FileError("cert_file", config.cert_file, err);
    o->cert = PEM_read_bio_X509_AUX(bio, nullptr, nullptr, nullptr);
    if (o->cert == nullptr) {
      BIO_free(bio);
      return FileError("cert_file", config.cert_file, "no certificate (" + OpenSslError() + ")");
    }
    o->chain = sk_X509_new_null();
    while (X509* extra = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
      sk_X509_push(o->chain, extra);
    }
    ERR_clear_error();  // the loop ends on "no start line"
    BIO_free(bio);
  }
  {
    BIO* bio = OpenPem(config.key_file, err);
    if (bio == nullptr) return FileError("key_file", config.key_file, err);
    o->key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (o->key == nullptr) {
      return FileError("key_file", config.key_file, "no private key (" + OpenSslError() + ")");
    }
    if (X509_check_private_key(o->cert, o->key) != 1) {
      ERR_clear_error();
      return FileError("key_file", config.key_file,
                       "does not match the certificate in " + config.cert_file);
    }
  }
  o->ca_store = X509_STORE_new();
  if (!config.client_ca_file.empty()) {
    BIO* bio = OpenPem(config.client_ca_file, err);
    if (bio == nullptr) return FileError("client_ca_file", config.client_ca_file, err);
    o->ca_names = sk_X509_NAME_new_null();
    int n = 0;
    while (X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
      X509_STORE_add_cert(o->ca_store, ca);
      sk_X509_NAME_push(o->ca_names, X509_NAME_dup(X509_get_subject_name(ca)));
      X509_free(ca);
      ++n;
    }
    ERR_clear_error();
    BIO_free(bio);
    if (n == 0) return FileError("client_ca_file", config.client_ca_file, "no certificate in it");
  }
  // Without a client_ca_file the store stays empty: the modes that verify
  // client certificates are refused without one (web_config.cc), and the
  // others accept any certificate without looking at the store.
  return std::shared_ptr<const TlsMaterial>(new TlsMaterial(std::move(o)));
}

bool TlsMaterial::ApplyTo(SSL* ssl) const {
  const TlsServerConfig& c = o_->config;
  if (SSL_set_min_proto_version(ssl, c.min_version) != 1) return false;
  if (SSL_set_max_proto_version(ssl, c.max_version) != 1) return false;
  if (SSL_use_cert_and_key(ssl, o_->cert, o_->key, o_->chain, 1) != 1) return false;
  if (!c.cipher_list.empty() && SSL_set_cipher_list(ssl, c.cipher_list.c_str()) != 1) return false;
  if (!c.groups_list.empty() && SSL_set1_groups_list(ssl, c.groups_list.c_str()) != 1) {
    return false;
  }
  if (c.prefer_server_cipher_suites) {
    SSL_set_options(ssl, SSL_OP_CIPHER_SERVER_PREFERENCE);
  } else {
    SSL_clear_options(ssl, SSL_OP_CIPHER_SERVER_PREFERENCE);
  }
  switch (c.client_auth) {
    case ClientAuth::kNoClientCert:
      SSL_set_verify(ssl, SSL_VERIFY_NONE, nullptr);
      return true;
    case ClientAuth::kRequestClientCert:
      SSL_set_verify(ssl, SSL_VERIFY_PEER, AcceptAnyCertificate);
      break;
    case ClientAuth::kRequireAnyClientCert:
      SSL_set_verify(ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, AcceptAnyCertificate);
      break;
    case ClientAuth::kVerifyClientCertIfGiven:
      SSL_set_verify(ssl, SSL_VERIFY_PEER, nullptr);
      break;
    case ClientAuth::kRequireAndVerifyClientCert:
      SSL_set_verify(ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      break;
  }
  if (SSL_set1_verify_cert_store(ssl, o_->ca_store) != 1) return false;
  if (o_->ca_names != nullptr) {
    // SSL_set_client_CA_list takes ownership of a copy.
    SSL_set_client_CA_list(ssl, SSL_dup_CA_list(o_->ca_names));
  }
  return true;
}

// SSL_CB_HANDSHAKE_START comes at the first SSL_accept, before the
// ClientHello is read (OnClientHello comes only once all of it has).
void OnInfo(const SSL* ssl, int where, int) {
  if ((where & SSL_CB_HANDSHAKE_START) == 0) return;
  auto* hooks = static_cast<ContextHooks*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  if (hooks != nullptr && hooks->handshake_started) hooks->handshake_started();
}

SSL_CTX* NewServerContext(TlsMaterialSource source, std::function<void()> handshake_started) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return nullptr;
  // Renegotiation and compression have no use here and a history of bugs.
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  // No resumption: every connection is verified against the current files.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
  auto* arg = new ContextHooks{std::move(source), std::move(handshake_started)};
  SSL_CTX_set_app_data(ctx, arg);
  SSL_CTX_set_client_hello_cb(ctx, OnClientHello, arg);
  SSL_CTX_set_info_callback(ctx, OnInfo);
  return ctx;
}

void FreeServerContext(SSL_CTX* ctx) {
  if (ctx == nullptr) return;
  delete static_cast<ContextHooks*>(SSL_CTX_get_app_data(ctx));
  SSL_CTX_free(ctx);
}

}  // namespace memtrimd

/* libmemtrimd_civetweb_ssl.so: lets Debian 12's civetweb serve TLS.
 *
 * Debian's libcivetweb1 (1.15) is built for the OpenSSL 1.1 API and loads
 * libssl at run time with dlopen("libssl.so"), then looks up each function it
 * needs. OpenSSL 3 no longer exports SSL_get_peer_certificate (a macro for
 * SSL_get1_peer_certificate now), so the lookup fails and civetweb's worker
 * threads call a null pointer on the first TLS connection.
 *
 * This library's SONAME is "libssl.so". memtrimd dlopen()s it before
 * civetweb starts; the dynamic loader then answers civetweb's
 * dlopen("libssl.so") with it (a loaded object matches by SONAME), and
 * civetweb's dlsym() finds every other function in this library's
 * dependency, the real libssl.so.3. Only the missing one is defined here. */
#include <openssl/ssl.h>

/* OpenSSL 3's header turns the old name into the new one. */
#undef SSL_get_peer_certificate

__attribute__((visibility("default"))) X509* SSL_get_peer_certificate(const SSL* ssl) {
  return SSL_get1_peer_certificate(ssl);
}

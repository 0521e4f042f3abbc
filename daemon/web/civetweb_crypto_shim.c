/* libmemtrimd_civetweb_crypto.so: SONAME "libcrypto.so", depends on the real
 * libcrypto.so.3. civetweb dlopen()s "libcrypto.so", a name only the
 * development package installs; memtrimd loads this library first so that
 * civetweb gets it instead (see civetweb_ssl_shim.c). Nothing is defined
 * here: civetweb finds every function in the dependency. */
typedef int memtrimd_civetweb_crypto_shim_is_empty;

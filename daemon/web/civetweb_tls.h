// Prepares the process so that civetweb can serve TLS with OpenSSL 3 (see
// civetweb_ssl_shim.c for the Debian packaging problem this works around).
#pragma once

#include "collectors/common/status.h"

namespace memtrimd {

// Loads libmemtrimd_civetweb_{crypto,ssl}.so from beside the executable or
// from ../lib/memtrimd. Call before civetweb initialises TLS. kUnavailable,
// naming the file, when they cannot be loaded.
Status PrepareCivetwebTls();

}  // namespace memtrimd

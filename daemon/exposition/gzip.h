// gzip for /metrics responses (clients send Accept-Encoding: gzip).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace memtrimd {

// nullopt only if zlib fails (out of memory).
std::optional<std::string> GzipCompress(std::string_view data);

// Whether an Accept-Encoding header value allows gzip: its "gzip" item if it
// has one, else its "*" item; q=0 refuses.
bool AcceptsGzip(std::string_view accept_encoding);

}  // namespace memtrimd

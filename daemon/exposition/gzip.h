// gzip for /metrics responses (clients send Accept-Encoding: gzip).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace memtrimd {

// One part of a body compressed on its own: raw deflate that ends on a byte
// boundary with no final block (a sync flush), with its CRC-32 and length.
// Parts compressed at different times join into one gzip member (GzipJoin)
// without compressing any of them again: /metrics compresses the snapshot's
// text once per snapshot, not once per request, and only the small parts
// that change per request (the ages) each time.
struct DeflatedPart {
  std::string deflate;
  uint32_t crc = 0;
  uint64_t size = 0;
};

// nullopt only if zlib fails (out of memory).
std::optional<DeflatedPart> DeflatePart(std::string_view data);

// One gzip member holding the parts in order (RFC 1952; a single member, so
// every gzip reader takes it).
std::string GzipJoin(std::span<const DeflatedPart* const> parts);

// Whether an Accept-Encoding header value allows gzip: its "gzip" item if it
// has one, else its "*" item; q=0 refuses.
bool AcceptsGzip(std::string_view accept_encoding);

}  // namespace memtrimd

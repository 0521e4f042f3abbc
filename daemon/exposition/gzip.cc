#include "daemon/exposition/gzip.h"

#include <zlib.h>

#include "collectors/common/text.h"

namespace memtrimd {

std::optional<DeflatedPart> DeflatePart(std::string_view data) {
  z_stream zs{};
  // Negative windowBits: raw deflate, no wrapper; GzipJoin writes the one
  // gzip header and trailer. Level 1: metrics text compresses well even at the
  // fastest level, and scrapes should be cheap.
  if (deflateInit2(&zs, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) return std::nullopt;
  DeflatedPart part;
  // A sync flush can add a few bytes beyond deflateBound's finished stream.
  part.deflate.resize(deflateBound(&zs, static_cast<uLong>(data.size())) + 16);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(part.deflate.data());
  zs.avail_out = static_cast<uInt>(part.deflate.size());
  // Z_SYNC_FLUSH: everything out, ending on a byte boundary, no final block,
  // and nothing the next part's compressor would need to know.
  int rc = deflate(&zs, Z_SYNC_FLUSH);
  bool complete = (rc == Z_OK || rc == Z_BUF_ERROR) && zs.avail_in == 0 && zs.avail_out > 0;
  deflateEnd(&zs);
  if (!complete) return std::nullopt;
  part.deflate.resize(zs.total_out);
  part.crc = static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
  part.size = data.size();
  return part;
}

std::string GzipJoin(std::span<const DeflatedPart* const> parts) {
  // Header: magic, deflate, no flags, no mtime, no extra flags, OS unknown.
  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10);
  uLong crc = crc32(0, nullptr, 0);
  uint64_t size = 0;
  for (const DeflatedPart* p : parts) {
    out += p->deflate;
    crc = crc32_combine(crc, p->crc, static_cast<z_off_t>(p->size));
    size += p->size;
  }
  // The final block: an empty block of fixed Huffman codes (BFINAL=1,
  // BTYPE=01, end-of-block), 10 bits.
  out += std::string("\x03\x00", 2);
  for (int i = 0; i < 4; ++i) out += static_cast<char>((crc >> (8 * i)) & 0xff);
  for (int i = 0; i < 4; ++i) out += static_cast<char>((size >> (8 * i)) & 0xff);
  return out;
}

bool AcceptsGzip(std::string_view header) {
  // RFC 9110 12.5.3: a coding named in the header gets its own q; "*"
  // covers only codings not named. So the first "gzip" item decides, and
  // without one the first "*".
  std::optional<bool> gzip;
  std::optional<bool> any;
  while (!header.empty()) {
    std::size_t comma = header.find(',');
    std::string_view item = text::Trim(header.substr(0, comma));
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    std::size_t semi = item.find(';');
    std::string_view coding = text::Trim(item.substr(0, semi));
    bool is_gzip = text::EqualsIgnoreCase(coding, "gzip");
    std::optional<bool>& slot = is_gzip ? gzip : any;
    if ((!is_gzip && coding != "*") || slot.has_value()) continue;
    slot = true;
    if (semi == std::string_view::npos) continue;
    std::string_view params = text::Trim(item.substr(semi + 1));
    if (params.substr(0, 2) == "q=") {
      std::string_view q = params.substr(2);
      // q=0, q=0.0, q=0.000 refuse; anything else accepts.
      slot = !(!q.empty() && q.find_first_not_of("0.") == std::string_view::npos);
    }
  }
  return gzip.value_or(any.value_or(false));
}

}  // namespace memtrimd

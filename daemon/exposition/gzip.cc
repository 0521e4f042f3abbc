#include "daemon/exposition/gzip.h"

#include <zlib.h>

#include "collectors/common/text.h"

namespace memtrimd {

std::optional<std::string> GzipCompress(std::string_view data) {
  z_stream zs{};
  // windowBits 15 + 16: gzip wrapper rather than zlib. Level 1: metrics text
  // compresses well even at the fastest level, and scrapes should be cheap.
  if (deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return std::nullopt;
  std::string out;
  out.resize(deflateBound(&zs, static_cast<uLong>(data.size())));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return std::nullopt;
  out.resize(zs.total_out);
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

#include "daemon/gzip.h"

#include <zlib.h>

#include <cctype>

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
  while (!header.empty()) {
    std::size_t comma = header.find(',');
    std::string_view item = text::Trim(header.substr(0, comma));
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    std::size_t semi = item.find(';');
    std::string_view coding = text::Trim(item.substr(0, semi));
    bool is_gzip = coding.size() == 4 && std::tolower(coding[0]) == 'g' &&
                   std::tolower(coding[1]) == 'z' && std::tolower(coding[2]) == 'i' &&
                   std::tolower(coding[3]) == 'p';
    if (!is_gzip && coding != "*") continue;
    if (semi == std::string_view::npos) return true;
    std::string_view params = text::Trim(item.substr(semi + 1));
    if (params.substr(0, 2) == "q=") {
      std::string_view q = params.substr(2);
      // q=0, q=0.0, q=0.000 refuse; anything else accepts.
      bool zero = !q.empty() && q.find_first_not_of("0.") == std::string_view::npos;
      return !zero;
    }
    return true;
  }
  return false;
}

}  // namespace memtrimd

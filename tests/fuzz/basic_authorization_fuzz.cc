// Fuzz target: the Authorization header of an HTTP request, input from the
// network before any authentication (ParseBasicAuthorization in
// daemon/basic_auth).
//
// Invariants: accepted only with the "Basic " scheme (any case); the user
// holds no ':' (the first colon ends it); the credentials written back as
// "Basic <base64(user:password)>", with or without padding and in another
// case of the scheme, parse to the same credentials.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>

#include "daemon/web/basic_auth.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

std::string Base64(const std::string& in, bool pad) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << 16 |
                 static_cast<uint32_t>(static_cast<unsigned char>(in[i + 1])) << 8 |
                 static_cast<uint32_t>(static_cast<unsigned char>(in[i + 2]));
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  std::size_t rest = in.size() - i;
  if (rest > 0) {
    uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << 16;
    if (rest == 2) v |= static_cast<uint32_t>(static_cast<unsigned char>(in[i + 1])) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    if (rest == 2) out += kAlphabet[(v >> 6) & 63];
    if (pad) out += rest == 1 ? "==" : "=";
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using memtrimd::ParseBasicAuthorization;
  std::string_view header = memtrimd::fuzz::AsText(data, size);
  auto c = ParseBasicAuthorization(header);
  if (!c) return 0;
  FUZZ_CHECK(header.size() > 6);
  std::string scheme;
  for (char ch : header.substr(0, 6)) {
    scheme += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  FUZZ_CHECK(scheme == "basic ");
  FUZZ_CHECK(c->user.find(':') == std::string::npos);
  std::string plain = c->user + ":" + c->password;
  for (const std::string& again :
       {"Basic " + Base64(plain, true), "bASIC  " + Base64(plain, false)}) {
    auto d = ParseBasicAuthorization(again);
    FUZZ_CHECK(d.has_value());
    FUZZ_CHECK(d->user == c->user && d->password == c->password);
  }
  return 0;
}

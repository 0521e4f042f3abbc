#include "daemon/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cctype>
#include <cstring>
#include <memory>

namespace memtrimd {
namespace {

// A well-formed bcrypt hash of a random password: what an unknown user's
// password is checked against, so the answer takes as long as for a known
// user and does not tell which user names exist.
constexpr const char* kDummyHash = "$2b$10$abcdefghijklmnopqrstuu/MWjo7Kmh0lU5yaJYBbJg3lLAZjwDTa";

// More distinct (user, password) pairs than this and the memory is cleared:
// a client guessing passwords cannot grow it without bound.
constexpr std::size_t kMaxVerdicts = 256;

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

std::optional<std::string> Base64Decode(std::string_view in) {
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  std::string out;
  unsigned acc = 0;
  int bits = 0;
  for (char c : in) {
    int v = Base64Value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (bits >= 6) return std::nullopt;  // a dangling sextet is not base64
  return out;
}

bool BcryptMatches(const std::string& password, const char* hash) {
  // crypt_data is ~32 KiB: on the heap, not on civetweb's worker stack.
  auto data = std::make_unique<crypt_data>();
  std::memset(data.get(), 0, sizeof(crypt_data));
  // crypt_rn, not crypt_r: it returns null on failure rather than a "*0"
  // string, and sanitizers do not intercept it (their crypt_r interceptor
  // finds no real crypt_r when libcrypt arrives later, with the web module).
  const char* out = crypt_rn(password.c_str(), hash, data.get(), sizeof(crypt_data));
  if (out == nullptr || out[0] == '*') return false;
  std::size_t n = std::strlen(hash);
  return std::strlen(out) == n && CRYPTO_memcmp(out, hash, n) == 0;
}

}  // namespace

std::optional<Credentials> ParseBasicAuthorization(std::string_view header) {
  constexpr std::string_view kScheme = "Basic ";
  if (header.size() <= kScheme.size()) return std::nullopt;
  // The scheme is case-insensitive (RFC 7617).
  for (std::size_t i = 0; i + 1 < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) !=
        std::tolower(static_cast<unsigned char>(kScheme[i]))) {
      return std::nullopt;
    }
  }
  if (header[kScheme.size() - 1] != ' ') return std::nullopt;
  header.remove_prefix(kScheme.size());
  while (!header.empty() && header.front() == ' ') header.remove_prefix(1);
  while (!header.empty() && header.back() == ' ') header.remove_suffix(1);
  auto decoded = Base64Decode(header);
  if (!decoded) return std::nullopt;
  std::size_t colon = decoded->find(':');
  if (colon == std::string::npos) return std::nullopt;
  return Credentials{decoded->substr(0, colon), decoded->substr(colon + 1)};
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {}

bool BasicAuth::Allows(const char* authorization_header) const {
  if (authorization_header == nullptr) return false;
  auto c = ParseBasicAuthorization(authorization_header);
  if (!c) return false;
  return Verify(*c);
}

bool BasicAuth::Verify(const Credentials& c) const {
  auto it = users_.find(c.user);
  const std::string& hash = it != users_.end() ? it->second : std::string(kDummyHash);
  std::string material = c.user + '\0' + c.password + '\0' + hash;
  Key key{};
  unsigned int len = 0;
  EVP_Digest(material.data(), material.size(), key.data(), &len, EVP_sha256(), nullptr);
  OPENSSL_cleanse(material.data(), material.size());
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto v = verdicts_.find(key);
    if (v != verdicts_.end()) return v->second;
  }
  bool ok = BcryptMatches(c.password, hash.c_str()) && it != users_.end();
  std::lock_guard<std::mutex> lock(mu_);
  if (verdicts_.size() >= kMaxVerdicts) verdicts_.clear();
  verdicts_[key] = ok;
  return ok;
}

}  // namespace memtrimd

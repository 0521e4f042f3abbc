#include "daemon/web/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <atomic>
#include <cctype>
#include <cstring>
#include <memory>

namespace memtrimd {
namespace {

// The salt and hash part of UnknownUserHash: a valid salt, and a hash part
// that no password gives.
constexpr std::string_view kUnknownUserSaltAndHash =
    "abcdefghijklmnopqrstuu/MWjo7Kmh0lU5yaJYBbJg3lLAZjwDTa";

// More distinct wrong (user, password) pairs than this and they are
// forgotten: a client guessing passwords cannot grow the memory without
// bound. Right ones are kept apart; there is one per user unless someone
// who knows a password sends it with more than bcrypt's 72 bytes.
constexpr std::size_t kMaxDenied = 256;
constexpr std::size_t kMaxAllowed = 64;

// Process-wide, not per BasicAuth: a reload makes a new BasicAuth while
// requests may still use the old one, and a flood must not get two turns.
std::mutex g_bcrypt_turn;
std::atomic<int> g_bcrypt_waiting{0};
std::atomic<uint64_t> g_bcrypt_checks{0};
std::atomic<int> g_bcrypt_running{0};
std::atomic<int> g_bcrypt_most_at_once{0};

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

// Called with g_bcrypt_turn held.
bool BcryptMatches(const std::string& password, const char* hash) {
  int running = g_bcrypt_running.fetch_add(1) + 1;
  int most = g_bcrypt_most_at_once.load();
  while (running > most && !g_bcrypt_most_at_once.compare_exchange_weak(most, running)) {
  }
  g_bcrypt_checks.fetch_add(1);
  struct Done {
    ~Done() { g_bcrypt_running.fetch_sub(1); }
  } done;
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

std::string UnknownUserHash(const std::map<std::string, std::string>& users) {
  std::string prefix = "$2b$";
  int cost = 10;
  bool first = true;
  for (const auto& [user, hash] : users) {
    // Hashes were checked by CheckBcryptHash: "$2?$NN$" and 53 more.
    if (hash.size() < 7) continue;
    int c = (hash[4] - '0') * 10 + (hash[5] - '0');
    if (first || c > cost) {
      cost = c;
      prefix = hash.substr(0, 4);
    }
    first = false;
  }
  char digits[3] = {static_cast<char>('0' + cost / 10), static_cast<char>('0' + cost % 10), 0};
  return prefix + digits + "$" + std::string(kUnknownUserSaltAndHash);
}

BcryptCounts BcryptCountsSoFar() {
  return BcryptCounts{g_bcrypt_checks.load(), g_bcrypt_most_at_once.load()};
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users)
    : users_(std::move(users)), unknown_user_hash_(UnknownUserHash(users_)) {}

AuthVerdict BasicAuth::Check(const char* authorization_header) const {
  if (authorization_header == nullptr) return AuthVerdict::kDenied;
  auto c = ParseBasicAuthorization(authorization_header);
  if (!c) return AuthVerdict::kDenied;
  return Verify(*c);
}

AuthVerdict BasicAuth::Verify(const Credentials& c) const {
  auto it = users_.find(c.user);
  const bool known = it != users_.end();
  const std::string& hash = known ? it->second : unknown_user_hash_;
  std::string material = c.user + '\0' + c.password + '\0' + hash;
  Key key{};
  unsigned int len = 0;
  EVP_Digest(material.data(), material.size(), key.data(), &len, EVP_sha256(), nullptr);
  OPENSSL_cleanse(material.data(), material.size());
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (allowed_.count(key) != 0) return AuthVerdict::kAllowed;
    if (denied_.count(key) != 0) return AuthVerdict::kDenied;
  }
  // Take a place in the queue for bcrypt, or say "busy" when it is full.
  if (g_bcrypt_waiting.fetch_add(1) >= kMaxWaiting) {
    g_bcrypt_waiting.fetch_sub(1);
    return AuthVerdict::kBusy;
  }
  bool ok = false;
  {
    std::lock_guard<std::mutex> turn(g_bcrypt_turn);
    ok = BcryptMatches(c.password, hash.c_str()) && known;
  }
  g_bcrypt_waiting.fetch_sub(1);
  std::lock_guard<std::mutex> lock(mu_);
  std::set<Key>& verdicts = ok ? allowed_ : denied_;
  if (verdicts.size() >= (ok ? kMaxAllowed : kMaxDenied)) verdicts.clear();
  verdicts.insert(key);
  return ok ? AuthVerdict::kAllowed : AuthVerdict::kDenied;
}

}  // namespace memtrimd

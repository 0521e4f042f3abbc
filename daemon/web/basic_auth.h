// HTTP basic authentication against the web config's bcrypt hashes.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace memtrimd {

// "Basic dXNlcjpwYXNz" -> {"user", "pass"}; nullopt for anything else.
struct Credentials {
  std::string user;
  std::string password;
};
std::optional<Credentials> ParseBasicAuthorization(std::string_view header);

enum class AuthVerdict {
  kAllowed,
  kDenied,
  // Too many requests wait for a password check already: asked again later,
  // it is checked (HTTP 503 with Retry-After).
  kBusy,
};

// What the HTTP server asks of basic auth. memtrimd-daemon calls it on a
// BasicAuth made by the web module (web_module.h) and must not need that
// module's symbols: every member here is inline or pure, so the daemon has
// its own copy of this class's vtable and type info (UBSan's vptr check
// needs the latter).
class Authenticator {
 public:
  virtual ~Authenticator() = default;
  // The verdict on an Authorization header (null when absent).
  virtual AuthVerdict Check(const char* authorization_header) const = 0;
};

// The hash an unknown user's password is checked against: as costly as the
// costliest hash in `users` (cost 10 when there is none), so that the answer
// does not tell which user names exist. Its salt is fixed and its hash part
// matches no password.
std::string UnknownUserHash(const std::map<std::string, std::string>& users);

// Password checks this process has made (bcrypt runs), and the most that
// ever ran at the same time: 1, because they take turns (see Check).
struct BcryptCounts {
  uint64_t checks = 0;
  int most_at_once = 0;
};
BcryptCounts BcryptCountsSoFar();

class BasicAuth : public Authenticator {
 public:
  explicit BasicAuth(std::map<std::string, std::string> users);

  // kAllowed when the header names a user of the config with the right
  // password. A bcrypt check costs tens of milliseconds of one core by
  // design, so:
  // - every check of the process takes its turn (one at a time, whatever
  //   the number of configs and requests): a flood of guesses takes one
  //   core at most, and the other stays free for sampling and trims;
  // - at most kMaxWaiting requests are being checked or waiting for their
  //   turn; more get kBusy at once instead of holding an HTTP worker each
  //   (probes need them);
  // - verdicts are remembered (by a SHA-256 of user, password and hash,
  //   never the password itself), the right ones apart from the wrong ones,
  //   so that a flood of wrong guesses cannot push Prometheus' out;
  // - an unknown user is checked against UnknownUserHash: it costs one
  //   bcrypt at the highest cost of the config and is remembered the same
  //   way, so nothing tells it from a known user with a wrong password.
  // Thread-safe.
  AuthVerdict Check(const char* authorization_header) const override;

  static constexpr int kMaxWaiting = 4;

 private:
  using Key = std::array<uint8_t, 32>;
  AuthVerdict Verify(const Credentials& c) const;

  std::map<std::string, std::string> users_;
  std::string unknown_user_hash_;
  mutable std::mutex mu_;
  mutable std::set<Key> denied_;   // wrong guesses, bounded
  mutable std::set<Key> allowed_;  // right passwords: one per user and hash
};

}  // namespace memtrimd

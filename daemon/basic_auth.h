// HTTP basic authentication against the web config's bcrypt hashes.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace memtrimd {

// "Basic dXNlcjpwYXNz" -> {"user", "pass"}; nullopt for anything else.
struct Credentials {
  std::string user;
  std::string password;
};
std::optional<Credentials> ParseBasicAuthorization(std::string_view header);

// What the HTTP server asks of basic auth. memtrimd-daemon calls it on a
// BasicAuth made by the web module (web_module.h) and must not need that
// module's symbols: every member here is inline or pure, so the daemon has
// its own copy of this class's vtable and type info (UBSan's vptr check
// needs the latter).
class Authenticator {
 public:
  virtual ~Authenticator() = default;
  // Whether the Authorization header (null when absent) is accepted.
  virtual bool Allows(const char* authorization_header) const = 0;
};

class BasicAuth : public Authenticator {
 public:
  explicit BasicAuth(std::map<std::string, std::string> users);

  // Whether the Authorization header names a user of the config with the
  // right password. A bcrypt check costs tens of milliseconds by design, so
  // verdicts are remembered (by a SHA-256 of user, password and hash, never
  // the password itself); an unknown user costs the same as a known one.
  // Thread-safe.
  bool Allows(const char* authorization_header) const override;

 private:
  using Key = std::array<uint8_t, 32>;
  bool Verify(const Credentials& c) const;

  std::map<std::string, std::string> users_;
  mutable std::mutex mu_;
  mutable std::map<Key, bool> verdicts_;
};

}  // namespace memtrimd

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

class BasicAuth {
 public:
  explicit BasicAuth(std::map<std::string, std::string> users);
  // Virtual so that memtrimd-daemon calls into the web module, which defines
  // it, through the vtable and not by name (web_module.h).
  virtual ~BasicAuth() = default;

  // Whether the Authorization header names a user of the config with the
  // right password. A bcrypt check costs tens of milliseconds by design, so
  // verdicts are remembered (by a SHA-256 of user, password and hash, never
  // the password itself); an unknown user costs the same as a known one.
  // Thread-safe.
  virtual bool Allows(const char* authorization_header) const;

 private:
  using Key = std::array<uint8_t, 32>;
  bool Verify(const Credentials& c) const;

  std::map<std::string, std::string> users_;
  mutable std::mutex mu_;
  mutable std::map<Key, bool> verdicts_;
};

}  // namespace memtrimd

// Test material for --web.config.file: certificates made with the openssl
// command line, and web config files.
#pragma once

#include <string>

#include "tests/integration/harness.h"

namespace memtrimd::testing {

// bcrypt of "secret", cost 10 (made with Python's crypt.crypt and
// crypt.METHOD_BLOWFISH; promtool check web-config accepts it).
inline constexpr const char* kSecretHash =
    "$2b$10$k.JAt26eiDcJ.I3IzqX7vOLAyIu6BXgH/mBB0VFuFSLs84pDI7fyG";

// A certificate and its key, signed by `ca` (or self-signed when ca is
// null), valid for 127.0.0.1 and localhost; `client` adds the clientAuth
// usage. Files <dir>/<name>.crt and <dir>/<name>.key. false if openssl
// failed (the reason is in `why`).
struct CertFiles {
  std::string crt;
  std::string key;
};
inline bool MakeCert(const TempDir& dir, const std::string& name, const std::string& cn,
                     const CertFiles* ca, bool client, CertFiles& out, std::string& why) {
  out = {dir / (name + ".crt"), dir / (name + ".key")};
  std::string ext = dir / (name + ".ext");
  WriteFile(ext, std::string("subjectAltName=IP:127.0.0.1,DNS:localhost\n") +
                     (ca == nullptr ? "basicConstraints=critical,CA:TRUE\n"
                                    : "basicConstraints=CA:FALSE\n") +
                     (client ? "extendedKeyUsage=clientAuth\n" : ""));
  std::vector<std::string> key = {"openssl", "genpkey",  "-algorithm",
                                  "EC",      "-pkeyopt", "ec_paramgen_curve:P-256",
                                  "-out",    out.key};
  RunResult r = RunCommand(key);
  if (r.exit_code != 0) {
    why = r.err;
    return false;
  }
  std::string csr = dir / (name + ".csr");
  r = RunCommand({"openssl", "req", "-new", "-key", out.key, "-subj", "/CN=" + cn, "-out", csr});
  if (r.exit_code != 0) {
    why = r.err;
    return false;
  }
  std::vector<std::string> sign = {"openssl",
                                   "x509",
                                   "-req",
                                   "-in",
                                   csr,
                                   "-days",
                                   "2",
                                   "-out",
                                   out.crt,
                                   "-extfile",
                                   ext,
                                   "-set_serial",
                                   std::to_string(std::hash<std::string>{}(name) % 1000000)};
  if (ca == nullptr) {
    sign.insert(sign.end(), {"-signkey", out.key});
  } else {
    sign.insert(sign.end(), {"-CA", ca->crt, "-CAkey", ca->key});
  }
  r = RunCommand(sign);
  if (r.exit_code != 0) why = r.err;
  return r.exit_code == 0;
}

// A web config with only basic auth (user alice, password secret).
inline std::string WriteBasicAuthConfig(const TempDir& dir) {
  std::string path = dir / "web.yml";
  WriteFile(path, std::string("basic_auth_users:\n  alice: ") + kSecretHash + "\n");
  return path;
}

}  // namespace memtrimd::testing

// --web.config.file against real clients: TLS with certificates made by the
// openssl command line, client certificates, basic auth, headers, rotation
// without a restart, and the same accept/reject verdicts as promtool.

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <set>

#include <cstdio>
#include <filesystem>

#include "tests/integration/harness.h"
#include "tests/integration/web_fixtures.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string Https(const Memtrimd& m, const std::string& path) {
  return "https://127.0.0.1:" + std::to_string(m.port()) + path;
}

// The subject of the certificate the server presented ("" if no handshake).
std::string PresentedSubject(const std::string& url, const std::string& ca) {
  RunResult r = RunCommand(
      {"curl", "-s", "--max-time", "5", "-o", "/dev/null", "-w", "%{certs}", "--cacert", ca, url});
  std::size_t at = r.out.find("Subject:");
  if (at == std::string::npos) return "";
  return r.out.substr(at + 8, r.out.find('\n', at) - at - 8);
}

class WebTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!MakeCert(dir, "ca", "memtrimd test CA", nullptr, false, ca, why) ||
        !MakeCert(dir, "server", "first", &ca, false, server, why) ||
        !MakeCert(dir, "client", "scraper", &ca, true, client, why)) {
      GTEST_SKIP() << "openssl cannot make test certificates: " << why;
    }
  }

  Memtrimd Start(const std::string& config, std::vector<std::string> extra = {}) {
    WriteFile(dir / "web.yml", config);
    std::vector<std::string> flags = {"--web.config.file=" + (dir / "web.yml"),
                                      "--target.pid=" + std::to_string(getpid()),
                                      "--sample.interval=200ms"};
    flags.insert(flags.end(), extra.begin(), extra.end());
    return Memtrimd(flags);
  }

  std::string TlsConfig(const std::string& more = "") {
    return "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n" + more;
  }

  TempDir dir;
  CertFiles ca, server, client;
};

TEST_F(WebTest, TlsBasicAuthAndHeaders) {
  Memtrimd m = Start(TlsConfig() +
                     "http_server_config:\n  headers:\n    X-Frame-Options: deny\n"
                     "    Strict-Transport-Security: max-age=31536000\n"
                     "basic_auth_users:\n  alice: " +
                     kSecretHash + "\n");
  ASSERT_TRUE(m.started()) << m.log();
  EXPECT_NE(m.log().find("tls=on"), std::string::npos) << m.log();
  const std::vector<std::string> tls = {"--cacert", ca.crt};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), tls.begin(), tls.end());
    return more;
  };

  HttpResponse ok = Curl(Https(m, "/metrics"), with({"-u", "alice:secret"}));
  EXPECT_EQ(ok.status, 200);
  EXPECT_NE(ok.body.find("memtrimd_target_up 1"), std::string::npos);
  EXPECT_NE(ok.headers.find("X-Frame-Options: deny"), std::string::npos) << ok.headers;
  EXPECT_NE(ok.headers.find("Strict-Transport-Security: max-age=31536000"), std::string::npos);

  HttpResponse wrong = Curl(Https(m, "/metrics"), with({"-u", "alice:guess"}));
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(wrong.body.find("memtrimd_"), std::string::npos) << "no metrics without credentials";
  EXPECT_NE(wrong.headers.find("WWW-Authenticate: Basic"), std::string::npos) << wrong.headers;
  EXPECT_EQ(Curl(Https(m, "/metrics"), with({"-u", "bob:secret"})).status, 401);
  EXPECT_EQ(Curl(Https(m, "/metrics"), tls).status, 401);
  EXPECT_EQ(Curl(Https(m, "/report"), tls).status, 401);
  EXPECT_EQ(Curl(Https(m, "/"), tls).status, 401);
  // Probes need no credentials; /healthz tells nothing but "sampling runs".
  EXPECT_EQ(Curl(Https(m, "/healthz"), tls).status, 200);
  // Plain HTTP on the TLS port gets no answer.
  EXPECT_EQ(Curl(m.url("/healthz")).status, 0);
}

// What --web.config.file needs (YAML, OpenSSL, bcrypt) is in a module that
// only a web config loads: a plain memtrimd maps none of it.
TEST_F(WebTest, OnlyAWebConfigLoadsTheWebModule) {
  auto mapped = [](pid_t pid) {
    std::set<std::string> names;
    for (const RawMapping& m : ReadSmapsIndependently(pid)) {
      for (const char* lib : {"libmemtrimd_web.so", "libcrypto.so", "libssl.so", "libyaml-cpp"}) {
        if (m.path.find(lib) != std::string::npos) names.insert(lib);
      }
    }
    return names;
  };
  Memtrimd plain({"--target.pid=" + std::to_string(getpid()), "--sample.interval=200ms"});
  ASSERT_TRUE(plain.started()) << plain.log();
  EXPECT_EQ(mapped(plain.process().pid()), std::set<std::string>{});

  Memtrimd web = Start("basic_auth_users:\n  alice: " + std::string(kSecretHash) + "\n");
  ASSERT_TRUE(web.started()) << web.log();
  EXPECT_EQ(
      mapped(web.process().pid()),
      (std::set<std::string>{"libmemtrimd_web.so", "libcrypto.so", "libssl.so", "libyaml-cpp"}));
  EXPECT_EQ(Curl(web.url("/metrics"), {"-u", "alice:secret"}).status, 200);
}

TEST_F(WebTest, ClientCertificatesRequiredAndVerified) {
  Memtrimd m =
      Start(TlsConfig("  client_auth_type: RequireAndVerifyClientCert\n"
                      "  client_ca_file: ca.crt\n"));
  ASSERT_TRUE(m.started()) << m.log();
  EXPECT_EQ(Curl(Https(m, "/metrics"), {"--cacert", ca.crt}).status, 0) << "no client certificate";
  EXPECT_EQ(
      Curl(Https(m, "/metrics"), {"--cacert", ca.crt, "--cert", client.crt, "--key", client.key})
          .status,
      200);
  // A certificate from another CA is refused.
  TempDir other;
  CertFiles other_ca, stranger;
  std::string why;
  ASSERT_TRUE(MakeCert(other, "ca", "someone else's CA", nullptr, false, other_ca, why)) << why;
  ASSERT_TRUE(MakeCert(other, "client", "stranger", &other_ca, true, stranger, why)) << why;
  EXPECT_EQ(Curl(Https(m, "/metrics"),
                 {"--cacert", ca.crt, "--cert", stranger.crt, "--key", stranger.key})
                .status,
            0);
}

TEST_F(WebTest, MinimumTlsVersion) {
  Memtrimd m = Start(TlsConfig("  min_version: TLS13\n"));
  ASSERT_TRUE(m.started()) << m.log();
  EXPECT_EQ(Curl(Https(m, "/healthz"), {"--cacert", ca.crt, "--tls-max", "1.2"}).status, 0);
  EXPECT_EQ(Curl(Https(m, "/healthz"), {"--cacert", ca.crt, "--tlsv1.3"}).status, 200);
}

TEST_F(WebTest, CertificateRotationWithoutRestart) {
  Memtrimd m = Start(TlsConfig());
  ASSERT_TRUE(m.started()) << m.log();
  ASSERT_EQ(PresentedSubject(Https(m, "/healthz"), ca.crt), "CN = first");
  pid_t pid = m.process().pid();

  // Replace both files the way a secret update does: new files renamed over
  // the old ones.
  TempDir next;
  CertFiles second;
  std::string why;
  ASSERT_TRUE(MakeCert(next, "server", "second", &ca, false, second, why)) << why;
  fs::rename(second.key, server.key);
  fs::rename(second.crt, server.crt);
  EXPECT_TRUE(
      WaitFor([&] { return PresentedSubject(Https(m, "/healthz"), ca.crt) == "CN = second"; }, 15s))
      << m.log();
  EXPECT_EQ(m.process().pid(), pid);
  EXPECT_TRUE(m.process().running());
  EXPECT_NE(m.log().find("web config reloaded"), std::string::npos) << m.log();
}

TEST_F(WebTest, ABrokenReloadKeepsThePreviousConfig) {
  Memtrimd m = Start(std::string("basic_auth_users:\n  alice: ") + kSecretHash + "\n");
  ASSERT_TRUE(m.started()) << m.log();
  EXPECT_EQ(Curl(m.url()).status, 401);
  WriteFile(dir / "web.yml", "basic_auth_users: [broken\n");
  EXPECT_TRUE(WaitFor(
      [&] {
        Curl(m.url());  // reloads are checked when requests come in
        return m.log().find("web config not reloaded") != std::string::npos;
      },
      15s))
      << m.log();
  // Still protected, still serving.
  EXPECT_EQ(Curl(m.url()).status, 401);
  EXPECT_EQ(Curl(m.url(), {"-u", "alice:secret"}).status, 200);
  // Turning TLS on needs a restart: refused, logged, the old config stays.
  WriteFile(dir / "web.yml", TlsConfig());
  EXPECT_TRUE(WaitFor(
      [&] {
        Curl(m.url());
        return m.log().find("TLS cannot be turned on or off") != std::string::npos;
      },
      15s))
      << m.log();
  EXPECT_EQ(Curl(m.url(), {"-u", "alice:secret"}).status, 200);
}

// Every file promtool rejects, memtrimd rejects at start (exit 2, one line);
// every file promtool accepts, memtrimd serves with, except those listed as
// stricter with the reason.
TEST_F(WebTest, SameVerdictsAsPromtool) {
  struct Case {
    std::string name;
    std::string yaml;
    bool memtrimd_stricter = false;  // promtool accepts, memtrimd refuses (why in the comment)
  };
  const std::string hash = kSecretHash;
  std::vector<Case> cases = {
      {"empty", ""},
      {"tls", TlsConfig()},
      {"tls and auth", TlsConfig() + "basic_auth_users:\n  alice: " + hash + "\n"},
      {"mtls",
       TlsConfig("  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n")},
      {"tls13", TlsConfig("  min_version: TLS13\n")},
      {"ciphers", TlsConfig("  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]\n"
                            "  curve_preferences: [CurveP256]\n")},
      {"headers", "http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n"},
      {"unknown field", "foo: 1\n"},
      {"unknown tls field", TlsConfig("  client_allowed_sans: [a]\n")},
      {"cert without key", "tls_server_config:\n  cert_file: server.crt\n"},
      {"missing cert file", "tls_server_config:\n  cert_file: nope.crt\n  key_file: server.key\n"},
      {"key and cert swapped",
       "tls_server_config:\n  cert_file: server.key\n  key_file: server.crt\n"},
      {"unknown version", TlsConfig("  min_version: TLS9\n")},
      {"ca without policy", TlsConfig("  client_ca_file: ca.crt\n")},
      {"bad client auth", TlsConfig("  client_auth_type: Sometimes\n")},
      {"missing ca file", TlsConfig("  client_auth_type: RequireAndVerifyClientCert\n"
                                    "  client_ca_file: nope.crt\n")},
      {"bad cipher", TlsConfig("  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n")},
      {"bad hash", "basic_auth_users:\n  alice: secret\n"},
      {"low cost", "basic_auth_users:\n  alice: $2b$03$" + hash.substr(7) + "\n"},
      {"bad header", "http_server_config:\n  headers:\n    Server: memtrimd\n"},
      {"bad header value", "http_server_config:\n  headers:\n    X-Frame-Options: allow\n"},
      {"not yaml", "tls_server_config: [1, 2\n"},
      {"duplicate user", "basic_auth_users:\n  a: " + hash + "\n  a: " + hash + "\n"},
      // No client could ever connect.
      {"min above max", TlsConfig("  min_version: TLS13\n  max_version: TLS12\n"), true},
      // A hash of the wrong length can never match a password.
      {"short hash", "basic_auth_users:\n  alice: " + hash.substr(0, 59) + "\n", true},
      {"foreign key", "tls_server_config:\n  cert_file: server.crt\n  key_file: client.key\n"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string path = dir / "case.yml";
    WriteFile(path, c.yaml);
    RunResult promtool = RunCommand({PROMTOOL_BIN, "check", "web-config", path});
    bool promtool_accepts = promtool.exit_code == 0;
    Memtrimd m({"--web.config.file=" + path, "--target.pid=" + std::to_string(getpid()),
                "--no-collector.glibc"});
    if (promtool_accepts && !c.memtrimd_stricter) {
      EXPECT_TRUE(m.started()) << "promtool accepts it: " << m.log();
      continue;
    }
    EXPECT_FALSE(promtool_accepts && !c.memtrimd_stricter) << promtool.out;
    EXPECT_EQ(c.memtrimd_stricter, promtool_accepts)
        << "listed as stricter, but promtool " << (promtool_accepts ? "accepts" : "rejects");
    EXPECT_FALSE(m.started());
    EXPECT_EQ(m.process().Wait(10s), 2) << m.log();
    std::string log = m.log();
    EXPECT_EQ(log.rfind("memtrimd: --web.config.file: " + path + ": ", 0), 0u) << log;
    EXPECT_EQ(log.find('\n'), log.size() - 1) << "one line: " << log;
  }
}

}  // namespace
}  // namespace memtrimd::testing

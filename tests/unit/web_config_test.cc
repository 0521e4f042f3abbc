// The web config parser: what exporter-toolkit (promtool check web-config)
// accepts and rejects, and what memtrimd makes of it. The integration test
// web_test.cc runs promtool itself on the same kinds of files.

#include "daemon/web/web_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "daemon/web/basic_auth.h"

namespace memtrimd {
namespace {

// bcrypt("secret"), cost 10.
constexpr const char* kHash = "$2b$10$k.JAt26eiDcJ.I3IzqX7vOLAyIu6BXgH/mBB0VFuFSLs84pDI7fyG";

std::string Rejection(const std::string& yaml) {
  Result<WebConfig> c = ParseWebConfig(yaml, "/etc/memtrimd");
  return c.ok() ? "" : c.status().message();
}

TEST(WebConfig, EmptyFileMeansPlainHttpWithoutAuth) {
  Result<WebConfig> c = ParseWebConfig("", "/etc/memtrimd");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_FALSE(c->tls.enabled());
  EXPECT_FALSE(c->has_basic_auth());
  EXPECT_FALSE(c->authenticates());
}

TEST(WebConfig, FullConfig) {
  Result<WebConfig> c = ParseWebConfig(std::string(R"(
tls_server_config:
  cert_file: tls/server.crt
  key_file: /abs/server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
  min_version: TLS13
  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_AES_128_GCM_SHA256]
  curve_preferences: [X25519, CurveP256]
  prefer_server_cipher_suites: false
http_server_config:
  http2: false
  headers:
    X-Frame-Options: deny
    Strict-Transport-Security: max-age=31536000
basic_auth_users:
  alice: )") + kHash + "\n",
                                       "/etc/memtrimd");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->tls.enabled());
  // Relative to the config file's directory, as exporter-toolkit resolves them.
  EXPECT_EQ(c->tls.cert_file, "/etc/memtrimd/tls/server.crt");
  EXPECT_EQ(c->tls.key_file, "/abs/server.key");
  EXPECT_EQ(c->tls.client_ca_file, "/etc/memtrimd/ca.crt");
  EXPECT_EQ(c->tls.client_auth, ClientAuth::kRequireAndVerifyClientCert);
  EXPECT_EQ(c->tls.min_version, 0x0304);
  EXPECT_EQ(c->tls.max_version, 0x0304);
  EXPECT_EQ(c->tls.cipher_list, "ECDHE-RSA-AES128-GCM-SHA256");  // TLS 1.3 suites: fixed
  EXPECT_EQ(c->tls.groups_list, "X25519:P-256");
  EXPECT_FALSE(c->tls.prefer_server_cipher_suites);
  EXPECT_FALSE(c->http2);
  ASSERT_EQ(c->headers.size(), 2u);
  EXPECT_EQ(c->headers[0].first, "X-Frame-Options");
  EXPECT_EQ(c->basic_auth_users.at("alice"), kHash);
  EXPECT_TRUE(c->authenticates());
}

TEST(WebConfig, ClientCertificatesAloneAuthenticateOnlyWhenVerified) {
  auto with = [](const std::string& auth) {
    return ParseWebConfig(
        "tls_server_config:\n  cert_file: c\n  key_file: k\n"
        "  client_auth_type: " +
            auth + "\n  client_ca_file: ca\n",
        "/d");
  };
  EXPECT_TRUE(with("RequireAndVerifyClientCert")->authenticates());
  EXPECT_FALSE(with("RequireAnyClientCert")->authenticates());
  EXPECT_FALSE(with("VerifyClientCertIfGiven")->authenticates());
}

// Go would verify client certificates against the system's roots (about 290
// CAs on Debian): any certificate a public CA signed would pass, and
// authenticate for the trim API. memtrimd refuses such a config.
TEST(WebConfig, VerifyingClientCertificatesNeedsAClientCa) {
  for (std::string mode : {"RequireAndVerifyClientCert", "VerifyClientCertIfGiven"}) {
    EXPECT_EQ(Rejection("tls_server_config:\n  cert_file: c\n  key_file: k\n"
                        "  client_auth_type: " +
                        mode + "\n"),
              "client_auth_type " + mode +
                  " needs client_ca_file: without it any certificate from the system's CAs "
                  "would be accepted");
  }
  // The modes that do not verify need no CA.
  for (std::string mode : {"RequestClientCert", "RequireAnyClientCert"}) {
    EXPECT_EQ(Rejection("tls_server_config:\n  cert_file: c\n  key_file: k\n"
                        "  client_auth_type: " +
                        mode + "\n"),
              "");
  }
}

TEST(WebConfig, ALoneMinVersionLeavesTlsOff) {
  Result<WebConfig> c = ParseWebConfig("tls_server_config:\n  min_version: TLS13\n", "/d");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->tls.enabled());
}

// Each rejection as promtool words it (where it says something useful).
TEST(WebConfig, RejectsWhatPromtoolRejects) {
  EXPECT_EQ(Rejection("foo: 1\n"), "line 1: field foo not found in the web config");
  EXPECT_EQ(Rejection("tls_server_config:\n  cert_file: c\n"), "missing key_file");
  EXPECT_EQ(Rejection("tls_server_config:\n  key_file: k\n"), "missing cert_file");
  EXPECT_EQ(Rejection("tls_server_config:\n  client_auth_type: RequireAndVerifyClientCert\n"),
            "missing cert_file");
  EXPECT_EQ(Rejection("tls_server_config:\n  cert_file: c\n  key_file: k\n  min_version: TLS9\n"),
            "line 4: unknown TLS version: TLS9");
  EXPECT_EQ(Rejection("tls_server_config:\n  cert_file: c\n  key_file: k\n  client_ca_file: a\n"),
            "Client CA's have been configured without a Client Auth Policy");
  EXPECT_EQ(Rejection("tls_server_config:\n  cert_file: c\n  key_file: k\n"
                      "  client_auth_type: Foo\n"),
            "Invalid ClientAuth: Foo");
  EXPECT_EQ(Rejection("tls_server_config:\n  cert_file: c\n  key_file: k\n"
                      "  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n"),
            "line 4: unknown cipher: TLS_RSA_WITH_RC4_128_SHA");
  EXPECT_EQ(Rejection("tls_server_config:\n  cert_file: c\n  key_file: k\n"
                      "  curve_preferences: [Foo]\n"),
            "line 4: unknown curve: Foo");
  EXPECT_EQ(Rejection("tls_server_config:\n  client_allowed_sans: [a]\n"),
            "line 2: field client_allowed_sans not found in tls_server_config");
  EXPECT_EQ(Rejection("http_server_config:\n  headers:\n    X-Foo: bar\n"),
            "HTTP header \"X-Foo\" can not be configured");
  EXPECT_EQ(Rejection("http_server_config:\n  headers:\n    x-frame-options: deny\n"),
            "HTTP header \"x-frame-options\" can not be configured");
  EXPECT_EQ(Rejection("http_server_config:\n  headers:\n    X-Frame-Options: DENY\n"),
            "invalid value for X-Frame-Options. Expected one of: [\"deny\" \"sameorigin\"], but "
            "got: \"DENY\"");
  EXPECT_EQ(Rejection("http_server_config:\n  http2: maybe\n"),
            "line 2: http2: \"maybe\" is not true or false");
  EXPECT_EQ(Rejection("basic_auth_users:\n  alice: notahash\n"),
            "line 2: basic_auth_users.alice: not a bcrypt hash (it must start with $2b$ or $2y$)");
  EXPECT_EQ(Rejection("basic_auth_users:\n  alice:\n"),
            "line 2: basic_auth_users.alice: hashedSecret too short to be a bcrypted password");
  EXPECT_EQ(Rejection(std::string("basic_auth_users:\n  a: ") + kHash + "\n  a: " + kHash + "\n"),
            "line 3: key \"a\" already set in basic_auth_users");
  EXPECT_EQ(Rejection("basic_auth_users:\n  - alice\n"),
            "line 2: basic_auth_users must be a mapping");
  EXPECT_EQ(Rejection("- a\n"), "line 1: the web config must be a mapping");
  EXPECT_NE(Rejection("tls_server_config: [1, 2\n").find("yaml: line"), std::string::npos);
}

// Stricter than promtool, where promtool's acceptance would only fail later.
TEST(WebConfig, RejectsWhatCouldNeverServe) {
  EXPECT_EQ(Rejection("tls_server_config:\n  cert_file: c\n  key_file: k\n"
                      "  min_version: TLS13\n  max_version: TLS12\n"),
            "min_version is newer than max_version");
  EXPECT_EQ(Rejection(std::string("basic_auth_users:\n  alice: ") + kHash + "x\n"),
            "line 2: basic_auth_users.alice: not a bcrypt hash (it must be 60 characters long)");
}

TEST(BcryptHash, Shapes) {
  EXPECT_EQ(CheckBcryptHash(kHash), "");
  EXPECT_EQ(CheckBcryptHash("$2y$10$k.JAt26eiDcJ.I3IzqX7vOLAyIu6BXgH/mBB0VFuFSLs84pDI7fyG"), "");
  EXPECT_EQ(CheckBcryptHash("$2b$03$k.JAt26eiDcJ.I3IzqX7vOLAyIu6BXgH/mBB0VFuFSLs84pDI7fyG"),
            "cost 3 is outside allowed range (4,31)");
  EXPECT_EQ(CheckBcryptHash("$3b$10$k.JAt26eiDcJ.I3IzqX7vOLAyIu6BXgH/mBB0VFuFSLs84pDI7fyG"),
            "bcrypt algorithm version '3' requested is newer than current version '2'");
  EXPECT_NE(CheckBcryptHash("$2b$10$k.JAt26eiDcJ.I3IzqX7vOLAyIu6BXgH/mBB0VFuFSLs84pDI7f!G"), "");
}

TEST(BasicAuth, ParsesTheAuthorizationHeader) {
  auto c = ParseBasicAuthorization("Basic YWxpY2U6c2VjcmV0");  // alice:secret
  ASSERT_TRUE(c);
  EXPECT_EQ(c->user, "alice");
  EXPECT_EQ(c->password, "secret");
  c = ParseBasicAuthorization("basic YTpiOmM=");  // a:b:c, the password keeps its colons
  ASSERT_TRUE(c);
  EXPECT_EQ(c->user, "a");
  EXPECT_EQ(c->password, "b:c");
  EXPECT_FALSE(ParseBasicAuthorization("Bearer abc"));
  EXPECT_FALSE(ParseBasicAuthorization("Basic !!!"));
  EXPECT_FALSE(ParseBasicAuthorization("Basic YWxpY2U="));  // no colon
  EXPECT_FALSE(ParseBasicAuthorization("Basic"));
}

TEST(BasicAuth, ChecksPasswordsWithBcrypt) {
  BasicAuth auth(std::map<std::string, std::string>{{"alice", kHash}});
  EXPECT_EQ(auth.Check("Basic YWxpY2U6c2VjcmV0"), AuthVerdict::kAllowed);  // alice:secret
  EXPECT_EQ(auth.Check("Basic YWxpY2U6c2VjcmV0"), AuthVerdict::kAllowed);  // remembered
  EXPECT_EQ(auth.Check("Basic YWxpY2U6d3Jvbmc="), AuthVerdict::kDenied);   // alice:wrong
  EXPECT_EQ(auth.Check("Basic Ym9iOnNlY3JldA=="), AuthVerdict::kDenied);   // bob:secret, unknown
  EXPECT_EQ(auth.Check(nullptr), AuthVerdict::kDenied);
  EXPECT_EQ(auth.Check(""), AuthVerdict::kDenied);
}

// An unknown user's password is checked against a hash as costly as the
// costliest of the config (a fixed cost-10 hash once made unknown users
// four times cheaper than a cost-12 user, and so told which names exist).
TEST(BasicAuth, UnknownUsersCostTheHighestCostOfTheConfig) {
  const std::string cost12 = "$2y$12$9k9wbHNMQB6B.bCd31ghjuBDx8PgU8ZNiNJkHGZT92lECd.hCv2DG";
  std::string h = UnknownUserHash({{"alice", kHash}, {"bob", cost12}});
  EXPECT_EQ(h.substr(0, 7), "$2y$12$");
  EXPECT_EQ(CheckBcryptHash(h), "");
  EXPECT_EQ(UnknownUserHash({{"alice", kHash}}).substr(0, 7), "$2b$10$");
  EXPECT_EQ(UnknownUserHash({{"carol", "$2a$05$" + std::string(kHash).substr(7)}}).substr(0, 7),
            "$2a$05$");
  EXPECT_EQ(UnknownUserHash({}).substr(0, 7), "$2b$10$");
}

// A wrong guess costs one bcrypt check whether or not the user exists, and
// a repeated one none (its verdict is remembered the same way for both).
TEST(BasicAuth, UnknownAndKnownUsersCostOneCheckEach) {
  BasicAuth auth(std::map<std::string, std::string>{{"alice", kHash}});
  auto checks = [] { return BcryptCountsSoFar().checks; };
  uint64_t before = checks();
  EXPECT_EQ(auth.Check("Basic Ym9iOnNlY3JldA=="), AuthVerdict::kDenied);  // bob:secret
  EXPECT_EQ(checks(), before + 1);
  EXPECT_EQ(auth.Check("Basic YWxpY2U6Z3Vlc3M="), AuthVerdict::kDenied);  // alice:guess
  EXPECT_EQ(checks(), before + 2);
  EXPECT_EQ(auth.Check("Basic Ym9iOnNlY3JldA=="), AuthVerdict::kDenied);
  EXPECT_EQ(auth.Check("Basic YWxpY2U6Z3Vlc3M="), AuthVerdict::kDenied);
  EXPECT_EQ(checks(), before + 2);
  EXPECT_EQ(auth.Check("Basic YWxpY2U6c2VjcmV0"), AuthVerdict::kAllowed);  // alice:secret
  EXPECT_EQ(checks(), before + 3);
}

// Many threads guessing at once: the checks take turns (never two at once,
// so a flood takes one core), and no more than kMaxWaiting wait for their
// turn; the others are told "busy" at once. Nothing is ever allowed.
TEST(BasicAuth, ChecksTakeTurnsAndTheQueueIsBounded) {
  BasicAuth auth(std::map<std::string, std::string>{{"alice", kHash}});
  BasicAuth other(std::map<std::string, std::string>{{"bob", kHash}});  // a reloaded config
  uint64_t before = BcryptCountsSoFar().checks;
  constexpr int kThreads = 12;
  std::vector<AuthVerdict> verdicts(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      // "<user>:guess<i>", known users and an unknown one, against two
      // configs.
      std::string header;
      {
        std::string user = i % 3 == 0 ? "mallory" : i % 2 ? "alice" : "bob";
        std::string plain = user + ":guess" + std::to_string(i);
        static constexpr char kB64[] =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        std::string enc;
        for (std::size_t at = 0; at < plain.size(); at += 3) {
          uint32_t n = 0;
          std::size_t k = std::min<std::size_t>(3, plain.size() - at);
          for (std::size_t j = 0; j < 3; ++j) {
            n = (n << 8) | (j < k ? static_cast<unsigned char>(plain[at + j]) : 0u);
          }
          for (std::size_t j = 0; j < 4; ++j) {
            enc += j <= k ? kB64[(n >> (18 - 6 * j)) & 63] : '=';
          }
        }
        header = "Basic " + enc;
      }
      verdicts[static_cast<std::size_t>(i)] = (i % 2 ? auth : other).Check(header.c_str());
    });
  }
  for (std::thread& t : threads) t.join();
  int busy = 0;
  for (AuthVerdict v : verdicts) {
    EXPECT_NE(v, AuthVerdict::kAllowed);
    if (v == AuthVerdict::kBusy) ++busy;
  }
  BcryptCounts after = BcryptCountsSoFar();
  EXPECT_EQ(after.most_at_once, 1);
  EXPECT_EQ(after.checks - before, static_cast<uint64_t>(kThreads - busy));
}

}  // namespace
}  // namespace memtrimd

// --web.config.file against real clients: TLS with certificates made by the
// openssl command line, client certificates, basic auth, headers, rotation
// without a restart, and the same accept/reject verdicts as promtool. And the
// HTTP server itself: probes beside idle and slow connections, request
// targets civetweb does not route, label escaping as a scraper reads it.

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include <cstdio>
#include <filesystem>

#include "daemon/web/basic_auth.h"
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
  // The incident page comes through the same handler: over TLS, with the
  // credentials, and with nothing in it that names another server or scheme.
  HttpResponse page = Curl(Https(m, "/"), with({"-u", "alice:secret"}));
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("<body data-sequence=\""), std::string::npos) << page.body;
  EXPECT_NE(page.body.find("<section class=\"target\""), std::string::npos) << page.body;
  EXPECT_EQ(page.body.find("://"), std::string::npos) << page.body;
  EXPECT_NE(page.headers.find("X-Frame-Options: deny"), std::string::npos) << page.headers;

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
      // Go would verify client certificates against the system's CAs: any
      // publicly signed certificate would pass (and reach the trim API).
      {"verify without ca", TlsConfig("  client_auth_type: RequireAndVerifyClientCert\n"), true},
      {"verify if given without ca", TlsConfig("  client_auth_type: VerifyClientCertIfGiven\n"),
       true},
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
    if (c.name.rfind("verify", 0) == 0) {
      EXPECT_NE(log.find("needs client_ca_file"), std::string::npos) << log;
    }
  }
}

// Connections waiting in the accept queue of the socket listening on
// 127.0.0.1:port (for a listening socket, /proc/net/tcp's rx_queue).
int AcceptQueue(int port) {
  char local[32];
  std::snprintf(local, sizeof(local), "0100007F:%04X", port);
  std::istringstream in(ReadFile("/proc/net/tcp"));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string sl, addr, rem, st, queues;
    fields >> sl >> addr >> rem >> st >> queues;
    if (addr == local && st == "0A" && queues.find(':') != std::string::npos) {
      return static_cast<int>(std::stoul(queues.substr(queues.find(':') + 1), nullptr, 16));
    }
  }
  return -1;
}

// A wrong password is refused the same way whether or not the user exists,
// and password checks take turns: a flood of guesses (bcrypt at cost 12 is
// about a quarter of a second of one core here) does not take both cores, and
// a request that would have to wait behind more than a few of them is told
// 503 at once instead of holding an HTTP worker. Probes stay answered.
TEST_F(WebTest, PasswordGuessesAreRefusedAlikeAndTakeTurns) {
  // bcrypt("secret"), cost 12.
  const std::string cost12 = "$2b$12$9k9wbHNMQB6B.bCd31ghjuBDx8PgU8ZNiNJkHGZT92lECd.hCv2DG";
  Memtrimd m = Start("basic_auth_users:\n  alice: " + cost12 + "\n");
  ASSERT_TRUE(m.started()) << m.log();
  HttpResponse known = Curl(m.url(), {"-u", "alice:guess"});
  HttpResponse unknown = Curl(m.url(), {"-u", "mallory:guess"});
  EXPECT_EQ(known.status, 401);
  EXPECT_EQ(unknown.status, 401);
  EXPECT_EQ(known.body, unknown.body);
  EXPECT_EQ(Curl(m.url(), {"-u", "alice:secret"}).status, 200);

  // Twelve guesses at once, each a new password: memtrimd is stopped until
  // all twelve wait to be accepted, so they reach it together.
  constexpr int kGuesses = 12;
  std::vector<int> status(kGuesses);
  std::vector<std::thread> threads;
  Stopped stopped(m.process().pid());
  ASSERT_TRUE(stopped.ok());
  for (int i = 0; i < kGuesses; ++i) {
    threads.emplace_back([&, i] {
      status[static_cast<std::size_t>(i)] =
          Curl(m.url(), {"-u", (i % 2 ? "alice:" : "mallory:") + std::to_string(i)}).status;
    });
  }
  EXPECT_TRUE(WaitFor([&] { return AcceptQueue(m.port()) >= kGuesses; }, 10s))
      << AcceptQueue(m.port());
  stopped.Continue();
  // While they are checked one by one, a probe needs no worker they hold.
  EXPECT_EQ(Curl(m.url("/healthz"), {"--max-time", "1"}).status, 200);
  for (std::thread& t : threads) t.join();
  int refused = 0, busy = 0;
  for (int s : status) {
    if (s == 401) ++refused;
    if (s == 503) ++busy;
  }
  EXPECT_EQ(refused + busy, kGuesses);
  EXPECT_GE(refused, 1);
  // At most four are checked or wait their turn (a cost-12 check takes far
  // longer than the twelve take to arrive): the others are told to come
  // back at once. (Half of them, not eight: a worker the scheduler starts
  // late may find a free place.)
  static_assert(BasicAuth::kMaxWaiting == 4);
  EXPECT_GE(busy, kGuesses / 2) << "refused " << refused;
  // Prometheus' remembered verdict is not pushed out by the flood.
  EXPECT_EQ(Curl(m.url(), {"-u", "alice:secret"}).status, 200);
}

// A TCP connection to 127.0.0.1:port, closed when it goes.
class RawClient {
 public:
  explicit RawClient(int port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool ok() const { return fd_ >= 0; }
  bool Send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // Everything the server sends until it closes, or until `timeout` passes
  // with nothing more.
  std::string ReadUntilClosed(std::chrono::milliseconds timeout) {
    std::string out;
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return out;
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return out;
      out.append(buf, static_cast<std::size_t>(n));
    }
  }
  // Reads what has arrived; false once the server has closed the connection.
  bool Drain() {
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 0) != 1) return true;
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
      if (n <= 0) return false;
      answered_ = true;
    }
  }
  bool answered() const { return answered_; }

 private:
  int fd_;
  bool answered_ = false;
};

// Clients that hold connections and send no complete request: `idle` ones
// sent one request, read its answer and stay silent (keep-alive clients
// gone quiet); `slow` ones send a request line and then a header line now
// and then, never the blank line that ends the headers ("slowloris"). One
// the server closes is replaced by a new one at the next Refresh, so the
// pressure lasts for the whole test.
class Pressure {
 public:
  Pressure(int port, int idle, int slow) : port_(port) {
    for (int i = 0; i < idle + slow; ++i) {
      clients_.push_back({i < idle, nullptr});
      Open(clients_.back());
    }
  }
  void Refresh() {
    for (Client& c : clients_) {
      if (!c.raw->Drain()) {
        Open(c);
      } else if (!c.idle) {
        c.raw->Send("X-a: b\r\n");
      }
    }
  }
  bool AllIdleAnswered() const {
    for (const Client& c : clients_) {
      if (c.idle && !c.raw->answered()) return false;
    }
    return true;
  }
  bool AllConnected() const {
    for (const Client& c : clients_) {
      if (!c.raw->ok()) return false;
    }
    return true;
  }

 private:
  struct Client {
    bool idle;
    std::unique_ptr<RawClient> raw;
  };
  void Open(Client& c) {
    c.raw = std::make_unique<RawClient>(port_);
    c.raw->Send(c.idle ? "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                       : "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  }
  int port_;
  std::vector<Client> clients_;
};

// Connections that send a request head one byte a second and never finish
// it ("slowloris"), kept up from a thread of their own: one the server
// closes is replaced at once (within 10 ms), so that they hold every worker
// they can for as long as the test lasts. `tls`: the bytes are the start of
// a TLS record (a ClientHello that never completes), so the server is held
// in its handshake.
class SlowHeads {
 public:
  SlowHeads(int port, int n, bool tls) : port_(port), tls_(tls) {
    for (int i = 0; i < n; ++i) clients_.push_back(Open());
    thread_ = std::thread([this] { Run(); });
  }
  ~SlowHeads() {
    stop_ = true;
    thread_.join();
  }
  SlowHeads(const SlowHeads&) = delete;
  SlowHeads& operator=(const SlowHeads&) = delete;
  bool AllConnected() const {
    for (const auto& c : clients_) {
      if (!c->ok()) return false;
    }
    return true;
  }
  int replaced() const { return replaced_.load(); }

 private:
  std::unique_ptr<RawClient> Open() {
    auto c = std::make_unique<RawClient>(port_);
    c->Send(tls_ ? std::string("\x16\x03\x01", 3) : std::string("G"));
    return c;
  }
  void Run() {
    auto last_byte = std::chrono::steady_clock::now();
    while (!stop_) {
      for (auto& c : clients_) {
        if (!c->Drain()) {
          c = Open();
          ++replaced_;
        }
      }
      if (std::chrono::steady_clock::now() - last_byte >= 1s) {
        last_byte = std::chrono::steady_clock::now();
        for (auto& c : clients_) c->Send(tls_ ? std::string("\x02", 1) : std::string("E"));
      }
      std::this_thread::sleep_for(10ms);
    }
  }
  const int port_;
  const bool tls_;
  std::vector<std::unique_ptr<RawClient>> clients_;
  std::atomic<bool> stop_{false};
  std::atomic<int> replaced_{0};
  std::thread thread_;
};

// Whether `url` answers 200 while `slow` lasts: probes (2 s each, curl's
// own connection) until one is answered, for up to 30 s. Not a timing: a
// busy machine may miss many; every one misses while each worker is held
// until its head times out and the connections ahead in civetweb's queue
// are other slow ones.
bool AnsweredBeside(const std::string& url, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"--max-time", "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  return WaitFor([&] { return Curl(url, args).status == 200; }, 30s);
}

class HttpServerTest : public ::testing::Test {
 protected:
  // A kubelet probe as the shipped manifests make it: timeoutSeconds 1.
  static int Probe(const Memtrimd& m, const std::string& path = "/healthz") {
    return Curl(m.url(path), {"--max-time", "1"}).status;
  }
  // Fourteen probes and three scrapes while `pressure` lasts.
  static void ExpectAllAnswered(const Memtrimd& m, Pressure& pressure) {
    for (int i = 0; i < 14; ++i) {
      pressure.Refresh();
      EXPECT_EQ(Probe(m), 200) << "probe " << i;
    }
    for (int i = 0; i < 3; ++i) {
      pressure.Refresh();
      EXPECT_EQ(Probe(m, "/metrics"), 200) << "scrape " << i;
    }
  }
};

// Each idle keep-alive connection held one of civetweb's workers for 5 s;
// 32 of them held all 32, and probes waited longer than a kubelet does.
TEST_F(HttpServerTest, ProbesAreAnsweredBesideThirtyTwoIdleKeepAliveConnections) {
  Memtrimd m({"--target.pid=" + std::to_string(getpid())});
  ASSERT_TRUE(m.started()) << m.log();
  ASSERT_TRUE(WaitFor([&] { return Probe(m) == 200; }, 30s)) << m.log();
  Pressure idle(m.port(), 32, 0);
  ASSERT_TRUE(idle.AllConnected());
  ASSERT_TRUE(WaitFor(
      [&] {
        idle.Refresh();
        return idle.AllIdleAnswered();
      },
      10s));
  ExpectAllAnswered(m, idle);
}

// Each connection that never finishes its headers held a worker for 10 s;
// 40 of them held all 32.
TEST_F(HttpServerTest, ProbesAreAnsweredBesideFortySlowHeaderConnections) {
  Memtrimd m({"--target.pid=" + std::to_string(getpid())});
  ASSERT_TRUE(m.started()) << m.log();
  ASSERT_TRUE(WaitFor([&] { return Probe(m) == 200; }, 30s)) << m.log();
  Pressure slow(m.port(), 0, 40);
  ASSERT_TRUE(slow.AllConnected());
  ExpectAllAnswered(m, slow);
}

// Three times as many connections dribbling their heads as workers: each
// held a worker for civetweb's 3 s, and a probe waited behind 32 of them in
// civetweb's queue, about 7 s. Connections that have waited 250 ms for their
// head are now let go once workers run short (head_guard.h).
TEST_F(HttpServerTest, ProbesAreAnsweredWhileSlowHeadsOutnumberTheWorkers) {
  Memtrimd m({"--target.pid=" + std::to_string(getpid()), "--web.max-connections=16"});
  ASSERT_TRUE(m.started()) << m.log();
  ASSERT_TRUE(WaitFor([&] { return Probe(m) == 200; }, 30s)) << m.log();
  SlowHeads slow(m.port(), 48, false);
  ASSERT_TRUE(slow.AllConnected());
  EXPECT_TRUE(AnsweredBeside(m.url("/healthz"))) << "replaced " << slow.replaced();
  EXPECT_TRUE(AnsweredBeside(m.url("/metrics")));
}

// The same over TLS, where a slow client holds its worker in the handshake,
// before civetweb has a request at all: the handshake's start counts as the
// start of the wait for the head.
TEST_F(WebTest, ProbesAreAnsweredWhileSlowHandshakesOutnumberTheWorkers) {
  Memtrimd m = Start(TlsConfig(), {"--web.max-connections=16"});
  ASSERT_TRUE(m.started()) << m.log();
  ASSERT_TRUE(WaitFor([&] { return Curl(Https(m, "/healthz"), {"-k"}).status == 200; }, 30s))
      << m.log();
  SlowHeads slow(m.port(), 48, true);
  ASSERT_TRUE(slow.AllConnected());
  EXPECT_TRUE(AnsweredBeside(Https(m, "/healthz"), {"-k"})) << "replaced " << slow.replaced();
}

// civetweb 1.15 closed the connection in silence after "OPTIONS *" and after
// an absolute-form target (RFC 9112 3.2.2), even one naming this server.
TEST_F(HttpServerTest, OptionsStarAndAbsoluteFormTargetsGetAStatus) {
  Memtrimd m({"--target.pid=" + std::to_string(getpid())});
  ASSERT_TRUE(m.started()) << m.log();
  auto ask = [&](const std::string& request) {
    RawClient c(m.port());
    EXPECT_TRUE(c.ok());
    EXPECT_TRUE(c.Send(request));
    return c.ReadUntilClosed(10s);
  };
  std::string options = ask("OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(options.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << options;
  EXPECT_NE(options.find("\r\nAllow: GET, HEAD\r\n"), std::string::npos) << options;

  const std::string port = std::to_string(m.port());
  std::string own = ask("GET http://127.0.0.1:" + port +
                        "/metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(own.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << own;
  EXPECT_NE(own.find("\nmemtrimd_build_info{"), std::string::npos);
  std::string own_host_name =
      ask("GET http://localhost:" + port + "/healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(own_host_name.rfind("HTTP/1.1 ", 0), 0u) << own_host_name;

  std::string other = ask("GET http://127.0.0.1:1/metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(other.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << other;
  std::string star = ask("GET * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(star.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << star;
  EXPECT_TRUE(m.process().running());
}

// The value of `label` in the first line of `name` in an exposition, with
// the format's escapes (\\, \", \n) undone; nullopt if absent.
std::optional<std::string> LabelValue(const std::string& text, const std::string& name,
                                      const std::string& label) {
  std::size_t line = text.find("\n" + name + "{");
  if (line == std::string::npos) return std::nullopt;
  std::size_t at = text.find(label + "=\"", line);
  if (at == std::string::npos || at > text.find('\n', line + 1)) return std::nullopt;
  std::string out;
  for (std::size_t i = at + label.size() + 2; i < text.size(); ++i) {
    if (text[i] == '"') return out;
    if (text[i] == '\\' && i + 1 < text.size()) {
      ++i;
      out += text[i] == 'n' ? '\n' : text[i];
    } else {
      out += text[i];
    }
  }
  return std::nullopt;
}

// A target named a"b\c (the name of its program file): the kernel shows
// it in /proc/<pid>/status as a"b\\c, and memtrimd used to escape that
// again, so a scraper read a"b\\c.
TEST_F(HttpServerTest, ACommWithAQuoteAndABackslashIsEscapedOnce) {
  TempDir dir;
  const std::string program = dir / "a\"b\\c";
  fs::copy_file(FragmenterBin(), program);
  fs::permissions(program, fs::perms::owner_all);
  Process target =
      StartFragmenter(dir, {"--threads", "1", "--rounds", "1", "--burst-mib", "1"}, program);
  ASSERT_TRUE(target.running());
  ASSERT_EQ(ReadFile("/proc/" + std::to_string(target.pid()) + "/comm"), "a\"b\\c\n");
  Memtrimd m({"--target.pid=" + std::to_string(target.pid()), "--sample.interval=200ms"});
  ASSERT_TRUE(m.started()) << m.log();
  std::string text;
  ASSERT_TRUE(WaitFor(
      [&] {
        text = Curl(m.url()).body;
        return text.find("\nmemtrimd_target_info{") != std::string::npos;
      },
      30s))
      << m.log();
  EXPECT_NE(text.find("comm=\"a\\\"b\\\\c\""), std::string::npos) << text;
  EXPECT_EQ(LabelValue(text, "memtrimd_target_info", "comm"), "a\"b\\c");
  WriteFile(dir / "scrape.txt", text);
  RunResult promtool = RunCommand(
      {"sh", "-c", std::string(PROMTOOL_BIN) + " check metrics < " + (dir / "scrape.txt")});
  EXPECT_EQ(promtool.exit_code, 0) << promtool.out << promtool.err;
}

}  // namespace
}  // namespace memtrimd::testing

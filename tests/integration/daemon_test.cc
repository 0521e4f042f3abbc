// memtrimd as a user runs it: against the bundled fragmenting workload,
// scraped over loopback with curl, checked by promtool and by the test's
// own reading of /proc.

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>

#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

double RelDiff(double a, double b) { return std::fabs(a - b) / std::max(std::fabs(b), 1.0); }

class DaemonTest : public ::testing::Test {
 protected:
  TempDir dir_;
};

TEST_F(DaemonTest, ArenaHeapsAndRssMatchAnIndependentReading) {
  Process frag = StartFragmenter(dir_, {"--threads", "8", "--rounds", "2", "--burst-mib", "16"});
  ASSERT_TRUE(frag.running());
  const std::string pid = std::to_string(frag.pid());
  Memtrimd m({"--target.pid=" + pid, "--sample.interval=200ms", "--smaps.interval=200ms"});
  ASSERT_TRUE(m.started()) << m.log();

  // The workload is idle once ready, so a reading now and memtrimd's next
  // sample see the same process.
  IndependentHeaps mine = CountHeaps(ReadSmapsIndependently(frag.pid()));
  StatusNumbers status = ReadStatusIndependently(frag.pid());
  ASSERT_GE(mine.count, 4u) << "the workload should have made arena heaps";

  Series s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        auto age = Find(s, "memtrimd_smaps_age_seconds", {"pid=\"" + pid + "\""});
        return age && *age < 0.5;
      },
      10s))
      << m.log();
  auto heaps = Find(s, "memtrimd_glibc_arena_heaps", {"pid=\"" + pid + "\""});
  auto resident = Find(s, "memtrimd_glibc_arena_heap_bytes", {"pid=\"" + pid + "\"", "resident"});
  ASSERT_TRUE(heaps && resident);
  EXPECT_EQ(*heaps, static_cast<double>(mine.count));
  EXPECT_LT(RelDiff(*resident, static_cast<double>(mine.resident)), 0.02)
      << *resident << " vs " << mine.resident;

  auto anon = Find(s, "memtrimd_target_resident_memory_bytes", {"anon"});
  auto file = Find(s, "memtrimd_target_resident_memory_bytes", {"file"});
  auto shmem = Find(s, "memtrimd_target_resident_memory_bytes", {"shmem"});
  auto swap = Find(s, "memtrimd_target_swap_bytes");
  ASSERT_TRUE(anon && file && shmem && swap);
  EXPECT_LT(RelDiff(*anon, static_cast<double>(status.rss_anon)), 0.02);
  EXPECT_LT(RelDiff(*file, static_cast<double>(status.rss_file)), 0.02);
  EXPECT_LT(RelDiff(*anon + *file + *shmem,
                    static_cast<double>(status.rss_anon + status.rss_file + status.rss_shmem)),
            0.02);
  EXPECT_EQ(*swap, static_cast<double>(status.vm_swap));
  EXPECT_EQ(Find(s, "memtrimd_target_up"), 1.0);
  EXPECT_EQ(Find(s, "memtrimd_collector_success", {"glibc"}), 1.0);
  EXPECT_EQ(Find(s, "memtrimd_collector_success", {"process"}), 1.0);
  EXPECT_TRUE(Find(s, "memtrimd_target_info", {"comm=\"fragmenter\"", "runtime=\"glibc\""}));
}

TEST_F(DaemonTest, PromtoolAcceptsALiveScrape) {
  Process frag = StartFragmenter(dir_, {"--threads", "4", "--rounds", "1", "--burst-mib", "8"});
  ASSERT_TRUE(frag.running());
  Memtrimd m({"--target.pid=" + std::to_string(frag.pid()), "--sample.interval=200ms"});
  ASSERT_TRUE(m.started()) << m.log();
  HttpResponse r = Curl(m.url());
  ASSERT_EQ(r.status, 200);
  WriteFile(dir_ / "scrape.txt", r.body);
  RunResult check = RunCommand(
      {"sh", "-c", std::string(PROMTOOL_BIN) + " check metrics < " + (dir_ / "scrape.txt")});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err << "\n" << r.body;
  EXPECT_NE(r.body.find("memtrimd_glibc_arena_heaps{"), std::string::npos);
}

TEST_F(DaemonTest, HttpEndpointsBehave) {
  Memtrimd m({"--target.pid=" + std::to_string(getpid()), "--web.telemetry-path=/custom"});
  ASSERT_TRUE(m.started()) << m.log();

  HttpResponse metrics = Curl(m.url("/custom"));
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.headers.find("Content-Type: text/plain; version=0.0.4; charset=utf-8"),
            std::string::npos)
      << metrics.headers;
  EXPECT_NE(metrics.body.find("memtrimd_build_info{"), std::string::npos);

  HttpResponse gz = Curl(m.url("/custom"), {"--compressed"});
  EXPECT_EQ(gz.status, 200);
  EXPECT_NE(gz.headers.find("Content-Encoding: gzip"), std::string::npos) << gz.headers;
  EXPECT_NE(gz.body.find("memtrimd_build_info{"), std::string::npos) << "curl must inflate it";

  HttpResponse plain = Curl(m.url("/custom"), {"-H", "Accept-Encoding: identity"});
  EXPECT_EQ(plain.headers.find("Content-Encoding"), std::string::npos);

  // A response says when the connection closes after it: asked for by
  // the client, or HTTP/1.0 without keep-alive. An HTTP/1.1 request keeps
  // it without a word, an HTTP/1.0 one that asks is told it stays open.
  EXPECT_EQ(metrics.headers.find("Connection:"), std::string::npos) << metrics.headers;
  HttpResponse closing = Curl(m.url("/custom"), {"-H", "Connection: close"});
  EXPECT_EQ(closing.status, 200);
  EXPECT_NE(closing.headers.find("Connection: close"), std::string::npos) << closing.headers;
  EXPECT_NE(closing.body.find("memtrimd_build_info{"), std::string::npos);
  HttpResponse old = Curl(m.url("/custom"), {"--http1.0"});
  EXPECT_EQ(old.status, 200);
  EXPECT_NE(old.headers.find("Connection: close"), std::string::npos) << old.headers;
  HttpResponse old_kept = Curl(m.url("/custom"), {"--http1.0", "-H", "Connection: keep-alive"});
  EXPECT_EQ(old_kept.status, 200);
  EXPECT_NE(old_kept.headers.find("Connection: keep-alive"), std::string::npos) << old_kept.headers;

  // HEAD: the headers of the page, no body (curl writes a HEAD's headers
  // to its output, so nothing else may be there).
  HttpResponse head = Curl(m.url("/custom"), {"--head"});
  EXPECT_EQ(head.status, 200);
  EXPECT_NE(head.headers.find("Content-Length: "), std::string::npos) << head.headers;
  EXPECT_EQ(head.body.find("memtrimd_"), std::string::npos) << head.body;

  HttpResponse landing = Curl(m.url("/"));
  EXPECT_EQ(landing.status, 200);
  EXPECT_NE(landing.body.find("href=\"/custom\""), std::string::npos) << landing.body;

  EXPECT_EQ(Curl(m.url("/healthz")).status, 200);
  EXPECT_EQ(Curl(m.url("/metrics")).status, 404);
  EXPECT_EQ(Curl(m.url("/custom"), {"-X", "POST"}).status, 405);
}

// civetweb, left to itself, looks for a .htpasswd in the directory a URI
// maps to; memtrimd sets no document root, so that is the filesystem's root,
// and a file there once put civetweb's digest authentication (401) in front
// of every endpoint. Only --web.config.file decides who may read. The test
// needs to write /.htpasswd, so it runs as root and only when none is there.
TEST_F(DaemonTest, AStrayHtpasswdAtTheRootChangesNothing) {
  const char* path = "/.htpasswd";
  if (geteuid() != 0) GTEST_SKIP() << "needs root to write " << path;
  int fd = ::open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) GTEST_SKIP() << path << " exists or cannot be made; not touching it";
  struct Remove {
    const char* path;
    ~Remove() { ::unlink(path); }
  } remove{path};
  const std::string line = "scraper:memtrimd:0123456789abcdef0123456789abcdef\n";
  ASSERT_EQ(::write(fd, line.data(), line.size()), static_cast<ssize_t>(line.size()));
  ::close(fd);

  Memtrimd m({"--target.pid=" + std::to_string(getpid())});
  ASSERT_TRUE(m.started()) << m.log();
  HttpResponse metrics = Curl(m.url("/metrics"));
  EXPECT_EQ(metrics.status, 200) << metrics.headers;
  EXPECT_EQ(metrics.headers.find("WWW-Authenticate"), std::string::npos) << metrics.headers;
  EXPECT_NE(metrics.body.find("memtrimd_build_info{"), std::string::npos);
  EXPECT_EQ(Curl(m.url("/")).status, 200);
}

// An idle keep-alive connection holds one of civetweb's worker threads. With
// more idle clients than threads, a probe would wait until one timed out
// (memtrimd once had 4 threads and a 10 s keep-alive, longer than a kubelet
// probe waits). With the default --web.max-connections (48), 16 idle clients
// leave room for it; HttpServerTest has the heavier cases (32 idle, 40 slow).
TEST_F(DaemonTest, IdleKeepAliveClientsDoNotBlockAProbe) {
  Memtrimd m({"--target.pid=" + std::to_string(getpid())});
  ASSERT_TRUE(m.started()) << m.log();
  // /healthz is 503 until the first sample lands.
  ASSERT_TRUE(WaitFor([&] { return Curl(m.url("/healthz")).status == 200; }, 30s)) << m.log();
  std::vector<int> idle;
  for (int i = 0; i < 16; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    idle.push_back(fd);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(m.port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    const std::string req = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  }
  // Every one is answered (each by its own thread), then left open and idle.
  for (int fd : idle) {
    pollfd p{fd, POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 10000), 1) << "a keep-alive client got no answer";
    char buf[512];
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    ASSERT_GT(n, 0);
    EXPECT_EQ(std::string(buf, static_cast<std::size_t>(n)).rfind("HTTP/1.1 200", 0), 0u);
  }
  // A probe with a kubelet-like deadline is answered while they stay open.
  EXPECT_EQ(Curl(m.url("/healthz"), {"--max-time", "3"}).status, 200);
  for (int fd : idle) ::close(fd);
}

TEST_F(DaemonTest, RestartedTargetIsPickedUpWithinOneSample) {
  const std::string tag = "restart-" + std::to_string(getpid());
  Process a =
      StartFragmenter(dir_, {"--threads", "2", "--rounds", "1", "--burst-mib", "4", "--tag", tag});
  ASSERT_TRUE(a.running());
  Memtrimd m(
      {"--target.match=fragmenter.*" + tag, "--sample.interval=300ms", "--smaps.interval=300ms"});
  ASSERT_TRUE(m.started()) << m.log();
  const std::string a_pid = "pid=\"" + std::to_string(a.pid()) + "\"";
  ASSERT_TRUE(
      WaitFor([&] { return Find(m.Scrape(), "memtrimd_target_info", {a_pid}).has_value(); }, 10s));

  a.Kill();
  // Samples completed when we knew the target was gone: the one after next
  // started after the exit, so it must show no target and no old series.
  double seen = *Find(m.Scrape(), "memtrimd_samples_total");
  Series s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return Find(s, "memtrimd_samples_total").value_or(0) >= seen + 2;
      },
      10s));
  EXPECT_EQ(Find(s, "memtrimd_target_up"), 0.0);
  for (const auto& [key, value] : s) EXPECT_EQ(key.find(a_pid), std::string::npos) << key;
  EXPECT_TRUE(m.process().running()) << "memtrimd must survive its target";

  Process b =
      StartFragmenter(dir_, {"--threads", "2", "--rounds", "1", "--burst-mib", "4", "--tag", tag});
  ASSERT_TRUE(b.running());
  const std::string b_pid = "pid=\"" + std::to_string(b.pid()) + "\"";
  seen = *Find(m.Scrape(), "memtrimd_samples_total");
  ASSERT_TRUE(WaitFor(
      [&] {
        s = m.Scrape();
        return Find(s, "memtrimd_samples_total").value_or(0) >= seen + 2;
      },
      10s));
  EXPECT_EQ(Find(s, "memtrimd_target_up"), 1.0);
  EXPECT_TRUE(Find(s, "memtrimd_target_info", {b_pid})) << "new target not picked up";
  EXPECT_TRUE(Find(s, "memtrimd_target_resident_memory_bytes", {b_pid, "anon"}));
  EXPECT_NE(m.log().find("msg=\"target exited\""), std::string::npos);
}

TEST_F(DaemonTest, FixedPidThatExitsStaysDownAndIsNeverReused) {
  Process a = StartFragmenter(dir_, {"--threads", "1", "--rounds", "1", "--burst-mib", "1"});
  ASSERT_TRUE(a.running());
  Memtrimd m({"--target.pid=" + std::to_string(a.pid()), "--sample.interval=200ms"});
  ASSERT_TRUE(m.started()) << m.log();
  a.Kill();
  ASSERT_TRUE(WaitFor([&] { return Find(m.Scrape(), "memtrimd_target_up") == 0.0; }, 10s));
  double seen = *Find(m.Scrape(), "memtrimd_samples_total");
  ASSERT_TRUE(WaitFor(
      [&] { return Find(m.Scrape(), "memtrimd_samples_total").value_or(0) >= seen + 2; }, 10s));
  EXPECT_EQ(Find(m.Scrape(), "memtrimd_target_up"), 0.0);
  EXPECT_EQ(Curl(m.url("/healthz")).status, 200) << "no target is not a memtrimd failure";
}

TEST_F(DaemonTest, StopsCleanlyOnSigterm) {
  Memtrimd m({"--target.pid=" + std::to_string(getpid())});
  ASSERT_TRUE(m.started()) << m.log();
  EXPECT_EQ(m.process().Stop(SIGTERM, 10s), 0);
  EXPECT_NE(m.log().find("msg=stopping signal=SIGTERM"), std::string::npos) << m.log();
}

TEST_F(DaemonTest, JsonLogFormat) {
  Memtrimd m({"--target.pid=" + std::to_string(getpid()), "--log.format=json"});
  // The harness finds the port in logfmt; in JSON the line differs.
  std::string log;
  ASSERT_TRUE(WaitFor(
      [&] {
        log = m.log();
        return log.find("\"msg\":\"target selected\"") != std::string::npos;
      },
      10s))
      << log;
  EXPECT_NE(log.find("{\"ts\":\""), std::string::npos);
  EXPECT_EQ(log.find("level=info"), std::string::npos);
}

}  // namespace
}  // namespace memtrimd::testing

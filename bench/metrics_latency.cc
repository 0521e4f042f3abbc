// metrics_latency: request latency of a running memtrimd's /metrics, against
// /healthz (the HTTP floor: same server, same threads, no rendering).
//
//   metrics_latency --port PORT [--host 127.0.0.1] [--requests 2000] [--warmup 50]
//
// For each path and for two connection modes, sends N sequential GET requests:
//   keep-alive  all N over one connection (what Prometheus does)
//   keep-alive+quickack
//               the same, but the client re-arms TCP_QUICKACK before every
//               recv, so it ACKs at once instead of delaying the ACK (up to
//               40 ms on Linux). When the server writes one response in
//               several segments without TCP_NODELAY, Nagle holds the later
//               segments until that ACK arrives; this mode shows the server's
//               own time without that stall. Real scrapers (Prometheus) do not
//               do this, so the plain keep-alive row is what they see.
//   fresh       a new TCP connection per request, "Connection: close"
//                (connect + request + response + close are timed)
// Every response is read in full: the status line and headers, then exactly
// Content-Length bytes of body. No Accept-Encoding is sent, so /metrics is the
// uncompressed text format.
//
// Prints a markdown table (p50/p90/p99/max in microseconds, requests per
// second, body size) and the ratios metrics/healthz. Exit status 1 when a
// request fails or answers other than 200.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "bench_args.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  long requests = 2000;
  long warmup = 50;
};

[[noreturn]] void Usage(const char* msg) {
  if (msg != nullptr) std::fprintf(stderr, "metrics_latency: %s\n", msg);
  std::fprintf(stderr,
               "usage: metrics_latency --port PORT [--host 127.0.0.1] [--requests 2000] "
               "[--warmup 50]\n");
  std::exit(2);
}

long ParseLong(const char* s, const char* what, long lo, long hi) {
  std::optional<long> v = bench::ParseLongIn(s, lo, hi);
  if (!v) Usage(bench::NotAnInteger(what, s, lo, hi).c_str());
  return *v;
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) Usage((std::string(name) + " needs a value").c_str());
      return argv[++i];
    };
    if (a == "--port") {
      o.port = static_cast<int>(ParseLong(value("--port"), "--port", 1, 65535));
    } else if (a == "--host") {
      o.host = value("--host");
    } else if (a == "--requests" || a == "-n") {
      o.requests = ParseLong(value("--requests"), "--requests", 1, 10000000);
    } else if (a == "--warmup") {
      o.warmup = ParseLong(value("--warmup"), "--warmup", 0, 1000000);
    } else if (a == "--help" || a == "-h") {
      Usage(nullptr);
    } else {
      Usage(("unknown argument '" + std::string(a) + "'").c_str());
    }
  }
  if (o.port == 0) Usage("--port is required");
  return o;
}

// One client connection with its own receive buffer (bytes past one response
// stay for the next on a keep-alive connection).
class Conn {
 public:
  ~Conn() { Close(); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  explicit Conn(bool quickack) : quickack_(quickack) {}

  bool Open(const sockaddr_in& addr) {
    Close();
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return Fail("socket");
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    while (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      if (errno != EINTR) return Fail("connect");
    }
    buf_.clear();
    return true;
  }

  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    buf_.clear();
  }

  bool is_open() const { return fd_ >= 0; }

  bool Send(const std::string& req) {
    std::size_t off = 0;
    while (off < req.size()) {
      ssize_t n = ::send(fd_, req.data() + off, req.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Fail("send");
      off += static_cast<std::size_t>(n);
    }
    return true;
  }

  // Reads one response: headers, then exactly Content-Length bytes of body.
  bool ReadResponse(int& status, std::size_t& body_bytes, bool& server_closes) {
    std::size_t hdr_end;
    while ((hdr_end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (buf_.size() > (1u << 20)) return Fail("headers larger than 1 MiB", 0);
      if (!Fill()) return false;
    }
    std::string_view head(buf_.data(), hdr_end);
    // "HTTP/1.1 200 OK"
    if (head.size() < 12 || head.substr(0, 5) != "HTTP/") return Fail("bad status line", 0);
    status = std::atoi(std::string(head.substr(9, 3)).c_str());
    long content_length = -1;
    server_closes = false;
    std::size_t pos = head.find("\r\n");
    while (pos != std::string_view::npos) {
      std::size_t next = head.find("\r\n", pos + 2);
      std::string_view line = head.substr(
          pos + 2, next == std::string_view::npos ? std::string_view::npos : next - pos - 2);
      std::size_t colon = line.find(':');
      if (colon != std::string_view::npos) {
        std::string name(line.substr(0, colon));
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
          value.remove_prefix(1);
        }
        if (name == "content-length") {
          content_length = std::strtol(std::string(value).c_str(), nullptr, 10);
        } else if (name == "connection") {
          std::string v(value);
          std::transform(v.begin(), v.end(), v.begin(),
                         [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
          server_closes = v.find("close") != std::string::npos;
        } else if (name == "transfer-encoding") {
          return Fail("chunked responses are not supported", 0);
        }
      }
      pos = next;
    }
    if (content_length < 0) return Fail("response without Content-Length", 0);
    std::size_t need = hdr_end + 4 + static_cast<std::size_t>(content_length);
    while (buf_.size() < need) {
      if (!Fill()) return false;
    }
    body_bytes = static_cast<std::size_t>(content_length);
    buf_.erase(0, need);
    return true;
  }

  const std::string& error() const { return error_; }

 private:
  bool Fill() {
    char tmp[64 * 1024];
    for (;;) {
      if (quickack_) {
        int one = 1;
        ::setsockopt(fd_, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
      }
      ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Fail("recv");
      if (n == 0) return Fail("connection closed mid-response", 0);
      buf_.append(tmp, static_cast<std::size_t>(n));
      return true;
    }
  }

  bool Fail(const char* what, int err = -1) {
    if (err == -1) err = errno;
    error_ = err != 0 ? std::string(what) + ": " + std::strerror(err) : std::string(what);
    return false;
  }

  bool quickack_ = false;
  int fd_ = -1;
  std::string buf_;
  std::string error_;
};

struct Result {
  std::string path;
  std::string mode;
  std::vector<double> us;  // per request, sorted
  double wall_seconds = 0;
  std::size_t body_bytes = 0;

  double Percentile(double p) const {
    if (us.empty()) return 0;
    // Nearest rank.
    std::size_t rank =
        static_cast<std::size_t>(p / 100.0 * static_cast<double>(us.size()) + 0.999999);
    rank = std::clamp<std::size_t>(rank, 1, us.size());
    return us[rank - 1];
  }
  double Rps() const {
    return wall_seconds > 0 ? static_cast<double>(us.size()) / wall_seconds : 0;
  }
};

// Runs `warmup` + `n` requests; only the last n are recorded.
enum class Mode { kKeepAlive, kKeepAliveQuickAck, kFresh };

const char* ModeName(Mode m) {
  switch (m) {
    case Mode::kKeepAlive:
      return "keep-alive";
    case Mode::kKeepAliveQuickAck:
      return "keep-alive+quickack";
    case Mode::kFresh:
      return "fresh";
  }
  return "?";
}

bool Run(const Options& o, const sockaddr_in& addr, const std::string& path, Mode mode,
         Result& out) {
  const bool keep_alive = mode != Mode::kFresh;
  out.path = path;
  out.mode = ModeName(mode);
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: " + o.host + ":" + std::to_string(o.port) +
                    "\r\nUser-Agent: metrics_latency\r\nAccept: */*\r\nConnection: " +
                    (keep_alive ? "keep-alive" : "close") + "\r\n\r\n";
  Conn conn(mode == Mode::kKeepAliveQuickAck);
  out.us.clear();
  out.us.reserve(static_cast<std::size_t>(o.requests));
  Clock::time_point wall_start{};
  for (long i = 0; i < o.warmup + o.requests; ++i) {
    if (i == o.warmup) wall_start = Clock::now();
    Clock::time_point t0 = Clock::now();
    if (!conn.is_open() && !conn.Open(addr)) {
      std::fprintf(stderr, "metrics_latency: %s: %s\n", path.c_str(), conn.error().c_str());
      return false;
    }
    int status = 0;
    bool server_closes = false;
    std::size_t body = 0;
    if (!conn.Send(req) || !conn.ReadResponse(status, body, server_closes)) {
      std::fprintf(stderr, "metrics_latency: %s request %ld: %s\n", path.c_str(), i,
                   conn.error().c_str());
      return false;
    }
    if (!keep_alive || server_closes) conn.Close();
    Clock::time_point t1 = Clock::now();
    if (status != 200) {
      std::fprintf(stderr, "metrics_latency: %s answered %d\n", path.c_str(), status);
      return false;
    }
    if (i >= o.warmup) {
      out.us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      out.body_bytes = body;
    }
  }
  out.wall_seconds = std::chrono::duration<double>(Clock::now() - wall_start).count();
  std::sort(out.us.begin(), out.us.end());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = ParseArgs(argc, argv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(o.port));
  if (::inet_pton(AF_INET, o.host.c_str(), &addr.sin_addr) != 1)
    Usage("--host must be an IPv4 address");

  std::vector<Result> results;
  for (Mode mode : {Mode::kKeepAlive, Mode::kKeepAliveQuickAck, Mode::kFresh}) {
    for (const char* path : {"/healthz", "/metrics"}) {
      Result r;
      if (!Run(o, addr, path, mode, r)) return 1;
      results.push_back(std::move(r));
    }
  }

  std::printf("%ld sequential requests per row (after %ld warm-up), %s:%d\n\n", o.requests,
              o.warmup, o.host.c_str(), o.port);
  std::printf("| path | connection | p50 us | p90 us | p99 us | max us | req/s | body bytes |\n");
  std::printf("|---|---|---:|---:|---:|---:|---:|---:|\n");
  for (const Result& r : results) {
    std::printf("| %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %zu |\n", r.path.c_str(),
                r.mode.c_str(), r.Percentile(50), r.Percentile(90), r.Percentile(99), r.us.back(),
                r.Rps(), r.body_bytes);
  }
  std::printf("\n");
  // results: pairs of (healthz, metrics) per mode
  for (std::size_t i = 0; i + 1 < results.size(); i += 2) {
    const Result& h = results[i];
    const Result& m = results[i + 1];
    std::printf("ratio metrics/healthz (%s): p50 %.2f, p99 %.2f, req/s %.2f\n", h.mode.c_str(),
                m.Percentile(50) / h.Percentile(50), m.Percentile(99) / h.Percentile(99),
                m.Rps() / h.Rps());
  }
  return 0;
}

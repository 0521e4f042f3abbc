#include "daemon/web/http_server.h"

#include <civetweb.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "collectors/common/text.h"
#include "daemon/web/civetweb_tls.h"
#include "daemon/web/head_guard.h"

#include "daemon/exposition/exposition.h"
#include "daemon/exposition/gzip.h"
#include "daemon/report/incident_page.h"
#include "daemon/report/report_page.h"
#include "daemon/report/section_trims.h"
#include "daemon/report/site_report.h"

namespace memtrimd {
namespace {

// Sends a whole response in one write. Copying the cached /metrics text
// behind the headers costs about a microsecond; a second write costs a
// system call, a TCP segment and a wake-up of the client, and under 32
// connections a single write served about 7 % more requests a second
// (docs/benchmarks.md, section 6).
// Every answer is of now (no-store), but for fixed texts a URL names by the
// build (the incident page's stylesheet and icon).
constexpr const char* kNoStore = "no-store";
constexpr const char* kFixedForTheBuild = "max-age=86400, immutable";

void ReplyParts(mg_connection* conn, int code, const char* reason, const char* content_type,
                const std::vector<std::string_view>& body, const std::string& extra_headers = "",
                const char* cache_control = kNoStore) {
  const mg_request_info* ri = mg_get_request_info(conn);
  bool head = ri != nullptr && std::strcmp(ri->request_method, "HEAD") == 0;
  std::size_t length = 0;
  for (std::string_view part : body) length += part.size();
  std::string out = "HTTP/1.1 " + std::to_string(code) + " " + reason +
                    "\r\nContent-Type: " + content_type +
                    "\r\nContent-Length: " + std::to_string(length) +
                    "\r\nCache-Control: " + cache_control + "\r\n" + extra_headers + "\r\n";
  if (!head) {
    out.reserve(out.size() + length);
    for (std::string_view part : body) out.append(part);
  }
  // A short write means the client went away; there is nothing to retry.
  mg_write(conn, out.data(), out.size());
}

void Reply(mg_connection* conn, int code, const char* reason, const char* content_type,
           std::string_view body, const std::string& extra_headers = "",
           const char* cache_control = kNoStore) {
  ReplyParts(conn, code, reason, content_type, {body}, extra_headers, cache_control);
}

// Gives the pages of this thread's stack below the caller back to the
// kernel. A civetweb worker keeps every stack page a request ever touched:
// 12 KiB beyond an unused worker's 8 KiB for /healthz and 16 KiB for
// /metrics, in all of the --web.max-connections workers, since civetweb
// hands connections to its workers in turn. Called when a connection ends,
// below civetweb's own frames, where nothing lives any more: the next
// request faults in zeroed pages again.
void ReleaseStackBelowHere() {
  // Asked each time rather than kept in a thread_local: one more word of
  // static TLS was one more page of every thread's stack (the TLS block sits
  // at its top, and was near a page boundary). For a thread other than the
  // main one, glibc answers from its own records, without a system call.
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* addr = nullptr;
  std::size_t size = 0;
  int got = pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  if (got != 0) return;
  const uintptr_t lowest = reinterpret_cast<uintptr_t>(addr);
  // The frame itself, not a local's address: with AddressSanitizer, locals
  // may live on a "fake stack" elsewhere.
  const uintptr_t here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  if (here <= lowest || here >= lowest + size) return;
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  // Two pages below this frame stay: madvise's own call needs a few bytes.
  if (here - lowest <= 3 * page) return;
  const uintptr_t high = (here - 2 * page) & ~(page - 1);
  if (high > lowest) ::madvise(reinterpret_cast<void*>(lowest), high - lowest, MADV_DONTNEED);
}

// Whether a connection that ends now should give its worker's stack back:
// at most one every 10 ms in the whole process. Each release costs a
// system call, a TLB flush on every core running one of memtrimd's threads,
// and the page faults of the next request: at a new connection for every
// request (wrk with Connection: close) that was a third of the
// throughput. At the rates memtrimd is scraped and probed, every connection
// still gets it; a burst leaves some workers with their pages until their
// next connection.
bool TimeToReleaseStack() {
  static std::atomic<int64_t> last_ms{0};
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t last = last_ms.load(std::memory_order_relaxed);
  return now - last >= 10 && last_ms.compare_exchange_strong(last, now);
}

}  // namespace

std::string CivetwebPorts(const std::vector<std::string>& addresses) {
  std::string out;
  for (const std::string& a : addresses) {
    if (!out.empty()) out += ',';
    out += (!a.empty() && a.front() == ':') ? a.substr(1) : a;
  }
  return out;
}

bool KeepsConnection(std::optional<std::string_view> connection, std::string_view http_version) {
  if (!connection) return http_version == "1.1";
  std::string_view options = *connection;
  while (!options.empty()) {
    if (text::EqualsIgnoreCase(text::NextToken(options, ", \t"), "keep-alive")) return true;
  }
  return false;
}

std::optional<UnroutedReply> ReplyToUnrouted(std::string_view method, std::string_view target,
                                             std::string_view http_version, bool trim_api) {
  if (http_version != "1.0" && http_version != "1.1") return std::nullopt;  // civetweb sent 505
  if (target == "*") {
    if (method == "OPTIONS") {
      return UnroutedReply{200, "OK",
                           trim_api ? "Allow: GET, HEAD, POST\r\n" : "Allow: GET, HEAD\r\n", ""};
    }
    return UnroutedReply{400, "Bad Request", "", "\"*\" is a target for OPTIONS only\n"};
  }
  // civetweb serves an absolute-form target itself when its port is this
  // server's (so "http://127.0.0.1:8486/metrics" is /metrics); what is left
  // names another port or server. memtrimd is no proxy.
  auto starts = [&](std::string_view scheme) {
    return target.size() > scheme.size() &&
           text::EqualsIgnoreCase(target.substr(0, scheme.size()), scheme);
  };
  if ((starts("http://") || starts("https://") || starts("ws://") || starts("wss://")) &&
      target.find('/', target.find("//") + 2) != std::string_view::npos) {
    return UnroutedReply{400, "Bad Request", "", "the request target names another server\n"};
  }
  return std::nullopt;  // civetweb answered it (400 "Invalid URI") or routed it
}

HttpServer::HttpServer(HttpOptions options, const SnapshotStore& store, TrimEngine* trims)
    : options_(std::move(options)),
      store_(store),
      trims_(trims),
      metrics_page_(store, trims, MetricsPage::kProcessMaxAge, options_.metric_detail) {
  HeadGuardOptions guard;
  // One worker in eight kept for requests that arrive whole (6 of the
  // default 48): probes, scrapes, the page.
  guard.reserve = std::max(1, options_.max_connections / 8);
  guard_ = std::make_unique<HeadGuard>(guard);
}

HttpServer::~HttpServer() { Stop(); }

HttpServer* HttpServer::Of(const mg_context* ctx) {
  return static_cast<HttpServer*>(mg_get_user_data(ctx));
}

Status HttpServer::Start() {
  bool tls = options_.web != nullptr && options_.web->Current()->tls != nullptr;
  if (tls) {
    Status ready = PrepareCivetwebTls();
    if (!ready.ok()) return ready;
  }
  mg_init_library(tls ? MG_FEATURES_TLS : 0);
  std::string ports = CivetwebPorts(options_.listen_addresses);
  if (tls) {
    // civetweb marks a TLS port with a trailing "s".
    std::string with_s;
    std::size_t start = 0;
    while (start <= ports.size()) {
      std::size_t comma = ports.find(',', start);
      if (comma == std::string::npos) comma = ports.size();
      with_s += (with_s.empty() ? "" : ",") + ports.substr(start, comma - start) + "s";
      start = comma + 1;
    }
    ports = with_s;
  }
  // civetweb serves each connection on one worker thread, from the moment
  // it accepts it: a client that sends nothing, or its headers slowly, or
  // stays connected between keep-alive requests, holds a worker all that
  // time, and once every worker is held, a probe waits in civetweb's queue.
  // So (docs/benchmarks.md, "Probes under connection pressure" and "Probes
  // beside slow clients, byte by byte"):
  // - a connection holds its worker at most 3 s for its first request line
  //   and headers (and its TLS handshake; civetweb times writes with the
  //   same figure), not 10 s, however it trickles them;
  // - an idle keep-alive connection is let go after 0.5 s, not 5 s:
  //   Prometheus scrapes every 15 s or more, so only back-to-back requests
  //   ever used a longer one;
  // - once fewer than one worker in eight is free or serving, the guard
  //   (head_guard.h) lets go of every connection that has waited 250 ms
  //   or more for its head, so that no number of such connections keeps
  //   a probe waiting for the 3 s;
  // - there are --web.max-connections workers (48 by default). A worker
  //   that has served keeps about 12 KiB of stack (ReleaseStackBelowHere).
  const std::string threads = std::to_string(options_.max_connections);
  const char* opts[] = {"listening_ports", ports.c_str(), "num_threads", threads.c_str(),
                        "request_timeout_ms", "3000", "enable_keep_alive", "yes",
                        "keep_alive_timeout_ms", "500", "tcp_nodelay", "1",
                        // An absolute-form target ("GET http://host:port/metrics",
                        // RFC 9112 3.2.2) is served as its path when its port is
                        // ours. civetweb would also want its host to match the
                        // authentication_domain; memtrimd serves one site and has
                        // no such name.
                        "enable_auth_domain_check", "no", nullptr};
  mg_callbacks callbacks{};
  // Keep civetweb's own messages off stderr; errors come back through
  // mg_start2's error data.
  callbacks.log_message = [](const mg_connection*, const char*) { return 1; };
  // memtrimd makes the SSL_CTX itself, so that each handshake uses the
  // certificate files as they are now (see tls_server.h).
  if (tls) callbacks.external_ssl_ctx = &HttpServer::ExternalSslContext;
  callbacks.connection_close = &HttpServer::ConnectionClose;
  // The guard's view of each worker. init_connection runs on the worker
  // once it has taken a connection (after the TLS handshake; the handshake's
  // start is reported by the SSL_CTX, see ExternalSslContext).
  callbacks.init_thread = [](const mg_context* ctx, int thread_type) -> void* {
    if (thread_type == 1) Of(ctx)->guard_->WorkerStarted();
    return nullptr;
  };
  callbacks.exit_thread = [](const mg_context* ctx, int thread_type, void*) {
    if (thread_type == 1) Of(ctx)->guard_->WorkerExiting();
  };
  callbacks.init_connection = [](const mg_connection* conn, void**) {
    Of(mg_get_context(conn))->guard_->Waiting();
    return 0;
  };
  mg_init_data init{};
  init.callbacks = &callbacks;
  init.user_data = this;
  init.configuration_options = opts;
  Status guarded = guard_->Start();
  if (!guarded.ok()) return guarded;
  char err_text[256] = {};
  unsigned err_code = 0;
  mg_error_data err{};
  err.code = &err_code;
  err.text = err_text;
  err.text_buffer_size = sizeof(err_text);
  ctx_ = mg_start2(&init, &err);
  if (ctx_ == nullptr) {
    guard_->Stop();
    return Status(ErrorCode::kUnavailable,
                  "cannot listen on " + ports + ": " + (err_text[0] ? err_text : "unknown error"));
  }
  // Without an authorization handler civetweb looks for a .htpasswd file on
  // every request, in the directory the URI maps to: with no document root
  // that is the filesystem's root, so a stray /.htpasswd would put civetweb's
  // own digest authentication in front of memtrimd, and each request paid a
  // stat. memtrimd authenticates in Handle, from --web.config.file only.
  mg_set_auth_handler(
      ctx_, "/", [](mg_connection*, void*) { return 1; }, nullptr);
  mg_set_request_handler(ctx_, "/", &HttpServer::Handle, this);
  return Status::Ok();
}

void HttpServer::Stop() {
  // First: no worker is signalled while civetweb stops them.
  guard_->Stop();
  if (ctx_ != nullptr) {
    mg_stop(ctx_);
    ctx_ = nullptr;
  }
}

std::vector<int> HttpServer::BoundPorts() const {
  std::vector<int> ports;
  if (ctx_ == nullptr) return ports;
  mg_server_port sp[8];
  int n = mg_get_server_ports(ctx_, 8, sp);
  for (int i = 0; i < n; ++i) ports.push_back(sp[i].port);
  return ports;
}

int HttpServer::ExternalSslContext(void** ssl_ctx, void* self) {
  auto* server = static_cast<HttpServer*>(self);
  if (*ssl_ctx != nullptr) {  // civetweb is shutting down
    server->options_.web->module().free_server_context(static_cast<SSL_CTX*>(*ssl_ctx));
    return 1;
  }
  WebConfigFile* web = server->options_.web;
  HeadGuard* guard = server->guard_.get();
  SSL_CTX* ctx = web->module().new_server_context([web] { return web->Current()->tls; },
                                                  [guard] { guard->Waiting(); });
  if (ctx == nullptr) return -1;
  *ssl_ctx = ctx;
  return 1;
}

// civetweb calls this on the worker, just before it closes a connection.
// Two uses: the worker's stack can be given back here (nothing of the
// request lives below civetweb's frames any more), and civetweb 1.15 closes
// the connection after "OPTIONS *" or a foreign absolute-form target without
// calling any handler or writing a word, so this is the one place left to
// answer them. The socket (and TLS session) is still open then.
void HttpServer::ConnectionClose(const mg_connection* const_conn) {
  if (HttpServer* server = Of(mg_get_context(const_conn))) server->guard_->Closed();
  if (TimeToReleaseStack()) ReleaseStackBelowHere();
  const mg_request_info* ri = mg_get_request_info(const_conn);
  // A request handed to a handler has a local_uri; a connection closed with
  // no (complete) request has no method.
  if (ri == nullptr || ri->local_uri != nullptr || ri->request_method == nullptr ||
      ri->request_uri == nullptr || ri->http_version == nullptr) {
    return;
  }
  auto* server = static_cast<HttpServer*>(mg_get_user_data(mg_get_context(const_conn)));
  if (server == nullptr) return;
  std::optional<UnroutedReply> reply =
      ReplyToUnrouted(ri->request_method, ri->request_uri, ri->http_version,
                      server->options_.enable_trim_api && server->trims_ != nullptr);
  if (!reply) return;
  std::shared_ptr<const WebState> web =
      server->options_.web ? server->options_.web->Current() : nullptr;
  std::string out = "HTTP/1.1 " + std::to_string(reply->code) + " " + reply->reason +
                    "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
                    std::to_string(reply->body.size()) + "\r\nConnection: close\r\n" +
                    reply->headers + (web ? web->extra_headers : std::string()) + "\r\n" +
                    reply->body;
  // civetweb hands the callback a const connection, but writing is what it
  // is for here; nothing else uses the connection any more.
  mg_write(const_cast<mg_connection*>(const_conn), out.data(), out.size());
}

int HttpServer::ServeTrimApi(mg_connection* conn, std::string_view method, const WebState* web,
                             const std::string& headers) {
  const char* text = "text/plain; charset=utf-8";
  if (!options_.enable_trim_api || trims_ == nullptr) {
    Reply(conn, 404, "Not Found", text, "the trim API is off (--web.enable-trim-api)\n", headers);
    return 404;
  }
  // Checked at start too; a reloaded config may have dropped authentication.
  if (web == nullptr || !web->config.authenticates()) {
    Reply(conn, 403, "Forbidden", text,
          "the trim API needs authentication, and --web.config.file configures none\n", headers);
    return 403;
  }
  if (method != "POST") {
    Reply(conn, 405, "Method Not Allowed", text, "use POST\n", headers + "Allow: POST\r\n");
    return 405;
  }
  // A browser sends the credentials it has cached for memtrimd with a form
  // POST any other site's page makes; it marks such requests, other clients
  // send neither header (trim_api_guard.h).
  auto header = [&](const char* name) -> std::optional<std::string_view> {
    const char* v = mg_get_header(conn, name);
    return v != nullptr ? std::optional<std::string_view>(v) : std::nullopt;
  };
  const mg_request_info* info = mg_get_request_info(conn);
  if (std::optional<std::string> why =
          CrossOriginRefusal(header("Sec-Fetch-Site"), header("Origin"), header("Host"),
                             info != nullptr && info->is_ssl != 0)) {
    Reply(conn, 403, "Forbidden", text,
          "trims are not taken from other sites' pages: " + *why + "\n", headers);
    return 403;
  }
  // ?pid=N picks the target; without it, the one target (sidecar mode).
  std::optional<pid_t> pid;
  const mg_request_info* ri = mg_get_request_info(conn);
  if (ri != nullptr && ri->query_string != nullptr) {
    char value[32];
    if (mg_get_var(ri->query_string, std::strlen(ri->query_string), "pid", value, sizeof(value)) >
        0) {
      auto n = text::ParseUint(value);
      if (!n || *n == 0 || *n > 0x7fffffff) {
        Reply(conn, 400, "Bad Request", text, "pid: not a process id\n", headers);
        return 400;
      }
      pid = static_cast<pid_t>(*n);
    }
  }
  if (std::optional<std::chrono::seconds> wait =
          trim_limit_.Take(std::chrono::steady_clock::now())) {
    Reply(conn, 429, "Too Many Requests", text,
          "manual trims are limited to 3 at once and one every 10 s; try again in " +
              std::to_string(wait->count()) + " s\n",
          headers + "Retry-After: " + std::to_string(wait->count()) + "\r\n");
    return 429;
  }
  Result<TrimResult> r = trims_->TrimManually(pid);
  if (!r.ok()) {
    const ErrorCode code_of = r.status().code();
    // Nothing ran: the request does not count against the limit.
    if (code_of == ErrorCode::kBusy || code_of == ErrorCode::kNotFound ||
        code_of == ErrorCode::kInvalidArgument) {
      trim_limit_.Refund();
    }
    int code = code_of == ErrorCode::kBusy              ? 409
               : code_of == ErrorCode::kInvalidArgument ? 400
               : code_of == ErrorCode::kNotFound && pid ? 404
                                                        : 503;
    const char* reason = code == 409   ? "Conflict"
                         : code == 400 ? "Bad Request"
                         : code == 404 ? "Not Found"
                                       : "Service Unavailable";
    Reply(conn, code, reason, text, r.status().message() + "\n", headers);
    return code;
  }
  Reply(conn, 200, "OK", "application/json", RenderTrimJson(*r), headers);
  return 200;
}

// The ?pid=N of a request: nullopt without one; false (after a 400 reply)
// when it is no process id.
static bool PidQuery(mg_connection* conn, const std::string& headers, std::optional<pid_t>& pid) {
  const mg_request_info* ri = mg_get_request_info(conn);
  if (ri->query_string == nullptr) return true;
  char value[32];
  if (mg_get_var(ri->query_string, std::strlen(ri->query_string), "pid", value, sizeof(value)) <=
      0) {
    return true;
  }
  auto n = text::ParseUint(value);
  if (!n || *n == 0 || *n > 0x7fffffff) {
    Reply(conn, 400, "Bad Request", "text/plain; charset=utf-8", "pid: not a process id\n",
          headers);
    return false;
  }
  pid = static_cast<pid_t>(*n);
  return true;
}

// GET /debug/pprof/heap[?pid=N]: the sampled allocation sites of one
// target (--collector.sites) as a gzip'd pprof heap profile, the path
// Grafana Alloy's pyroscope.scrape and `go tool pprof` ask by default.
// Without pid: the one watched target; several need pid=.
int HttpServer::ServeHeapProfile(mg_connection* conn, const std::string& headers) {
  // Two: a scraper (Alloy, Pyroscope) and a person with go tool pprof are
  // served at once; a third waits a second, which such clients do anyway.
  constexpr int kMaxProfileRequests = 2;
  if (profiles_in_flight_.fetch_add(1) >= kMaxProfileRequests) {
    profiles_in_flight_.fetch_sub(1);
    Reply(conn, 503, "Service Unavailable", "text/plain; charset=utf-8",
          "profiles are being built for other requests; try again\n",
          headers + "Retry-After: 1\r\n");
    return 503;
  }
  struct Leave {
    std::atomic<int>& n;
    ~Leave() { n.fetch_sub(1); }
  } leave{profiles_in_flight_};
  return BuildHeapProfile(conn, headers);
}

int HttpServer::BuildHeapProfile(mg_connection* conn, const std::string& headers) {
  std::optional<pid_t> pid;
  if (!PidQuery(conn, headers, pid)) return 400;
  std::shared_ptr<const Snapshot> snap = store_.Latest();
  const TargetSnapshot* target = nullptr;
  if (snap) {
    for (const TargetSnapshot& ts : snap->targets) {
      if (pid ? ts.target.pid == *pid : snap->targets.size() == 1) target = &ts;
    }
  }
  auto not_found = [&](const std::string& why) {
    Reply(conn, 404, "Not Found", "text/plain; charset=utf-8", why + "\n", headers);
    return 404;
  };
  if (target == nullptr) {
    if (!pid && snap && snap->targets.size() > 1) {
      Reply(
          conn, 400, "Bad Request", "text/plain; charset=utf-8",
          std::to_string(snap->targets.size()) + " targets are watched: name one with ?pid=<pid>\n",
          headers);
      return 400;
    }
    return not_found(pid ? "pid " + std::to_string(*pid) + " is not watched" : "no target yet");
  }
  const TargetSample& s = target->sample;
  if (!s.sites && s.sites_loading) {
    // The agent is on its way into the JVM: the profile exists once it is
    // there and the sites collector has read it, which memtrimd does at once.
    Reply(conn, 503, "Service Unavailable", "text/plain; charset=utf-8",
          "no allocation sites for pid " + std::to_string(target->target.pid) +
              " yet: loading, retry (" + s.sites_missing + ")\n",
          headers + "Retry-After: 1\r\n");
    return 503;
  }
  if (!s.sites) {
    return not_found("no allocation sites for pid " + std::to_string(target->target.pid) + ": " +
                     (!s.sites_missing.empty() ? s.sites_missing
                                               : "the sites collector is off (--collector.sites) "
                                                 "or has not read them yet"));
  }
  std::optional<std::string> gz = report::SitesPprof(*s.sites);
  if (!gz) {
    Reply(conn, 503, "Service Unavailable", "text/plain; charset=utf-8",
          "could not compress the profile\n", headers);
    return 503;
  }
  Reply(conn, 200, "OK", "application/octet-stream", *gz,
        headers + "Content-Disposition: attachment; filename=\"heap-" +
            std::to_string(target->target.pid) + ".pb.gz\"\r\n");
  return 200;
}

int HttpServer::Handle(mg_connection* conn, void* self) {
  auto* server = static_cast<HttpServer*>(self);
  // A whole request: not to be interrupted. After it, the connection waits
  // for its next request (keep-alive) or closes.
  server->guard_->Serving();
  int code = server->Serve(conn);
  server->guard_->Waiting();
  return code;
}

int HttpServer::Serve(mg_connection* conn) {
  const mg_request_info* ri = mg_get_request_info(conn);
  std::string_view path = ri->local_uri ? ri->local_uri : "";
  std::string_view method = ri->request_method ? ri->request_method : "";
  std::shared_ptr<const WebState> web = options_.web ? options_.web->Current() : nullptr;
  std::string h = web ? web->extra_headers : std::string();
  // Without it, a client whose connection civetweb closes cannot tell that
  // from a broken one (wrk counts each as a read error), and an HTTP/1.0
  // client would not know that the connection stays open.
  const char* connection = mg_get_header(conn, "Connection");
  std::string_view version = ri->http_version ? ri->http_version : "";
  if (!KeepsConnection(connection ? std::optional<std::string_view>(connection) : std::nullopt,
                       version)) {
    h += "Connection: close\r\n";
  } else if (version != "1.1") {
    h += "Connection: keep-alive\r\n";  // HTTP/1.0 closes unless told otherwise
  }
  // /healthz stays open so that probes need no credentials; it says only
  // whether sampling runs.
  if (web && web->auth && path != "/healthz") {
    switch (web->auth->Check(mg_get_header(conn, "Authorization"))) {
      case AuthVerdict::kAllowed:
        break;
      case AuthVerdict::kDenied:
        Reply(conn, 401, "Unauthorized", "text/plain; charset=utf-8", "Unauthorized\n",
              h + "WWW-Authenticate: Basic realm=\"memtrimd\", charset=\"UTF-8\"\r\n");
        return 401;
      case AuthVerdict::kBusy:
        // Password checks take turns; a worker does not wait behind a
        // flood of them (see BasicAuth::Check).
        Reply(conn, 503, "Service Unavailable", "text/plain; charset=utf-8",
              "too many password checks at once; try again\n", h + "Retry-After: 1\r\n");
        return 503;
    }
  }
  if (path == "/api/v1/trim") return ServeTrimApi(conn, method, web.get(), h);
  if (method != "GET" && method != "HEAD") {
    Reply(conn, 405, "Method Not Allowed", "text/plain; charset=utf-8", "method not allowed\n",
          h + "Allow: GET, HEAD\r\n");
    return 405;
  }
  if (path == options_.telemetry_path) {
    const char* ae = mg_get_header(conn, "Accept-Encoding");
    if (ae != nullptr && AcceptsGzip(ae)) {
      if (auto gz = metrics_page_.RenderGzip()) {
        Reply(conn, 200, "OK", kTextContentType, *gz,
              h + "Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n");
        return 200;
      }
    }
    MetricsText page = metrics_page_.Render();
    ReplyParts(conn, 200, "OK", kTextContentType, page.Parts(), h + "Vary: Accept-Encoding\r\n");
    return 200;
  }
  if (path == "/healthz") {
    std::shared_ptr<const Snapshot> snap = store_.Latest();
    auto age = snap ? std::chrono::steady_clock::now() - snap->taken_steady
                    : std::chrono::steady_clock::duration::max();
    if (snap && age <= options_.max_sample_age) {
      Reply(conn, 200, "OK", "text/plain; charset=utf-8", "ok\n", h);
      return 200;
    }
    Reply(conn, 503, "Service Unavailable", "text/plain; charset=utf-8",
          "sampler is not producing samples\n", h);
    return 503;
  }
  if (path == "/report") {
    std::shared_ptr<const Snapshot> snap = store_.Latest();
    std::string_view query = ri->query_string ? ri->query_string : "";
    bool json = query.find("format=json") != std::string_view::npos;
    std::optional<std::vector<TrimStats>> stats;
    if (trims_ != nullptr) stats = trims_->Stats();
    const std::vector<TrimStats>* sp = stats ? &*stats : nullptr;
    std::string body = json ? RenderReportJson(snap.get(), sp, options_.history)
                            : RenderReportText(snap.get(), sp, options_.history);
    Reply(conn, 200, "OK", json ? "application/json" : "text/plain; charset=utf-8", body, h);
    return 200;
  }
  // The incident page's stylesheet and icon: same origin and past the
  // authentication above, so a Content-Security-Policy of default-src
  // 'self' lets the page load them. The page names them with the build
  // (IncidentPageAssetQuery), so a browser keeps them across its reloads
  // and asks again after an upgrade.
  if (path == "/debug/pprof/heap") return ServeHeapProfile(conn, h);
  if (path == kIncidentCssPath) {
    Reply(conn, 200, "OK", "text/css; charset=utf-8", IncidentPageCss(), h, kFixedForTheBuild);
    return 200;
  }
  if (path == kIncidentIconPath) {
    Reply(conn, 200, "OK", "image/svg+xml", IncidentPageIcon(), h, kFixedForTheBuild);
    return 200;
  }
  if (path == "/") {
    IncidentPageOptions page_options;
    page_options.metrics_path = options_.telemetry_path;
    page_options.refresh = options_.page_refresh;
    if (!PidQuery(conn, h, page_options.pid)) return 400;
    // The snapshot and trim state /metrics and /report read: one source.
    std::shared_ptr<const Snapshot> snap = store_.Latest();
    std::optional<std::vector<TrimStats>> stats;
    if (trims_ != nullptr) stats = trims_->Stats();
    IncidentPage page =
        RenderIncidentPage(snap.get(), stats ? &*stats : nullptr, options_.history, page_options);
    Reply(conn, page.code, page.code == 200 ? "OK" : "Not Found", "text/html; charset=utf-8",
          page.html, h);
    return page.code;
  }
  Reply(conn, 404, "Not Found", "text/plain; charset=utf-8", "not found\n", h);
  return 404;
}

}  // namespace memtrimd

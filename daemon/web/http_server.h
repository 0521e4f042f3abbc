// The HTTP endpoints, on civetweb: the metrics path, /, /healthz, /report,
// the trim API, and the incident page's stylesheet and icon; TLS, client
// certificates, basic auth and extra headers from the --web.config.file.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/status.h"
#include "daemon/exposition/metrics_page.h"
#include "daemon/report/history.h"
#include "daemon/sampling/snapshot.h"
#include "daemon/trim/trim_engine.h"
#include "daemon/web/trim_api_guard.h"
#include "daemon/web/web_config_file.h"

struct mg_context;
struct mg_connection;

namespace memtrimd {

class HeadGuard;

struct HttpOptions {
  std::vector<std::string> listen_addresses;  // "host:port" or ":port"
  std::string telemetry_path = "/metrics";
  int max_connections = 48;  // civetweb's worker threads (--web.max-connections)
  // /healthz fails when the newest sample is older than this: the sampler
  // is stuck and a restart is the fix.
  std::chrono::milliseconds max_sample_age{60000};
  bool enable_trim_api = false;  // POST /api/v1/trim
  // The --web.config.file, or null (plain HTTP, no authentication). Whether
  // TLS is on is fixed at Start(); everything else follows reloads.
  WebConfigFile* web = nullptr;
  MetricDetail metric_detail;                     // --metrics.detail
  const SampleHistory* history = nullptr;         // the incident page's charts (null: none)
  std::chrono::milliseconds page_refresh{10000};  // how often / reloads itself
};

class HttpServer {
 public:
  // `trims` may be null (then no trim metrics, report section or API).
  HttpServer(HttpOptions options, const SnapshotStore& store, TrimEngine* trims);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds every address. kUnavailable with civetweb's reason (e.g. the port
  // is in use) when one cannot be bound.
  Status Start();
  void Stop();

  // Renders /metrics for the latest snapshot ahead of the next request
  // (MetricsPage::Prepare). Thread-safe.
  void PrepareMetrics() const { metrics_page_.Prepare(); }

  // Ports actually bound, in order (useful with port 0).
  std::vector<int> BoundPorts() const;

 private:
  static int Handle(mg_connection* conn, void* self);
  static HttpServer* Of(const mg_context* ctx);
  static int ExternalSslContext(void** ssl_ctx, void* self);
  static void ConnectionClose(const mg_connection* conn);
  int Serve(mg_connection* conn);
  int ServeTrimApi(mg_connection* conn, std::string_view method, const WebState* web,
                   const std::string& headers);
  int ServeHeapProfile(mg_connection* conn, const std::string& headers);
  int BuildHeapProfile(mg_connection* conn, const std::string& headers);

  HttpOptions options_;
  const SnapshotStore& store_;
  TrimEngine* trims_;
  MetricsPage metrics_page_;
  // Lets go of connections that hold a worker without a request while
  // workers run short (head_guard.h).
  std::unique_ptr<HeadGuard> guard_;
  ManualTrimLimit trim_limit_;  // POST /api/v1/trim (trim_api_guard.h)
  // Profiles being built now: each takes about its target's profile again
  // (at most an eighth of the sites budget), so at most
  // kMaxProfileRequests at once; beyond, 503 with Retry-After.
  std::atomic<int> profiles_in_flight_{0};
  mg_context* ctx_ = nullptr;
};

// civetweb's "listening_ports" value for Prometheus-style addresses:
// ":8486" -> "8486", "127.0.0.1:8486" -> "127.0.0.1:8486",
// "[::1]:8486" -> "[::1]:8486". Several are joined with commas.
std::string CivetwebPorts(const std::vector<std::string>& addresses);

// Whether civetweb keeps the connection open after answering a request with
// this Connection header (nullopt: none) and HTTP version. Its rule (with
// keep-alive enabled): a Connection header keeps it only when it lists the
// "keep-alive" option (comma-separated, any case), and without one only
// HTTP/1.1 keeps it. When it will close, the response says
// "Connection: close" (RFC 9112 9.6), so that clients can tell that close
// from a broken connection. civetweb's own mg_response_header_send() adds
// that header, but it writes every header line separately; memtrimd sends
// its headers in one buffer (see ReplyParts), so it applies the rule itself.
bool KeepsConnection(std::optional<std::string_view> connection, std::string_view http_version);

// The answer to a request civetweb parsed but never hands to a handler:
// "OPTIONS *" (the server as a whole) and an absolute-form target
// ("http://host:port/path", RFC 9112 3.2.2) that civetweb does not take as
// this server's. Without one, civetweb closes the connection in silence.
// nullopt when civetweb routes the request, or answered it itself (a target
// it finds malformed, an HTTP version it does not speak).
struct UnroutedReply {
  int code;
  const char* reason;
  std::string headers;  // "Name: value\r\n" lines
  std::string body;
};
std::optional<UnroutedReply> ReplyToUnrouted(std::string_view method, std::string_view target,
                                             std::string_view http_version, bool trim_api);

}  // namespace memtrimd

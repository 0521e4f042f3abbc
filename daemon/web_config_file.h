// The --web.config.file as served: the parsed config, its TLS material and
// basic auth users, re-read when the file or a file it names changes
// (certificate rotation without a restart).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collectors/common/status.h"
#include "daemon/basic_auth.h"
#include "daemon/tls_server.h"
#include "daemon/web_config.h"

namespace memtrimd {

struct WebState {
  WebConfig config;
  std::shared_ptr<const TlsMaterial> tls;  // null without TLS
  std::shared_ptr<const BasicAuth> auth;   // null without basic_auth_users
  std::string extra_headers;               // "Name: value\r\n" for every response
};

// Reads `path` and everything it names. kInvalidArgument with one line
// ("<path>: <reason>") for what `promtool check web-config` rejects, for an
// unreadable file, and for a key that does not match its certificate.
Result<std::shared_ptr<const WebState>> LoadWebState(const std::string& path);

class WebConfigFile {
 public:
  // Loads the file; the start-up check.
  static Result<std::unique_ptr<WebConfigFile>> Open(const std::string& path);

  // The state to serve with. At most once per `recheck` it compares the
  // files' identity (device, inode, size, mtime: a Kubernetes secret update
  // swaps a symlink) and reloads on a change. A change that does not load,
  // or that would turn TLS on or off (the listening sockets cannot change),
  // keeps the previous state and is logged once. Thread-safe.
  std::shared_ptr<const WebState> Current();

  const std::string& path() const { return path_; }

  // For tests: how often Current() looks at the files.
  void set_recheck(std::chrono::milliseconds d) { recheck_ = d; }

 private:
  WebConfigFile(std::string path, std::shared_ptr<const WebState> state);
  std::vector<std::string> Watched() const;  // under mu_
  std::string Identity() const;              // under mu_

  const std::string path_;
  std::mutex mu_;
  std::shared_ptr<const WebState> state_;
  std::string identity_;           // of the files state_ came from
  std::string rejected_identity_;  // the last change that did not load (logged once)
  std::chrono::steady_clock::time_point checked_at_;
  std::chrono::milliseconds recheck_{1000};
};

}  // namespace memtrimd

// The --web.config.file as served (a WebState), re-read when the file or a
// file it names changes (certificate rotation without a restart).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collectors/common/status.h"
#include "daemon/web/web_module.h"
#include "daemon/web/web_state.h"

namespace memtrimd {

class WebConfigFile {
 public:
  // Loads the web module (web_module.h) and the file; the start-up check.
  static Result<std::unique_ptr<WebConfigFile>> Open(const std::string& path);

  // The state to serve with. At most once per `recheck` it compares the
  // files' identity (device, inode, size, mtime: a Kubernetes secret update
  // swaps a symlink) and reloads on a change. A change that does not load,
  // or that would turn TLS on or off (the listening sockets cannot change),
  // keeps the previous state and is logged once. Thread-safe.
  std::shared_ptr<const WebState> Current();

  const std::string& path() const { return path_; }
  const WebModule& module() const { return module_; }

  // For tests: how often Current() looks at the files.
  void set_recheck(std::chrono::milliseconds d) { recheck_ = d; }

 private:
  WebConfigFile(const WebModule& module, std::string path, std::shared_ptr<const WebState> state);
  std::vector<std::string> Watched() const;  // under mu_
  std::string Identity() const;              // under mu_

  const WebModule& module_;
  const std::string path_;
  std::mutex mu_;
  std::shared_ptr<const WebState> state_;
  std::string identity_;           // of the files state_ came from
  std::string rejected_identity_;  // the last change that did not load (logged once)
  std::chrono::steady_clock::time_point checked_at_;
  std::chrono::milliseconds recheck_{1000};
};

}  // namespace memtrimd

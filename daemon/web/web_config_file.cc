#include "daemon/web/web_config_file.h"

#include <sys/stat.h>

#include "daemon/base/log.h"

namespace memtrimd {

WebConfigFile::WebConfigFile(const WebModule& module, std::string path,
                             std::shared_ptr<const WebState> state)
    : module_(module), path_(std::move(path)), state_(std::move(state)) {
  identity_ = Identity();
  checked_at_ = std::chrono::steady_clock::now();
}

Result<std::unique_ptr<WebConfigFile>> WebConfigFile::Open(const std::string& path) {
  Result<const WebModule*> module = LoadWebModule();
  if (!module.ok()) return module.status();
  auto state = (*module)->load(path);
  if (!state.ok()) return state.status();
  return std::unique_ptr<WebConfigFile>(new WebConfigFile(**module, path, *state));
}

std::vector<std::string> WebConfigFile::Watched() const {
  std::vector<std::string> files = {path_};
  const TlsServerConfig& t = state_->config.tls;
  for (const std::string* f : {&t.cert_file, &t.key_file, &t.client_ca_file}) {
    if (!f->empty()) files.push_back(*f);
  }
  return files;
}

std::string WebConfigFile::Identity() const {
  std::string id;
  for (const std::string& f : Watched()) {
    struct stat st {};
    if (::stat(f.c_str(), &st) != 0) {
      id += f + ":missing;";
      continue;
    }
    id += f + ":" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
          std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
          std::to_string(st.st_mtim.tv_nsec) + ";";
  }
  return id;
}

std::shared_ptr<const WebState> WebConfigFile::Current() {
  std::lock_guard<std::mutex> lock(mu_);
  auto now = std::chrono::steady_clock::now();
  if (now - checked_at_ < recheck_) return state_;
  checked_at_ = now;
  std::string id = Identity();
  if (id == identity_ || id == rejected_identity_) return state_;
  auto next = module_.load(path_);
  std::string problem;
  if (!next.ok()) {
    problem = next.status().message();
  } else if ((*next)->config.tls.enabled() != state_->config.tls.enabled()) {
    problem = "TLS cannot be turned on or off while memtrimd runs; restart it";
  }
  if (!problem.empty()) {
    rejected_identity_ = id;
    log::Warn("web config not reloaded, the previous one stays in force",
              {{"file", path_}, {"err", problem}});
    return state_;
  }
  state_ = *next;
  // Identity of the files the new config names (they may differ).
  identity_ = Identity();
  rejected_identity_.clear();
  log::Info("web config reloaded", {{"file", path_}, {"tls", state_->tls ? "on" : "off"}});
  return state_;
}

}  // namespace memtrimd

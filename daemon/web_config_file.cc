#include "daemon/web_config_file.h"

#include <sys/stat.h>

#include "collectors/common/file_reader.h"
#include "daemon/log.h"

namespace memtrimd {
namespace {

constexpr std::size_t kMaxConfigBytes = 1u << 20;

std::string DirName(const std::string& path) {
  std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Result<std::shared_ptr<const WebState>> LoadWebState(const std::string& path) {
  Result<std::string> text = ReadSmallFile(path, kMaxConfigBytes);
  if (!text.ok()) return Status(ErrorCode::kInvalidArgument, path + ": " + text.status().message());
  Result<WebConfig> c = ParseWebConfig(*text, DirName(path));
  if (!c.ok()) return Status(ErrorCode::kInvalidArgument, path + ": " + c.status().message());
  auto state = std::make_shared<WebState>();
  state->config = std::move(c).value();
  if (state->config.tls.enabled()) {
    auto m = TlsMaterial::Load(state->config.tls);
    if (!m.ok()) return Status(ErrorCode::kInvalidArgument, path + ": " + m.status().message());
    state->tls = *m;
  }
  if (state->config.has_basic_auth()) {
    state->auth = std::make_shared<BasicAuth>(state->config.basic_auth_users);
  }
  for (const auto& [name, value] : state->config.headers) {
    state->extra_headers += name + ": " + value + "\r\n";
  }
  return std::shared_ptr<const WebState>(std::move(state));
}

WebConfigFile::WebConfigFile(std::string path, std::shared_ptr<const WebState> state)
    : path_(std::move(path)), state_(std::move(state)) {
  identity_ = Identity();
  checked_at_ = std::chrono::steady_clock::now();
}

Result<std::unique_ptr<WebConfigFile>> WebConfigFile::Open(const std::string& path) {
  auto state = LoadWebState(path);
  if (!state.ok()) return state.status();
  return std::unique_ptr<WebConfigFile>(new WebConfigFile(path, *state));
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
  auto next = LoadWebState(path_);
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

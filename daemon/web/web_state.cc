#include "daemon/web/web_state.h"

#include "collectors/common/file_reader.h"
#include "daemon/web/tls_server.h"

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

}  // namespace memtrimd

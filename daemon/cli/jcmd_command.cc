#include "daemon/cli/jcmd_command.h"

#include <cstdio>
#include <string_view>

#include "collectors/jvm/attach_client.h"
#include "collectors/procfs/target_reader.h"
#include "daemon/base/units.h"
#include "daemon/cli/cli_errors.h"

namespace memtrimd {

int RunJcmdCommand(const JcmdConfig& c) {
  Result<Target> target = procfs::ReadTarget("/proc", c.pid);
  if (!target.ok()) return UsageFail(PidProblem(c.pid, target.status()));
  jvm::AttachOptions o;
  o.command_timeout = c.timeout;
  Result<jvm::AttachResponse> r = jvm::ExecuteJcmd(*target, c.command, o);
  if (!r.ok()) {
    if (r.status().code() == ErrorCode::kInvalidArgument) return UsageFail(r.status().message());
    std::fprintf(stderr, "memtrimd: pid %d: %s\n", c.pid, r.status().message().c_str());
    return kExitFatal;
  }
  std::fwrite(r->output.data(), 1, r->output.size(), stdout);
  if (r->status != 0) {
    std::fprintf(stderr, "memtrimd: the JVM answered with status %d\n", r->status);
    return kExitFatal;
  }
  return kExitOk;
}

std::optional<JcmdConfig> ParseSimpleJcmdLine(std::span<const char* const> args) {
  std::optional<std::string_view> pid_text;
  std::optional<std::string_view> timeout_text;
  std::size_t i = 0;
  // Options come first; the first word that is not one starts the command,
  // and everything from there on is the command's own (as the full parser's
  // prefix_command does).
  for (; i < args.size(); ++i) {
    std::string_view a = args[i];
    std::optional<std::string_view>* slot = nullptr;
    std::string_view name;
    if (a.starts_with("--pid")) {
      slot = &pid_text;
      name = "--pid";
    } else if (a.starts_with("--timeout")) {
      slot = &timeout_text;
      name = "--timeout";
    } else if (a.starts_with("-") || a == "++") {
      // --help, a typo, "--", or "++" (which ends a subcommand for CLI11):
      // the full parser explains.
      return std::nullopt;
    } else {
      break;
    }
    if (slot->has_value()) return std::nullopt;
    if (a.size() == name.size()) {
      if (++i == args.size()) return std::nullopt;
      *slot = std::string_view(args[i]);
    } else if (a[name.size()] == '=') {
      *slot = a.substr(name.size() + 1);
    } else {
      return std::nullopt;  // "--pidfile" and the like
    }
  }
  if (!pid_text || i == args.size()) return std::nullopt;
  JcmdConfig c;
  std::optional<pid_t> pid = ParsePid(*pid_text);
  if (!pid) return std::nullopt;
  c.pid = *pid;
  if (timeout_text) {
    auto t = ParseDuration(*timeout_text);
    if (!t || t->count() == 0) return std::nullopt;
    c.timeout = *t;
  }
  // Joined as the full parser joins them; nothing but empty words is no
  // command, which the full parser explains.
  for (; i < args.size(); ++i) {
    if (!c.command.empty()) c.command += ' ';
    c.command += args[i];
  }
  if (c.command.empty()) return std::nullopt;
  return c;
}

}  // namespace memtrimd

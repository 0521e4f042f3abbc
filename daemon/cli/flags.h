// Command line: flags in the Prometheus exporters' style, each also read
// from an environment variable (MEMTRIMD_ + the flag name in upper case,
// dots and dashes as underscores).
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "daemon/cli/config.h"

namespace memtrimd {

// What the command line asks for.
struct RunDaemon {
  DaemonConfig config;
};
struct RunInspect {
  InspectConfig config;
};
struct RunJcmd {
  JcmdConfig config;
};
struct RunTrim {
  TrimCommandConfig config;
};
// --help / --version: print `text` to stdout and exit 0.
struct PrintAndExit {
  std::string text;
};
// Bad usage: print `message` (one line) to stderr and exit 2.
struct UsageError {
  std::string message;
};

using Command = std::variant<RunDaemon, RunInspect, RunJcmd, RunTrim, PrintAndExit, UsageError>;

Command ParseCommandLine(int argc, const char* const* argv);

// One row of the flag reference (docs/flags.md is checked against this).
struct FlagDoc {
  std::string command;  // "" for the daemon, else the subcommand
  std::string name;     // "--web.listen-address"
  std::string env;      // "MEMTRIMD_WEB_LISTEN_ADDRESS", or "" when none
  std::string default_value;
  std::string help;
};
std::vector<FlagDoc> FlagReference();

// "--web.listen-address" -> "MEMTRIMD_WEB_LISTEN_ADDRESS".
std::string EnvNameFor(const std::string& flag);

}  // namespace memtrimd

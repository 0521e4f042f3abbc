// Fuzz target: the launcher's own parser of `memtrimd jcmd ...`
// (ParseSimpleJcmdLine in daemon/jcmd_command), argv from the input split
// at NUL bytes and newlines.
//
// Invariant (differential): whatever the simple parser accepts, the full
// command-line parser (ParseCommandLine) accepts too, as the same pid,
// timeout and command: the launcher answers such a line itself, so both
// must agree on it (anything else it hands to the full parser).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "daemon/cli/flags.h"
#include "daemon/cli/jcmd_command.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memtrimd;
  std::vector<std::string> args = memtrimd::fuzz::SplitArgs(memtrimd::fuzz::AsText(data, size));
  std::vector<const char*> argv{"memtrimd", "jcmd"};
  for (const std::string& a : args) argv.push_back(a.c_str());

  std::optional<JcmdConfig> simple =
      ParseSimpleJcmdLine(std::span<const char* const>(argv).subspan(2));
  if (!simple) return 0;
  FUZZ_CHECK(simple->pid > 0 && simple->timeout.count() > 0);

  Command full = ParseCommandLine(static_cast<int>(argv.size()), argv.data());
  const RunJcmd* run = std::get_if<RunJcmd>(&full);
  if (run == nullptr) {
    const UsageError* e = std::get_if<UsageError>(&full);
    std::fprintf(stderr, "simple parser accepted (pid %d, command \"%s\"); full parser: %s\n",
                 simple->pid, simple->command.c_str(),
                 e != nullptr ? e->message.c_str() : "not a jcmd command");
  }
  FUZZ_CHECK(run != nullptr);
  FUZZ_CHECK(run->config.pid == simple->pid);
  FUZZ_CHECK(run->config.timeout == simple->timeout);
  FUZZ_CHECK(run->config.command == simple->command);
  return 0;
}

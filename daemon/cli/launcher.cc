// memtrimd's entry point: a small, statically linked program.
//
// `memtrimd jcmd` runs here. Started from a shell in the sidecar, it must be
// no slower than jattach, and loading the daemon's shared C++ libraries takes
// longer than the whole attach exchange (docs/benchmarks.md). Everything else
// (the daemon, inspect, trim, help, and any jcmd line the simple parser does
// not fully understand) is handed to memtrimd-daemon, installed beside this
// file, with execv: the same process and pid, so signals, exit codes and
// usage messages are the full program's own.

#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "daemon/cli/cli_errors.h"
#include "daemon/cli/jcmd_command.h"

namespace {

constexpr const char* kFullProgram = "memtrimd-daemon";

// The full program's path: beside this executable, found through
// /proc/self/exe so that a symlink or a relative PATH entry does not matter.
std::string FullProgramPath() {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return "";
  std::string_view path(self, static_cast<std::size_t>(n));
  std::size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return "";
  return std::string(path.substr(0, slash + 1)) + kFullProgram;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace memtrimd;
  if (argc >= 2 && std::string_view(argv[1]) == "jcmd") {
    std::span<const char* const> rest(argv + 2, static_cast<std::size_t>(argc - 2));
    if (std::optional<JcmdConfig> c = ParseSimpleJcmdLine(rest)) return RunJcmdCommand(*c);
  }
  std::string full = FullProgramPath();
  if (full.empty()) {
    std::fprintf(stderr, "memtrimd: cannot find its own executable (/proc/self/exe): %s\n",
                 std::strerror(errno));
    return kExitFatal;
  }
  execv(full.c_str(), argv);
  std::fprintf(stderr, "memtrimd: cannot run %s: %s (it is installed beside memtrimd)\n",
               full.c_str(), std::strerror(errno));
  return kExitFatal;
}

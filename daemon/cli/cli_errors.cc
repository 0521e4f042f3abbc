#include "daemon/cli/cli_errors.h"

#include <cstdio>

namespace memtrimd {

int UsageFail(const std::string& message) {
  std::fprintf(stderr, "memtrimd: %s\n", message.c_str());
  return kExitUsage;
}

std::string PidProblem(pid_t pid, const Status& st) {
  std::string p = std::to_string(pid);
  switch (st.code()) {
    case ErrorCode::kNotFound:
      return "no process with pid " + p + " (" + st.message() + ")";
    case ErrorCode::kPermissionDenied:
      return "cannot read /proc/" + p + " (" + st.message() +
             "): run memtrimd as the target's user, or with CAP_SYS_PTRACE";
    default:
      return "cannot read /proc/" + p + ": " + st.message();
  }
}

}  // namespace memtrimd

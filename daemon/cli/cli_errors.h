// Exit codes and one-line errors shared by every memtrimd command, including
// the small `memtrimd` launcher (so it links nothing but collectors/).
#pragma once

#include <sys/types.h>

#include <string>

#include "collectors/common/status.h"

namespace memtrimd {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFatal = 1;  // runtime failure
inline constexpr int kExitUsage = 2;  // bad usage or configuration

// Prints "memtrimd: <message>" on stderr; returns kExitUsage.
int UsageFail(const std::string& message);

// One line saying why a pid cannot be watched (and, for permissions, what to
// do about it).
std::string PidProblem(pid_t pid, const Status& st);

}  // namespace memtrimd

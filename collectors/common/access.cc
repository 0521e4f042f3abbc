#include "collectors/common/access.h"

#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace memtrimd {
namespace {

int CapabilityNumber(Capability c) {
  switch (c) {
    case Capability::kSysPtrace:
      return CAP_SYS_PTRACE;
    case Capability::kDacOverride:
      return CAP_DAC_OVERRIDE;
    case Capability::kKill:
      return CAP_KILL;
  }
  return CAP_SYS_PTRACE;
}

// Whether the mode bits alone let memtrimd's fsuid/fsgid (its euid/egid;
// memtrimd never changes them) read, or write, the file.
bool ModeAllows(const struct stat& st, bool write) {
  const mode_t want = write ? 02 : 04;
  if (st.st_uid == ::geteuid()) return (st.st_mode & (want << 6)) != 0;
  if (st.st_gid == ::getegid()) return (st.st_mode & (want << 3)) != 0;
  return (st.st_mode & want) != 0;
}

}  // namespace

const char* CapabilityName(Capability c) {
  switch (c) {
    case Capability::kSysPtrace:
      return "CAP_SYS_PTRACE";
    case Capability::kDacOverride:
      return "CAP_DAC_OVERRIDE";
    case Capability::kKill:
      return "CAP_KILL";
  }
  return "?";
}

bool HaveCapability(Capability c) {
  // The raw system call: libcap is not a dependency of the static launcher.
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  const int n = CapabilityNumber(c);
  return (data[n / 32].effective & (uint32_t{1} << (n % 32))) != 0;
}

std::string NeedsCapability(Capability c, std::string_view alternative) {
  return std::string("permission denied (needs ") + CapabilityName(c) + " or " +
         std::string(alternative) + ")";
}

Capability DeniedCapability(const std::string& path, bool write) {
  struct stat st;
  // A path memtrimd cannot even look at: /proc/<pid>/root and /cwd, and the
  // files of another user's process, are behind the ptrace access check.
  if (::lstat(path.c_str(), &st) != 0) return Capability::kSysPtrace;
  if (!ModeAllows(st, write) && !HaveCapability(Capability::kDacOverride)) {
    return Capability::kDacOverride;
  }
  return Capability::kSysPtrace;
}

Status ExplainDenied(const Status& st, const std::string& what, const std::string& path, bool write,
                     std::string_view alternative, Cause cause) {
  if (st.code() != ErrorCode::kPermissionDenied) return st;
  const Capability cap = DeniedCapability(path, write);
  // Refused although memtrimd holds it (a security module, a seccomp
  // filter): naming it would send the reader the wrong way.
  if (HaveCapability(cap)) return st;
  return Status(ErrorCode::kPermissionDenied, what + ": " + NeedsCapability(cap, alternative),
                cause);
}

}  // namespace memtrimd

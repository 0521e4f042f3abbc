// What the kernel asks of memtrimd to reach a process of another user, and
// errors that name the missing capability instead of a bare "Permission
// denied". A node agent runs as root with exactly CAP_SYS_PTRACE (the
// target's /proc files, /proc/<pid>/root, heap headers), CAP_DAC_OVERRIDE
// (owner-only files and sockets: environ, hsperfdata, the attach and agent
// sockets) and CAP_KILL (SIGQUIT to start a JVM's attach listener); a
// sidecar runs as the target's uid and needs none of them. When one is
// missing, the figure that needs it is absent and its reason says which.
#pragma once

#include <string>
#include <string_view>

#include "collectors/common/status.h"

namespace memtrimd {

enum class Capability { kSysPtrace, kDacOverride, kKill };

// "CAP_SYS_PTRACE", ...
const char* CapabilityName(Capability c);

// Whether memtrimd's effective set holds `c` right now (capget, for the
// calling thread; every thread of memtrimd has the same set).
bool HaveCapability(Capability c);

// "permission denied (needs CAP_DAC_OVERRIDE or the target's uid)";
// `alternative` replaces "the target's uid".
std::string NeedsCapability(Capability c, std::string_view alternative = "the target's uid");

// Which capability the kernel wanted when opening or connecting to `path`
// failed with EACCES/EPERM: the file's owner and mode shut memtrimd out
// (CAP_DAC_OVERRIDE), or the path cannot even be looked at, as for
// /proc/<pid>/... of another user's process (CAP_SYS_PTRACE). `write` when
// the access asked for write permission (connect to a socket).
Capability DeniedCapability(const std::string& path, bool write);

// `st` unchanged unless it is kPermissionDenied and memtrimd lacks the
// capability DeniedCapability names; then "<what>: " followed by
// NeedsCapability(that capability, `alternative`), with `cause` (the caller
// passes kNeedsCapabilityOrRoot when `alternative` is root).
Status ExplainDenied(const Status& st, const std::string& what, const std::string& path,
                     bool write = false, std::string_view alternative = "the target's uid",
                     Cause cause = Cause::kNeedsCapability);

}  // namespace memtrimd

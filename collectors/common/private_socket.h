// A client's side of a private UNIX socket served by the target process (the
// JVM's attach socket, the preload agent's socket): owner and mode checked
// before connecting, the listener's pid checked after, a deadline on every
// blocking step and a cap on the answer. One place for code whose mistakes
// would let another user's process answer in the target's name.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "collectors/common/status.h"
#include "collectors/common/target.h"
#include "collectors/common/unique_fd.h"

namespace memtrimd {

using SocketClock = std::chrono::steady_clock;

// Why a connection failed, for callers that react differently (the attach
// client signals the JVM when there is no socket or a stale one).
enum class SocketFailure { kNone, kMissing, kStale, kOther };

// Who may own the socket file. kTargetOrRoot (the preload agent's socket):
// also a file owned by uid 0, which only root can have made; the agent's
// file is root's when the program made it before dropping privileges.
// Either way the listener must then prove to be the target (SO_PEERCRED).
enum class SocketOwner { kTarget, kTargetOrRoot };

// Connects to `path`, which must be a socket owned by the target's uid and
// gid (or by root, with kTargetOrRoot) and closed to everyone else (lstat,
// before connecting), and served by the target's pid (SO_PEERCRED, after).
// `who` prefixes error messages ("attach", "agent"). Errors: kNotFound (no
// socket, Cause::kNoSocket), kUnavailable (stale socket, busy, deadline with
// Cause::kDeadline), kPermissionDenied (owner, mode, peer, or a connect the
// file's permissions refused: Cause::kNeedsCapability[OrRoot] when memtrimd
// lacks a capability).
Result<UniqueFd> ConnectPrivateSocket(const Target& target, const std::string& path,
                                      SocketClock::time_point deadline, std::string_view who,
                                      SocketFailure* failure = nullptr,
                                      SocketOwner owner = SocketOwner::kTarget);

// Sends all of `data` before the deadline.
Status SendAll(int fd, std::string_view data, SocketClock::time_point deadline,
               std::string_view who);

// Reads until the peer closes, before the deadline; kTooLarge past `cap`.
Result<std::string> ReceiveAll(int fd, std::size_t cap, SocketClock::time_point deadline,
                               std::string_view who);

// The value of `name` in a NUL-separated environ block (/proc/<pid>/environ);
// nullopt when unset.
std::optional<std::string_view> EnvValue(std::string_view environ, std::string_view name);

}  // namespace memtrimd

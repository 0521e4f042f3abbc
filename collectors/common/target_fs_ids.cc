#include "collectors/common/target_fs_ids.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>

#include "collectors/common/text.h"

namespace memtrimd {
namespace {

// The numbers after "<key>:" on its line; nullopt when the line is absent.
std::optional<std::vector<uint64_t>> Numbers(std::string_view text, std::string_view key) {
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t nl = std::min(text.find('\n', at), text.size());
    std::string_view line = text.substr(at, nl - at);
    at = nl + 1;
    if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':') {
      continue;
    }
    line.remove_prefix(key.size() + 1);
    std::vector<uint64_t> out;
    while (!line.empty()) {
      std::size_t start = line.find_first_not_of(" \t");
      if (start == std::string_view::npos) break;
      line.remove_prefix(start);
      std::size_t end = std::min(line.find_first_of(" \t"), line.size());
      std::optional<uint64_t> v = text::ParseUint(line.substr(0, end));
      if (!v || *v > UINT32_MAX) return std::vector<uint64_t>{};
      out.push_back(*v);
      line.remove_prefix(end);
    }
    return out;
  }
  return std::nullopt;
}

long SetFsUid(uid_t id) { return ::syscall(SYS_setfsuid, id); }
long SetFsGid(gid_t id) { return ::syscall(SYS_setfsgid, id); }
// setfsuid and setfsgid answer the previous id whether or not they changed
// it: asking with an invalid id (-1) reads the current one.
uid_t FsUidNow() { return static_cast<uid_t>(SetFsUid(static_cast<uid_t>(-1))); }
gid_t FsGidNow() { return static_cast<gid_t>(SetFsGid(static_cast<gid_t>(-1))); }

bool SetGroups(const std::vector<gid_t>& groups) {
  return ::syscall(SYS_setgroups, groups.size(), groups.data()) == 0;
}

std::vector<gid_t> GroupsNow() {
  int n = static_cast<int>(::syscall(SYS_getgroups, 0, nullptr));
  std::vector<gid_t> out(static_cast<std::size_t>(std::max(n, 0)));
  n = static_cast<int>(::syscall(SYS_getgroups, out.size(), out.data()));
  out.resize(static_cast<std::size_t>(std::max(n, 0)));
  return out;
}

}  // namespace

Result<FsIds> ParseFsIds(std::string_view status_text) {
  auto uid = Numbers(status_text, "Uid");
  auto gid = Numbers(status_text, "Gid");
  auto groups = Numbers(status_text, "Groups");
  if (!uid || !gid || !groups || uid->size() != 4 || gid->size() != 4) {
    return Status(ErrorCode::kParseError, "status has no Uid, Gid and Groups lines of ids");
  }
  FsIds out;
  out.fsuid = static_cast<uid_t>((*uid)[3]);
  out.fsgid = static_cast<gid_t>((*gid)[3]);
  for (uint64_t g : *groups) out.groups.push_back(static_cast<gid_t>(g));
  return out;
}

ScopedFsIds::ScopedFsIds(const FsIds& ids) {
  saved_.fsuid = FsUidNow();
  saved_.fsgid = FsGidNow();
  saved_.groups = GroupsNow();
  std::vector<gid_t> want = ids.groups, have = saved_.groups;
  std::sort(want.begin(), want.end());
  std::sort(have.begin(), have.end());
  if (want != have) {
    if (!SetGroups(ids.groups)) {
      status_ = Status::FromErrno(errno, "taking the target's groups (needs CAP_SETGID)");
      return;
    }
    groups_changed_ = true;
  }
  ids_changed_ = true;
  SetFsGid(ids.fsgid);
  SetFsUid(ids.fsuid);
  if (FsGidNow() != ids.fsgid || FsUidNow() != ids.fsuid) {
    status_ = Status(ErrorCode::kPermissionDenied,
                     "taking the target's uid " + std::to_string(ids.fsuid) + " and gid " +
                         std::to_string(ids.fsgid) + " needs CAP_SETUID and CAP_SETGID");
  }
}

ScopedFsIds::~ScopedFsIds() {
  if (ids_changed_) {
    // Back to uid 0 gives the filesystem capabilities back (the kernel took
    // them when the fsuid left 0).
    SetFsUid(saved_.fsuid);
    SetFsGid(saved_.fsgid);
  }
  // A thread left with a target's ids would act as it from then on.
  if ((ids_changed_ && (FsUidNow() != saved_.fsuid || FsGidNow() != saved_.fsgid)) ||
      (groups_changed_ && !SetGroups(saved_.groups))) {
    std::abort();
  }
}

}  // namespace memtrimd

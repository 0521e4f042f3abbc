// Opening files with a target's own permissions: its filesystem uid, gid
// and supplementary groups taken by the calling thread alone, for a scope.
// A file nothing ties to a mapping (a debug file found by build id) is
// only read when the target itself could open it.
#pragma once

#include <sys/types.h>

#include <string_view>
#include <vector>

#include "collectors/common/status.h"

namespace memtrimd {

struct FsIds {
  uid_t fsuid = 0;
  gid_t fsgid = 0;
  std::vector<gid_t> groups;
};

// Pure: the fourth field of Uid: and Gid: (the filesystem ids) and the
// Groups: line of /proc/<pid>/status text. kParseError when a line is
// missing or not numbers.
Result<FsIds> ParseFsIds(std::string_view status_text);

// Takes `ids` on this thread only (raw setgroups, setfsgid and setfsuid:
// glibc's setgroups would change every thread of memtrimd) and gives the
// thread's own back when it ends. Taking another's ids needs CAP_SETUID and
// CAP_SETGID (the node agent has neither): status() then says so, and
// nothing is changed.
class ScopedFsIds {
 public:
  explicit ScopedFsIds(const FsIds& ids);
  ~ScopedFsIds();
  ScopedFsIds(const ScopedFsIds&) = delete;
  ScopedFsIds& operator=(const ScopedFsIds&) = delete;
  const Status& status() const { return status_; }

 private:
  Status status_;
  FsIds saved_;
  bool groups_changed_ = false;
  bool ids_changed_ = false;
};

}  // namespace memtrimd

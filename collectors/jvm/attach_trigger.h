// The file that tells a HotSpot JVM a SIGQUIT is an attach request:
// .attach_pid<nspid> in its working directory, else in its /tmp. Without it
// a SIGQUIT prints a thread dump, and one left behind makes a later JVM with
// the same pid take an operator's `kill -3` for an attach request.
//
// The directory is opened once (through /proc/<pid>/cwd or /proc/<pid>/root/tmp)
// and the file created and removed relative to that descriptor, so removal
// still works when the JVM died in between and its /proc entry is gone. A
// process exit (exit(), a return from main) while a trigger exists removes
// it too; _exit() and a kill cannot be helped.
#pragma once

#include <cstdint>
#include <string>

#include "collectors/common/status.h"
#include "collectors/common/target.h"
#include "collectors/common/unique_fd.h"

namespace memtrimd::jvm {

// The target's /tmp as the JVM resolves it (an O_PATH directory descriptor):
// inside its own root, so that an absolute symlink (a chroot's tmp -> /root)
// cannot lead into memtrimd's. -1 with errno on failure.
UniqueFd OpenTargetTmp(const Target& t);

class AttachTrigger {
 public:
  // Follows HotSpot's rules (AttachListener::is_init_trigger): the working
  // directory first, then /tmp resolved inside the target's root; the first
  // place holding a file decides. A regular file already there (another
  // client attaching) is used but not owned, and only when HotSpot would
  // honour it (owned by the JVM's uid, or root in the JVM's user namespace);
  // any other file there is an error: a SIGQUIT would print a thread dump.
  // Creates the file (O_CREAT|O_EXCL|O_NOFOLLOW, 0600) only in a directory
  // the target's uid may write, given to the JVM's uid when memtrimd's would
  // not be honoured. Errors: that refusal, else the last directory's failure.
  static Result<AttachTrigger> Create(const Target& target);

  AttachTrigger(AttachTrigger&& o) noexcept
      : dir_(std::move(o.dir_)),
        name_(std::move(o.name_)),
        path_(std::move(o.path_)),
        owned_(o.owned_),
        live_id_(o.live_id_) {
    o.owned_ = false;
    o.live_id_ = 0;
  }
  AttachTrigger& operator=(AttachTrigger&& o) noexcept;
  AttachTrigger(const AttachTrigger&) = delete;
  AttachTrigger& operator=(const AttachTrigger&) = delete;
  // Removes the file when this object created it.
  ~AttachTrigger();

  // For messages: where the file is, as seen from memtrimd.
  const std::string& path() const { return path_; }
  bool owned() const { return owned_; }

 private:
  AttachTrigger(UniqueFd dir, std::string name, std::string path, bool owned)
      : dir_(std::move(dir)), name_(std::move(name)), path_(std::move(path)), owned_(owned) {}
  void Remove();

  UniqueFd dir_;
  std::string name_;
  std::string path_;
  bool owned_ = false;
  uint64_t live_id_ = 0;  // in the list of triggers removed at process exit
};

}  // namespace memtrimd::jvm

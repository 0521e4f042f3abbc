#include "collectors/jvm/attach_trigger.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace memtrimd::jvm {

Result<AttachTrigger> AttachTrigger::Create(const Target& t) {
  std::string name = ".attach_pid";
  name += std::to_string(t.nspid);
  Status last;
  for (const std::string& dir_path : {t.proc_dir + "/cwd", t.proc_dir + "/root/tmp"}) {
    const std::string path = dir_path + "/" + name;
    UniqueFd dir(::open(dir_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (dir.get() < 0) {
      last = Status::FromErrno(errno, "attach: open " + dir_path);
      continue;
    }
    // O_NOFOLLOW|O_EXCL: a pre-planted symlink is never followed.
    int fd = ::openat(dir.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                      0600);
    if (fd >= 0) {
      ::close(fd);
      return AttachTrigger(std::move(dir), name, path, true);
    }
    int err = errno;
    if (err == EEXIST) {
      struct stat st;
      if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISREG(st.st_mode)) {
        return AttachTrigger(std::move(dir), name, path, false);
      }
    }
    last = Status::FromErrno(err, "attach: create " + path);
  }
  return last;
}

AttachTrigger& AttachTrigger::operator=(AttachTrigger&& o) noexcept {
  if (this != &o) {
    Remove();
    dir_ = std::move(o.dir_);
    name_ = std::move(o.name_);
    path_ = std::move(o.path_);
    owned_ = o.owned_;
    o.owned_ = false;
  }
  return *this;
}

AttachTrigger::~AttachTrigger() { Remove(); }

void AttachTrigger::Remove() {
  if (owned_ && dir_.get() >= 0) ::unlinkat(dir_.get(), name_.c_str(), 0);
  owned_ = false;
}

}  // namespace memtrimd::jvm

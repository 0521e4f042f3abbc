#include "collectors/jvm/attach_trigger.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>

namespace memtrimd::jvm {
namespace {

// Triggers that exist right now, so that a process exit while an attach
// waits for its socket (the daemon does not wait for a stuck collector at
// shutdown) still removes them.
struct LiveTriggers {
  std::mutex mu;
  uint64_t next_id = 1;
  std::map<uint64_t, std::pair<int, std::string>> entries;  // id -> (dir fd, name)
};

LiveTriggers& Live() {
  static LiveTriggers* live = new LiveTriggers;  // never destroyed: used until exit
  return *live;
}

void RemoveLiveTriggersAtExit() {
  LiveTriggers& live = Live();
  // A thread that holds the lock at exit would block us forever: skip then.
  if (!live.mu.try_lock()) return;
  for (const auto& [id, entry] : live.entries) ::unlinkat(entry.first, entry.second.c_str(), 0);
  live.entries.clear();
  live.mu.unlock();
}

uint64_t Register(int dir_fd, const std::string& name) {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(RemoveLiveTriggersAtExit); });
  LiveTriggers& live = Live();
  std::lock_guard<std::mutex> lock(live.mu);
  uint64_t id = live.next_id++;
  live.entries.emplace(id, std::make_pair(dir_fd, name));
  return id;
}

void Unregister(uint64_t id) {
  LiveTriggers& live = Live();
  std::lock_guard<std::mutex> lock(live.mu);
  live.entries.erase(id);
}

}  // namespace

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
      AttachTrigger trigger(std::move(dir), name, path, true);
      trigger.live_id_ = Register(trigger.dir_.get(), name);
      return trigger;
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
    live_id_ = o.live_id_;
    o.owned_ = false;
    o.live_id_ = 0;
  }
  return *this;
}

AttachTrigger::~AttachTrigger() { Remove(); }

void AttachTrigger::Remove() {
  // Unregistered first: the exit handler must never use a closed descriptor.
  if (live_id_ != 0) Unregister(live_id_);
  live_id_ = 0;
  if (owned_ && dir_.get() >= 0) ::unlinkat(dir_.get(), name_.c_str(), 0);
  owned_ = false;
}

}  // namespace memtrimd::jvm

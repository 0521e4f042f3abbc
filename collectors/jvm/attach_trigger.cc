#include "collectors/jvm/attach_trigger.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

namespace {

// Whether the target is in memtrimd's user namespace: only there is uid 0 as
// memtrimd sees it the JVM's root too.
bool SameUserNamespace(const Target& t) {
  struct stat mine;
  struct stat theirs;
  if (::stat("/proc/self/ns/user", &mine) != 0) return false;
  if (::stat((t.proc_dir + "/ns/user").c_str(), &theirs) != 0) return false;
  return mine.st_ino == theirs.st_ino && mine.st_dev == theirs.st_dev;
}

// HotSpot's rule (AttachListener::is_init_trigger): a trigger counts only
// when its owner is the JVM's effective uid or root. A SIGQUIT with a file
// the JVM ignores prints a thread dump.
bool HotspotHonoursOwner(uid_t owner, const Target& t, bool same_userns) {
  return owner == t.uid || (owner == 0 && same_userns);
}

// The kernel's write check for the target's uid and gid (supplementary
// groups not counted: a directory writable only through one is passed by).
bool TargetMayWrite(const struct stat& dir, const Target& t, bool same_userns) {
  if (t.uid == 0 && same_userns) return true;
  if (dir.st_uid == t.uid) return (dir.st_mode & S_IWUSR) != 0;
  if (dir.st_gid == t.gid) return (dir.st_mode & S_IWGRP) != 0;
  return (dir.st_mode & S_IWOTH) != 0;
}

Status Refuse(const std::string& why) {
  return Status(ErrorCode::kUnavailable, "attach: not signalling: " + why);
}

}  // namespace

Result<AttachTrigger> AttachTrigger::Create(const Target& t) {
  std::string name = ".attach_pid";
  name += std::to_string(t.nspid);
  const bool same_userns = SameUserNamespace(t);
  Status last;
  // In HotSpot's order: its working directory first, then its /tmp. The
  // first place holding any file decides for the JVM, so it decides here.
  const std::string places[] = {t.proc_dir + "/cwd", t.proc_dir + "/root/tmp"};
  for (const std::string& dir_path : places) {
    const std::string path = dir_path + "/" + name;
    // The working directory is the process's own (the magic link leads to
    // it wherever it is); /tmp is resolved inside the target's root.
    UniqueFd dir = &dir_path == &places[0]
                       ? UniqueFd(::open(dir_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC))
                       : OpenTargetTmp(t);
    if (dir.get() < 0) {
      last = Status::FromErrno(errno, "attach: open " + dir_path);
      continue;
    }
    struct stat there;
    if (::fstatat(dir.get(), name.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0) {
      // A file already there is used only where the JVM would honour it:
      // HotSpot stats it (following links) and stops at the first it finds.
      if (!S_ISREG(there.st_mode)) {
        return Refuse(path +
                      " exists and is not a regular file (File exists); the JVM would "
                      "follow it where memtrimd cannot tell what it finds");
      }
      if (!HotspotHonoursOwner(there.st_uid, t, same_userns)) {
        return Refuse(path + " exists, owned by uid " + std::to_string(there.st_uid) +
                      ", neither the JVM's uid " + std::to_string(t.uid) +
                      " nor root: the JVM would ignore it and print a thread dump");
      }
      return AttachTrigger(std::move(dir), name, path, false);
    }
    if (errno != ENOENT) return Status::FromErrno(errno, "attach: stat " + path);
    struct stat dir_st;
    if (::fstat(dir.get(), &dir_st) != 0)
      return Status::FromErrno(errno, "attach: stat " + dir_path);
    if (!S_ISDIR(dir_st.st_mode) || !TargetMayWrite(dir_st, t, same_userns)) {
      // Not a place the JVM's user could have made the file: memtrimd's
      // privileges must not make one there for it.
      last = Status(
          ErrorCode::kPermissionDenied,
          "attach: " + dir_path + " is not writable by the JVM's uid " + std::to_string(t.uid));
      continue;
    }
    // O_NOFOLLOW|O_EXCL: a pre-planted symlink is never followed.
    UniqueFd fd(::openat(dir.get(), name.c_str(),
                         O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600));
    if (fd.get() < 0) {
      last = Status::FromErrno(errno, "attach: create " + path);
      if (errno == EEXIST) return last;  // planted between the two calls
      continue;
    }
    AttachTrigger trigger(std::move(dir), name, path, true);
    trigger.live_id_ = Register(trigger.dir_.get(), name);
    // Made by memtrimd's uid: the JVM's own when memtrimd is neither its
    // uid nor its root (a JVM in another user namespace).
    struct stat made;
    if (::fstat(fd.get(), &made) != 0) return Status::FromErrno(errno, "attach: stat " + path);
    if (!HotspotHonoursOwner(made.st_uid, t, same_userns) &&
        ::fchown(fd.get(), t.uid, static_cast<gid_t>(-1)) != 0) {
      return Refuse("cannot give " + path + " to the JVM's uid " + std::to_string(t.uid) +
                    " (the JVM would ignore a file of uid " + std::to_string(made.st_uid) + ")");
    }
    return trigger;
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

UniqueFd OpenTargetTmp(const Target& t) {
  UniqueFd root(::open((t.proc_dir + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root.get() < 0) return root;
  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  long fd = ::syscall(SYS_openat2, root.get(), "tmp", &how, sizeof(how));
  if (fd >= 0 || errno != ENOSYS) return UniqueFd(static_cast<int>(fd));
  // Before Linux 5.6: a symlinked tmp is not followed at all.
  return UniqueFd(::openat(root.get(), "tmp", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

}  // namespace memtrimd::jvm

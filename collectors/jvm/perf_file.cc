#include "collectors/jvm/perf_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "collectors/common/file_reader.h"
#include "collectors/common/unique_fd.h"

namespace memtrimd::jvm {
namespace {

constexpr std::size_t kPrologueBytes = 32;
// statfs f_type of FUSE: a file whose reads its owner answers (or never).
constexpr long kFuseMagic = 0x65735546;

// One read at a time in the whole process: the buffer of a read is the only
// large allocation, so N targets cost one buffer, not N, whichever threads
// sample them.
std::timed_mutex& ReadLock() {
  static std::timed_mutex lock;
  return lock;
}

// kUnavailable, not kPermissionDenied: no capability would change it.
Status Refused(const std::string& path, const std::string& why) {
  return Status(ErrorCode::kUnavailable, "hsperfdata: " + path + " " + why);
}

// Splits "/a/b/c" into its components; "." and ".." are refused (a
// JVM's own mapping never has them, and ".." would climb out of the
// directory whose owner was checked).
bool SplitPath(std::string_view path, std::vector<std::string>& out) {
  while (!path.empty()) {
    std::size_t slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    if (part == "." || part == "..") return false;
    if (!part.empty()) out.emplace_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return !out.empty();
}

// The target's root as a directory descriptor (through the magic link,
// which is the point: the target's own view).
UniqueFd OpenRoot(const Target& t) {
  return UniqueFd(::open((t.proc_dir + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
}

// Walks the directories of `parts` (all but the last) from `root` without
// following a symlink.
UniqueFd WalkDirs(int root, const std::vector<std::string>& parts) {
  UniqueFd dir(::fcntl(root, F_DUPFD_CLOEXEC, 0));
  for (std::size_t i = 0; i + 1 < parts.size() && dir.get() >= 0; ++i) {
    dir = UniqueFd(
        ::openat(dir.get(), parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  }
  return dir;
}

Result<std::string> ReadUsed(int fd, const std::string& path, std::size_t file_size) {
  char prologue[kPrologueBytes];
  ssize_t got = ::pread(fd, prologue, sizeof prologue, 0);
  if (got < 0) return Status::FromErrno(errno, "hsperfdata: read " + path);
  if (static_cast<std::size_t>(got) < sizeof prologue) {
    return Status(ErrorCode::kParseError, "hsperfdata: " + path + " is shorter than its prologue");
  }
  // `used` (little-endian at 8) bounds the entries: the rest of the file
  // is never read. A value past the file is the parser's to refuse.
  uint32_t used = 0;
  for (int i = 0; i < 4; ++i)
    used |= static_cast<uint32_t>(static_cast<uint8_t>(prologue[8 + i])) << (8 * i);
  const std::size_t want =
      std::min<std::size_t>(std::max<std::size_t>(used, kPrologueBytes), file_size);
  std::string bytes(want, '\0');
  std::size_t done = 0;
  while (done < want) {
    ssize_t n = ::pread(fd, bytes.data() + done, want - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno(errno, "hsperfdata: read " + path);
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

}  // namespace

Result<PerfData> ReadTargetPerfFile(const Target& t, std::string_view path,
                                    const PerfFileIdentity* expect) {
  const std::string shown = t.proc_dir + "/root" + std::string(path);
  std::vector<std::string> parts;
  if (!SplitPath(path, parts) || parts.size() < 2) {
    return Refused(shown, "is not a path of a file in a directory");
  }
  UniqueFd root = OpenRoot(t);
  if (root.get() < 0) return Status::FromErrno(errno, "hsperfdata: open " + t.proc_dir + "/root");
  UniqueFd dir = WalkDirs(root.get(), parts);
  if (dir.get() < 0) return Status::FromErrno(errno, "hsperfdata: open the directory of " + shown);
  struct stat st;
  if (::fstat(dir.get(), &st) != 0) return Status::FromErrno(errno, "hsperfdata: stat " + shown);
  if (st.st_uid != t.uid) {
    return Refused(shown, "is in a directory of uid " + std::to_string(st.st_uid) +
                              ", not the JVM's uid " + std::to_string(t.uid));
  }
  UniqueFd fd(::openat(dir.get(), parts.back().c_str(),
                       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (fd.get() < 0) return Status::FromErrno(errno, "hsperfdata: open " + shown);
  if (::fstat(fd.get(), &st) != 0) return Status::FromErrno(errno, "hsperfdata: stat " + shown);
  if (!S_ISREG(st.st_mode)) return Refused(shown, "is not a regular file");
  if (st.st_uid != t.uid) {
    return Refused(shown, "belongs to uid " + std::to_string(st.st_uid) + ", not the JVM's uid " +
                              std::to_string(t.uid));
  }
  if (expect != nullptr && (st.st_ino != expect->inode || major(st.st_dev) != expect->dev_major ||
                            minor(st.st_dev) != expect->dev_minor)) {
    return Status(ErrorCode::kNotFound, "hsperfdata: " + shown + " is not the file the JVM maps");
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxPerfFileBytes) {
    return Status(ErrorCode::kTooLarge, "hsperfdata: " + shown + " is larger than " +
                                            std::to_string(kMaxPerfFileBytes) +
                                            " bytes, the most a JVM makes");
  }
  struct statfs fs;
  if (::fstatfs(fd.get(), &fs) != 0) return Status::FromErrno(errno, "hsperfdata: statfs " + shown);
  if (static_cast<long>(fs.f_type) == kFuseMagic) return Refused(shown, "is on FUSE");

  std::unique_lock<std::timed_mutex> turn(ReadLock(), std::defer_lock);
  if (!turn.try_lock_for(std::chrono::seconds(1))) {
    return Status(ErrorCode::kBusy, "hsperfdata: another read took over a second");
  }
  Result<std::string> bytes = ReadUsed(fd.get(), shown, static_cast<std::size_t>(st.st_size));
  if (!bytes.ok()) return bytes.status();
  return ParsePerfData(*bytes);
}

Result<std::string> FindPerfFileDir(const Target& t) {
  UniqueFd root = OpenRoot(t);
  if (root.get() < 0) return Status::FromErrno(errno, "hsperfdata: open " + t.proc_dir + "/root");
  UniqueFd tmp_fd(
      ::openat(root.get(), "tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (tmp_fd.get() < 0) {
    return Status::FromErrno(errno, "hsperfdata: open " + t.proc_dir + "/root/tmp");
  }
  std::unique_ptr<DIR, int (*)(DIR*)> tmp(::fdopendir(tmp_fd.get()), ::closedir);
  if (!tmp) return Status::FromErrno(errno, "hsperfdata: read " + t.proc_dir + "/root/tmp");
  tmp_fd.release();  // closedir closes it now
  const std::string file = std::to_string(t.nspid);
  while (struct dirent* e = ::readdir(tmp.get())) {
    if (std::string_view(e->d_name).rfind("hsperfdata_", 0) != 0) continue;
    struct stat dir_st, file_st;
    if (::fstatat(::dirfd(tmp.get()), e->d_name, &dir_st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISDIR(dir_st.st_mode) || dir_st.st_uid != t.uid) {
      continue;
    }
    UniqueFd dir(
        ::openat(::dirfd(tmp.get()), e->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dir.get() < 0) continue;
    if (::fstatat(dir.get(), file.c_str(), &file_st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(file_st.st_mode) && file_st.st_uid == t.uid) {
      return std::string(e->d_name);
    }
  }
  return Status(ErrorCode::kNotFound, "hsperfdata: no hsperfdata_<user>/" + file + " of uid " +
                                          std::to_string(t.uid) + " in " + t.proc_dir +
                                          "/root/tmp");
}

}  // namespace memtrimd::jvm

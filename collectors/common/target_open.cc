#include "collectors/common/target_open.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace memtrimd {

UniqueFd OpenAsTarget(const Target& t, const std::string& path, bool path_only) {
  const int kFlags = path_only ? O_PATH | O_CLOEXEC : O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
  const bool absolute = !path.empty() && path[0] == '/';
  // An absolute name from the target's root; a relative one from its working
  // directory, beneath it: openat2 has no "from here, inside that root", so
  // a relative name that leaves the working directory (.., an absolute
  // symlink) fails with EXDEV, and the options are then unknown.
  UniqueFd base(::open((t.proc_dir + (absolute ? "/root" : "/cwd")).c_str(),
                       O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (base.get() < 0) return base;
  open_how how{};
  how.flags = kFlags;
  how.resolve = (absolute ? RESOLVE_IN_ROOT : RESOLVE_BENEATH) | RESOLVE_NO_MAGICLINKS;
  long fd = ::syscall(SYS_openat2, base.get(), path.c_str(), &how, sizeof(how));
  if (fd >= 0 || errno != ENOSYS) return UniqueFd(static_cast<int>(fd));
  // Before Linux 5.6: through the magic link, no symlink at the end (one in
  // the middle would resolve in memtrimd's root; the file must still be a
  // regular one, and the answer is "unknown" when it cannot be read).
  const std::string rel = absolute ? path.substr(1) : path;
  return UniqueFd(::openat(base.get(), rel.c_str(), kFlags | O_NOFOLLOW));
}

}  // namespace memtrimd

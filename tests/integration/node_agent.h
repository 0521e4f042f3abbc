// What the node-agent tests share: memtrimd as root limited to the node
// agent's three capabilities, targets started as other users, a JVM in its
// own pid and mount namespace, and a directory all of them can use.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace memtrimd::testing {

// A user with a passwd entry (HotSpot writes hsperfdata only for a user it
// can name: hsperfdata_<name>) and one with none, as is common in containers.
inline constexpr uid_t kNobodyUid = 65534;
inline constexpr uid_t kNamelessUid = 4242;

// {"setpriv", "--reuid=N", "--regid=N", "--clear-groups"}: a command that
// runs the rest as `uid` (gid the same number, no supplementary groups).
std::vector<std::string> AsUser(uid_t uid);

// CAP_SYS_PTRACE | CAP_DAC_OVERRIDE | CAP_KILL, as a capability mask.
uint64_t NodeAgentCapMask();

// A command prefix that runs the rest as root with only the node agent's
// capabilities, less `drop` ("sys_ptrace", "dac_override", "kill" or "").
// For root the kernel makes the permitted and effective sets after exec the
// bounding set (no file capabilities, nothing inheritable).
std::vector<std::string> NodeAgentCaps(const std::string& drop = "");

// The CapEff mask of /proc/<pid>/status text; nullopt when absent.
std::optional<uint64_t> CapEffOf(const std::string& status_text);

// The only child of `pid` (unshare --fork's), or -1.
pid_t OnlyChild(pid_t pid);

// A directory under /dev/shm every uid may write (sticky), outside /tmp,
// which a JVM with its own mount namespace does not share: the Java
// workloads' classes (readable by all) and everybody's ready files. Removed
// by the destructor.
class SharedDir {
 public:
  SharedDir();
  ~SharedDir();
  SharedDir(const SharedDir&) = delete;
  SharedDir& operator=(const SharedDir&) = delete;
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  std::string classes() const { return path_ + "/classes"; }

 private:
  std::string path_;
};

// A JVM started by unshare in its own pid and mount namespace with a tmpfs
// on /tmp, running `java_argv` as `uid`: pid 1 there, its attach socket and
// trigger file reachable only through /proc/<pid>/root/tmp.
class NamespacedJvm {
 public:
  NamespacedJvm(uid_t uid, const std::vector<std::string>& java_argv,
                const std::string& stdout_path);
  ~NamespacedJvm();
  NamespacedJvm(const NamespacedJvm&) = delete;
  NamespacedJvm& operator=(const NamespacedJvm&) = delete;
  // The JVM's pid as memtrimd sees it; -1 when unshare did not start it.
  pid_t pid() const { return jvm_; }
  Process& unshare() { return unshare_; }

 private:
  Process unshare_;
  pid_t jvm_ = -1;
  std::string start_;
};

}  // namespace memtrimd::testing

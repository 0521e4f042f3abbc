#include "tests/integration/node_agent.h"

#include <linux/capability.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

namespace memtrimd::testing {

namespace fs = std::filesystem;

std::vector<std::string> AsUser(uid_t uid) {
  const std::string id = std::to_string(uid);
  return {"setpriv", "--reuid=" + id, "--regid=" + id, "--clear-groups"};
}

uint64_t NodeAgentCapMask() {
  return (uint64_t{1} << CAP_SYS_PTRACE) | (uint64_t{1} << CAP_DAC_OVERRIDE) |
         (uint64_t{1} << CAP_KILL);
}

std::vector<std::string> NodeAgentCaps(const std::string& drop) {
  std::string set = "-all";
  for (const char* cap : {"sys_ptrace", "dac_override", "kill"}) {
    if (drop != cap) set += std::string(",+") + cap;
  }
  return {"setpriv", "--bounding-set=" + set, "--inh-caps=-all"};
}

std::optional<uint64_t> CapEffOf(const std::string& status_text) {
  std::istringstream in(status_text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) != 0) continue;
    return std::stoull(line.substr(7), nullptr, 16);
  }
  return std::nullopt;
}

pid_t OnlyChild(pid_t pid) {
  std::istringstream in(
      ReadFile("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children"));
  pid_t child = -1;
  return in >> child ? child : -1;
}

SharedDir::SharedDir() : path_("/dev/shm/memtrimd-test-shared-" + std::to_string(::getpid())) {
  fs::remove_all(path_);
  fs::create_directories(path_);
  fs::permissions(path_, fs::perms::all | fs::perms::sticky_bit);
  fs::copy(JAVA_WORKLOADS_CLASSPATH, classes(), fs::copy_options::recursive);
  const auto readable = fs::perms::others_read | fs::perms::others_exec;
  fs::permissions(classes(), readable, fs::perm_options::add);
  for (const auto& e : fs::recursive_directory_iterator(classes())) {
    fs::permissions(e.path(), readable, fs::perm_options::add);
  }
}

SharedDir::~SharedDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

NamespacedJvm::NamespacedJvm(uid_t uid, const std::vector<std::string>& java_argv,
                             const std::string& stdout_path) {
  std::string script = "mount -t tmpfs none /tmp && exec";
  for (const std::string& a : AsUser(uid)) script += " " + a;
  for (const std::string& a : java_argv) script += " " + a;
  SpawnOptions o;
  o.stdout_path = stdout_path;
  // --kill-child: the JVM dies with unshare, at least until its uid change
  // clears that; the destructor kills it by pid too.
  unshare_ =
      Process({"unshare", "--pid", "--mount", "--fork", "--kill-child", "sh", "-c", script}, o);
  WaitFor([&] { return (jvm_ = OnlyChild(unshare_.pid())) > 0 || !unshare_.running(); }, 30s);
  start_ = jvm_ > 0 ? StartTicks(jvm_) : "";
}

NamespacedJvm::~NamespacedJvm() {
  if (jvm_ > 0 && !start_.empty() && StartTicks(jvm_) == start_) ::kill(jvm_, SIGKILL);
  unshare_.Kill();
}

}  // namespace memtrimd::testing

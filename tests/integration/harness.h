// Test harness for integration tests: real processes, real HTTP through
// curl, polling with deadlines. Every process started here is killed by pid
// when its handle goes out of scope, and dies with the test process
// (PR_SET_PDEATHSIG) if the test itself is killed.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace memtrimd::testing {

using namespace std::chrono_literals;

struct SpawnOptions {
  // Opened read-only: a FIFO (see StdinPipe) to talk to the child.
  std::string stdin_path = "/dev/null";
  std::string stdout_path = "/dev/null";
  std::string stderr_path = "/dev/null";
  std::vector<std::string> env;  // extra "K=V" entries
  std::optional<uid_t> uid;      // drop to this uid/gid before exec
  std::optional<gid_t> gid;
  std::string cwd;  // working directory of the child ("" = the test's)
  // A cgroup directory (MemoryCgroup::dir()) the child moves itself into
  // before exec, so that its first sample already sees that cgroup ("" =
  // the test's own).
  std::string cgroup;
};

class Process {
 public:
  Process() = default;
  Process(std::vector<std::string> argv, SpawnOptions options = {});
  ~Process();
  Process(Process&& o) noexcept;
  Process& operator=(Process&& o) noexcept;

  pid_t pid() const { return pid_; }
  bool running();
  // Waits up to `timeout` for exit; the exit code, or -signal, or nullopt on
  // timeout.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  // SIGKILL and reap. Safe to call twice.
  void Kill();
  // Sends a signal and waits for exit.
  std::optional<int> Stop(int sig, std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// Polls `cond` every 20 ms until it is true or `timeout` passes.
bool WaitFor(const std::function<bool()>& cond, std::chrono::milliseconds timeout);

// Every distinct JDK with a bin/java under /usr/lib/jvm (symlinked aliases
// counted once), Debian's 17 first: the tests run on every JDK found.
std::vector<std::string> FindJdkHomes();
// A JDK home's directory name made fit for a gtest parameter name.
std::string JdkTestName(const std::string& home);
// The JDK's feature version (17, 25, ...) from JAVA_VERSION in its release
// file; 0 when it cannot be read.
int JdkFeature(const std::string& home);

// Whether one line of `log` contains every one of `parts`.
bool LogHas(const std::string& log, const std::vector<std::string>& parts);

// The state letter of /proc/<pid>/stat ('T' stopped, 'Z' zombie); '?' when
// the process is gone.
char ProcessState(pid_t pid);

// SIGSTOPs a process and waits until it is stopped; SIGCONTs it when it goes
// out of scope (unless Continue() did already), so a failing test leaves no
// stopped process behind for the handles' SIGKILL.
class Stopped {
 public:
  explicit Stopped(pid_t pid);
  ~Stopped() { Continue(); }
  Stopped(const Stopped&) = delete;
  Stopped& operator=(const Stopped&) = delete;
  bool ok() const { return stopped_; }
  void Continue();

 private:
  pid_t pid_;
  bool stopped_ = false;
};

// A memory cgroup with a limit, made for one test: `name`-<test pid> under
// $MEMTRIMD_TEST_CGROUP_PARENT when set (scripts that clean up after a
// killed test give one), else under this process's own memory cgroup (v1)
// or the cgroup v2 root. Processes join it with SpawnOptions::cgroup; the
// destructor removes it once they are gone, so declare it before their
// handles. ok() is false, with why(), where none can be made (not root, no
// memory controller, a read-only cgroupfs).
class MemoryCgroup {
 public:
  MemoryCgroup(const std::string& name, uint64_t limit_bytes);
  ~MemoryCgroup();
  MemoryCgroup(const MemoryCgroup&) = delete;
  MemoryCgroup& operator=(const MemoryCgroup&) = delete;
  bool ok() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }
  const std::string& why() const { return why_; }
  int version() const { return version_; }

 private:
  std::string dir_;
  std::string why_;
  int version_ = 0;
};

// A fresh directory under the test temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A FIFO made at `path` for a child's stdin (SpawnOptions::stdin_path),
// opened here for reading and writing first, so that neither the child's
// open nor this one waits for the other; what Write() sends reaches the
// child, and Close() (or the destructor) gives it end of file.
class StdinPipe {
 public:
  explicit StdinPipe(std::string path);
  ~StdinPipe();
  StdinPipe(const StdinPipe&) = delete;
  StdinPipe& operator=(const StdinPipe&) = delete;
  bool ok() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  bool Write(const std::string& text);
  void Close();

 private:
  std::string path_;
  int fd_ = -1;
};

std::string ReadFile(const std::string& path);
// The "key=value" lines of a file (the fragmenter's --stats-file, the
// agent's answers); lines without '=' are skipped.
std::map<std::string, std::string> ReadKeyValueFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& text);

struct HttpResponse {
  int status = 0;  // 0: curl failed
  std::string headers;
  std::string body;
};
// GET (or another method) through the real curl binary.
HttpResponse Curl(const std::string& url, const std::vector<std::string>& extra_args = {});

// Parsed exposition: "name{labels}" (labels as rendered) -> value.
using Series = std::map<std::string, double>;
Series ParseExposition(const std::string& text);
// The value of the single series of `name` whose label text contains
// every fragment in `label_parts`.
std::optional<double> Find(const Series& s, const std::string& name,
                           const std::vector<std::string>& label_parts = {});

// A command that runs memtrimd, e.g. {"strace", "-D", "-f", ...}: the
// memtrimd command line is appended to it. The wrapper must exec memtrimd in
// the process it was started as (strace -D does), so that process().pid()
// is memtrimd's.
struct WrapWith {
  std::vector<std::string> argv;
};

// A memtrimd daemon on 127.0.0.1 with a kernel-chosen port.
class Memtrimd {
 public:
  explicit Memtrimd(std::vector<std::string> flags, SpawnOptions options = {});
  Memtrimd(WrapWith wrapper, std::vector<std::string> flags, SpawnOptions options = {});
  bool started() const { return port_ != 0; }
  int port() const { return port_; }
  std::string url(const std::string& path = "/metrics") const;
  Series Scrape() const;
  Process& process() { return process_; }
  std::string log() const;

 private:
  TempDir dir_;
  std::string log_path_;
  Process process_;
  int port_ = 0;
};

// Runs a command to completion (deadline 60 s), capturing output.
struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs `argv` to its end, or until `deadline` (then it and its process
// group are killed and exit_code is -1000).
RunResult RunCommand(std::vector<std::string> argv, SpawnOptions options = {},
                     std::chrono::milliseconds deadline = std::chrono::seconds(60));

// `argv` as another real and effective uid through setpriv (real `ruid`,
// effective and filesystem `uid`, both gids `uid`, no supplementary groups):
// readable /proc files but no ptrace access, as Yama's ptrace_scope=1 gives
// a sidecar. Such a process is not dumpable, which LeakSanitizer needs: it is
// told not to run there (the AddressSanitizer build).
std::vector<std::string> AsUidWithoutPtrace(uid_t ruid, uid_t uid, std::vector<std::string> argv);

// Starts the fragmenting workload and waits until it is ready (idle, arenas
// populated). Returns a not-running Process on failure.
Process StartFragmenter(const TempDir& dir, std::vector<std::string> args,
                        const std::string& binary = "", SpawnOptions options = {});

// Paths of the binaries under test.
std::string MemtrimdBin();
std::string FragmenterBin();
// The fragmenter built for another allocator: "jemalloc", "tcmalloc",
// "mimalloc" (linked with its shared object), "jemalloc_static" (linked in)
// or "musl" (musl-gcc). "" when that build was skipped (library or compiler
// not found) or the name is none of these.
std::string FragmenterBinFor(const std::string& variant);
// The full path of "jemalloc", "tcmalloc" or "mimalloc"'s shared object, for
// LD_PRELOAD; "" when not found at build time.
std::string AllocatorSo(const std::string& allocator);

// Per-mapping view read independently of memtrimd's parser.
struct RawMapping {
  uint64_t start = 0, end = 0;
  std::string perms;
  uint64_t inode = 0;
  std::string path;
  uint64_t rss_kb = 0;
};
std::vector<RawMapping> ReadSmapsIndependently(pid_t pid);

// glibc arena heaps by the rule of FACTS-glibc, written again plainly and
// independent of collectors/glibc: an anonymous rw-p mapping on a 64 MiB
// boundary, either 64 MiB long or followed by anonymous ---p mappings that
// end exactly at start + 64 MiB.
struct IndependentHeaps {
  std::size_t count = 0;
  uint64_t resident = 0;
};
IndependentHeaps CountHeaps(const std::vector<RawMapping>& maps);

struct StatusNumbers {
  uint64_t rss_anon = 0, rss_file = 0, rss_shmem = 0, vm_swap = 0;
};
StatusNumbers ReadStatusIndependently(pid_t pid);

bool IsRoot();

// A built workload program beside the fragmenter (tests/workloads), e.g.
// "many_mappings", "attach_server".
std::string WorkloadBin(const std::string& name);

// Debian's OpenJDK 17 (always installed where the tests run).
inline constexpr const char* kJava17Home = "/usr/lib/jvm/java-17-openjdk-amd64";

// Starts a Java workload from JAVA_WORKLOADS_CLASSPATH with `java_home`'s
// java and waits (up to 90 s) for its ready file in `dir`. Returns a
// not-running Process on failure.
Process StartJvm(const TempDir& dir, std::vector<std::string> jvm_flags,
                 const std::string& main_class, std::vector<std::string> args,
                 SpawnOptions options = {}, const std::string& java_home = kJava17Home);

// The pid of `pid` in its own pid namespace (last NSpid field); `pid` when
// unknown.
pid_t NsPid(pid_t pid);

// Field 22 of /proc/<pid>/stat (start time in clock ticks since boot): with
// the pid, a process's identity; "" when it is gone.
std::string StartTicks(pid_t pid);

// A "Name:   value ..." field of /proc/<pid>/status as a number (kB for
// memory fields); nullopt when absent or the process is gone.
std::optional<uint64_t> StatusValue(pid_t pid, const std::string& name);

// Number of open file descriptors of `pid` (entries of /proc/<pid>/fd).
std::size_t CountFds(pid_t pid);

// Targets of the /proc/<pid>/fd links (what the process has open now).
std::vector<std::string> OpenFiles(pid_t pid);

// Whether `pid` runs with AddressSanitizer (its quarantine holds freed
// memory, so RSS comparisons mean nothing there).
bool RunsWithAsan(pid_t pid);

// Removes a path when it goes out of scope, however the test ends.
struct ScopedUnlink {
  std::string path;
  ~ScopedUnlink();
};

// Binds a UNIX stream socket at `path` (which must not exist) with `mode`.
// With `listening_fd` it listens and the caller owns the fd; without, it is
// closed at once, leaving a stale socket file nobody listens on. False on
// failure.
bool BindUnixSocket(const std::string& path, mode_t mode, int* listening_fd = nullptr);

// Removes `path` if it is a socket nobody listens on.
void RemoveStaleSocket(const std::string& path);

// The preload agent's default socket of `pid`:
// /tmp/.memtrimd_agent.<pid>.<start ticks>. For a process that is gone (and
// reaped), the one such file left for the pid, or a path that does not exist.
std::string AgentSocketOf(pid_t pid);

// Removes the agent sockets of `pid` in /tmp that nobody listens on (the
// agent of a SIGKILLed process cannot remove its own).
void RemoveStaleAgentSocket(pid_t pid);

// Removes /tmp/.java_pid<pid> if it is a socket nobody listens on (a
// SIGKILLed JVM leaves its attach socket behind).
void RemoveStaleJvmSocket(pid_t pid);

}  // namespace memtrimd::testing

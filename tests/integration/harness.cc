#include "tests/integration/harness.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

namespace memtrimd::testing {

namespace fs = std::filesystem;

Process::Process(std::vector<std::string> argv, SpawnOptions o) {
  pid_t parent = getpid();
  const std::string cgroup_procs = o.cgroup.empty() ? "" : o.cgroup + "/cgroup.procs";
  pid_ = fork();
  if (pid_ == 0) {
    // Die with the test runner even if it is killed before cleaning up.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);
    setpgid(0, 0);
    // O_CLOEXEC: the program gets 0, 1 and 2 and no stray copies above them
    // (tests check which descriptor numbers a program's first calls get).
    int in = open(o.stdin_path.c_str(), O_RDONLY | O_CLOEXEC);
    int out = open(o.stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int err = open(o.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (in < 0 || out < 0 || err < 0) _exit(125);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    for (int fd = 0; fd <= 2; ++fd) fcntl(fd, F_SETFD, 0);  // dup2(x, x) keeps the flag
    // Nor anything the test runner itself inherited without close-on-exec.
    syscall(SYS_close_range, 3u, ~0u, 0u);
    for (const std::string& kv : o.env) putenv(const_cast<char*>(kv.c_str()));
    if (!o.cwd.empty() && chdir(o.cwd.c_str()) != 0) _exit(123);
    if (!cgroup_procs.empty()) {
      // "0": the writer itself (cgroup v1 and v2).
      int fd = open(cgroup_procs.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0 || write(fd, "0", 1) != 1) _exit(122);
      close(fd);
    }
    if (o.gid && setgid(*o.gid) != 0) _exit(124);
    if (o.uid && setuid(*o.uid) != 0) _exit(124);
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
}

Process::~Process() { Kill(); }

Process::Process(Process&& o) noexcept : pid_(o.pid_), status_(o.status_) { o.pid_ = -1; }

Process& Process::operator=(Process&& o) noexcept {
  if (this != &o) {
    Kill();
    pid_ = o.pid_;
    status_ = o.status_;
    o.pid_ = -1;
  }
  return *this;
}

bool Process::running() {
  if (pid_ <= 0 || status_) return false;
  int st = 0;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
    return false;
  }
  return r == 0;
}

std::optional<int> Process::Wait(std::chrono::milliseconds timeout) {
  WaitFor([this] { return !running(); }, timeout);
  return status_;
}

void Process::Kill() {
  if (pid_ > 0 && running()) {
    kill(pid_, SIGKILL);
    int st = 0;
    if (waitpid(pid_, &st, 0) == pid_) {
      status_ = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
      // A SIGKILLed JVM or agent program cannot remove its socket; left in
      // /tmp, it would meet a later process that gets the same pid.
      RemoveStaleJvmSocket(pid_);
      RemoveStaleAgentSocket(pid_);
    }
  }
}

std::optional<int> Process::Stop(int sig, std::chrono::milliseconds timeout) {
  if (pid_ > 0 && running()) kill(pid_, sig);
  return Wait(timeout);
}

namespace {

// This process's memory cgroup as a directory a child can be made in: its
// v1 memory cgroup, else the v2 root (a v2 cgroup that holds processes
// cannot enable controllers for its children; the root can). "" when there
// is no memory controller.
std::string MemoryCgroupParent(int& version, std::string& why) {
  if (const char* p = std::getenv("MEMTRIMD_TEST_CGROUP_PARENT"); p != nullptr && *p != '\0') {
    version = std::filesystem::exists(std::string(p) + "/memory.limit_in_bytes") ? 1 : 2;
    return p;
  }
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    std::size_t c1 = line.find(':'), c2 = line.find(':', c1 + 1);
    if (c1 == std::string::npos || c2 == std::string::npos) continue;
    std::string controllers = "," + line.substr(c1 + 1, c2 - c1 - 1) + ",";
    std::string dir = "/sys/fs/cgroup/memory" + line.substr(c2 + 1);
    if (controllers.find(",memory,") != std::string::npos &&
        std::filesystem::exists(dir + "/memory.limit_in_bytes")) {
      version = 1;
      return dir;
    }
  }
  std::string controllers = ReadFile("/sys/fs/cgroup/cgroup.controllers");
  if (!std::regex_search(controllers, std::regex(R"(\bmemory\b)"))) {
    why = "no cgroup memory controller (neither v1 nor v2)";
    return "";
  }
  std::string subtree = ReadFile("/sys/fs/cgroup/cgroup.subtree_control");
  if (!std::regex_search(subtree, std::regex(R"(\bmemory\b)"))) {
    std::ofstream("/sys/fs/cgroup/cgroup.subtree_control") << "+memory";
    if (!std::regex_search(ReadFile("/sys/fs/cgroup/cgroup.subtree_control"),
                           std::regex(R"(\bmemory\b)"))) {
      why = "cannot enable the memory controller under /sys/fs/cgroup";
      return "";
    }
  }
  version = 2;
  return "/sys/fs/cgroup";
}

}  // namespace

MemoryCgroup::MemoryCgroup(const std::string& name, uint64_t limit_bytes) {
  std::string parent = MemoryCgroupParent(version_, why_);
  if (parent.empty()) return;
  std::string dir = parent + "/" + name + "-" + std::to_string(getpid());
  if (mkdir(dir.c_str(), 0755) != 0) {
    why_ = "mkdir " + dir + ": " + std::strerror(errno);
    return;
  }
  const std::string limit = dir + (version_ == 1 ? "/memory.limit_in_bytes" : "/memory.max");
  std::ofstream(limit) << limit_bytes;
  if (ReadFile(limit).rfind(std::to_string(limit_bytes), 0) != 0) {
    why_ = "cannot set " + limit;
    rmdir(dir.c_str());
    return;
  }
  dir_ = dir;
}

MemoryCgroup::~MemoryCgroup() {
  if (dir_.empty()) return;
  // Its processes are the test's and gone by now (their handles were
  // destroyed first); the kernel may still be tearing the last one down.
  if (!WaitFor([&] { return rmdir(dir_.c_str()) == 0 || errno != EBUSY; }, 10s)) {
    ADD_FAILURE() << "cannot remove " << dir_ << ": " << std::strerror(errno);
  }
}

bool WaitFor(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (cond()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
}

std::vector<std::string> FindJdkHomes() {
  std::vector<std::string> homes = {"/usr/lib/jvm/java-17-openjdk-amd64"};
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/usr/lib/jvm", ec)) {
    found.push_back(e.path().string());
  }
  std::sort(found.begin(), found.end());
  homes.insert(homes.end(), found.begin(), found.end());
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& home : homes) {
    if (!std::filesystem::exists(home + "/bin/java")) continue;
    std::string real = std::filesystem::canonical(home + "/bin/java", ec);
    if (ec || !seen.insert(real).second) continue;
    out.push_back(home);
  }
#ifdef MEMTRIMD_TESTS_FIRST_JDK_ONLY
  // The sanitizer build runs each JVM test on Debian's JDK alone: what it
  // looks for is memory errors in memtrimd, whose code is the same whichever
  // JDK answers; the dev build runs every JDK found.
  if (out.size() > 1) out.resize(1);
#endif
  return out;
}

std::string JdkTestName(const std::string& home) {
  std::string name = std::filesystem::path(home).filename().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

int JdkFeature(const std::string& home) {
  std::ifstream in(home + "/release");
  std::string line;
  std::regex re(R"re(^JAVA_VERSION="(1\.)?(\d+))re");
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, re)) return std::stoi(m[2]);
  }
  return 0;
}

bool LogHas(const std::string& log, const std::vector<std::string>& parts) {
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    bool all = true;
    for (const std::string& p : parts) all = all && line.find(p) != std::string::npos;
    if (all) return true;
  }
  return false;
}

char ProcessState(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() ? stat[paren + 2] : '?';
}

Stopped::Stopped(pid_t pid) : pid_(pid) {
  ::kill(pid_, SIGSTOP);
  stopped_ = WaitFor([&] { return ProcessState(pid_) == 'T'; }, 10s);
}

void Stopped::Continue() {
  if (pid_ > 0) ::kill(pid_, SIGCONT);
  pid_ = -1;
}

TempDir::TempDir() {
  std::string tmpl = ::testing::TempDir() + "memtrimd-test.XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  char* p = mkdtemp(buf.data());
  path_ = p ? p : "";
  chmod(path_.c_str(), 0755);
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) fs::remove_all(path_, ec);
}

StdinPipe::StdinPipe(std::string path) : path_(std::move(path)) {
  // O_RDWR on a FIFO never waits for a reader (Linux): the child may not
  // have been started yet.
  if (mkfifo(path_.c_str(), 0600) == 0) fd_ = open(path_.c_str(), O_RDWR | O_CLOEXEC);
}

StdinPipe::~StdinPipe() {
  Close();
  unlink(path_.c_str());
}

bool StdinPipe::Write(const std::string& text) {
  std::size_t done = 0;
  while (fd_ >= 0 && done < text.size()) {
    ssize_t n = write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return fd_ >= 0;
}

void StdinPipe::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::map<std::string, std::string> ReadKeyValueFile(const std::string& path) {
  std::map<std::string, std::string> out;
  std::istringstream in(ReadFile(path));
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::vector<std::string> AsUidWithoutPtrace(uid_t ruid, uid_t uid, std::vector<std::string> argv) {
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string id = std::to_string(uid);
  std::vector<std::string> out = {
      "env",
      std::string("ASAN_OPTIONS=") + (asan != nullptr ? asan : "") + ":detect_leaks=0",
      "setpriv",
      "--ruid",
      std::to_string(ruid),
      "--euid",
      id,
      "--rgid",
      id,
      "--egid",
      id,
      "--clear-groups"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

RunResult RunCommand(std::vector<std::string> argv, SpawnOptions o,
                     std::chrono::milliseconds deadline) {
  TempDir dir;
  o.stdout_path = dir / "out";
  o.stderr_path = dir / "err";
  Process p(std::move(argv), o);
  RunResult r;
  auto code = p.Wait(deadline);
  // Not ended: its helpers (a browser's renderer and GPU processes) are in
  // its process group (the child made one of its own), and go with it.
  if (!code && p.pid() > 0) ::kill(-p.pid(), SIGKILL);
  r.exit_code = code.value_or(-1000);
  r.out = ReadFile(o.stdout_path);
  r.err = ReadFile(o.stderr_path);
  return r;
}

HttpResponse Curl(const std::string& url, const std::vector<std::string>& extra) {
  TempDir dir;
  std::vector<std::string> argv = {"curl",          "-s", "-S",        "--max-time", "10", "-D",
                                   dir / "headers", "-o", dir / "body"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back(url);
  RunResult r = RunCommand(argv);
  HttpResponse resp;
  if (r.exit_code != 0) return resp;
  resp.headers = ReadFile(dir / "headers");
  resp.body = ReadFile(dir / "body");
  std::sscanf(resp.headers.c_str(), "HTTP/%*s %d", &resp.status);
  return resp;
}

Series ParseExposition(const std::string& text) {
  Series s;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::size_t sp = line.rfind(' ');
    if (sp == std::string::npos) continue;
    s[line.substr(0, sp)] = std::strtod(line.c_str() + sp + 1, nullptr);
  }
  return s;
}

std::optional<double> Find(const Series& s, const std::string& name,
                           const std::vector<std::string>& parts) {
  std::optional<double> found;
  for (const auto& [key, value] : s) {
    std::string base = key.substr(0, key.find('{'));
    if (base != name) continue;
    bool all = true;
    for (const std::string& p : parts) all = all && key.find(p) != std::string::npos;
    if (!all) continue;
    if (found) return std::nullopt;  // ambiguous
    found = value;
  }
  return found;
}

Memtrimd::Memtrimd(std::vector<std::string> flags, SpawnOptions o)
    : Memtrimd(WrapWith{}, std::move(flags), std::move(o)) {}

Memtrimd::Memtrimd(WrapWith wrapper, std::vector<std::string> flags, SpawnOptions o) {
  log_path_ = dir_ / "memtrimd.log";
  o.stderr_path = log_path_;
  std::vector<std::string> argv = std::move(wrapper.argv);
  argv.insert(argv.end(), {MemtrimdBin(), "--web.listen-address=127.0.0.1:0"});
  argv.insert(argv.end(), flags.begin(), flags.end());
  process_ = Process(argv, o);
  std::regex started(R"(memtrimd started.*ports\W+(\d+))");
  WaitFor(
      [&] {
        std::smatch m;
        std::string log = ReadFile(log_path_);
        if (std::regex_search(log, m, started)) {
          port_ = std::stoi(m[1]);
          return true;
        }
        return !process_.running();
      },
      20s);
}

std::string Memtrimd::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

Series Memtrimd::Scrape() const { return ParseExposition(Curl(url()).body); }

std::string Memtrimd::log() const { return ReadFile(log_path_); }

Process StartFragmenter(const TempDir& dir, std::vector<std::string> args,
                        const std::string& binary, SpawnOptions options) {
  static int counter = 0;
  std::string ready = dir / ("fragmenter." + std::to_string(++counter) + ".ready");
  std::vector<std::string> argv = {binary.empty() ? FragmenterBin() : binary, "--quiet",
                                   "--ready-file", ready};
  argv.insert(argv.end(), args.begin(), args.end());
  Process p(argv, options);
  bool ok = WaitFor([&] { return fs::exists(ready) || !p.running(); }, 60s) && fs::exists(ready);
  if (!ok) p.Kill();
  return p;
}

std::string MemtrimdBin() { return MEMTRIMD_BIN; }
std::string FragmenterBin() { return FRAGMENTER_BIN; }

std::string FragmenterBinFor(const std::string& variant) {
  if (variant == "jemalloc") return FRAGMENTER_JEMALLOC_BIN;
  if (variant == "tcmalloc") return FRAGMENTER_TCMALLOC_BIN;
  if (variant == "mimalloc") return FRAGMENTER_MIMALLOC_BIN;
  if (variant == "jemalloc_static") return FRAGMENTER_JEMALLOC_STATIC_BIN;
  if (variant == "musl") return FRAGMENTER_MUSL_BIN;
  return "";
}

std::string AllocatorSo(const std::string& allocator) {
  if (allocator == "jemalloc") return JEMALLOC_SO;
  if (allocator == "tcmalloc") return TCMALLOC_SO;
  if (allocator == "mimalloc") return MIMALLOC_SO;
  return "";
}

// Deliberately simple and separate from collectors/procfs: an independent
// reading to compare memtrimd against.
std::vector<RawMapping> ReadSmapsIndependently(pid_t pid) {
  std::vector<RawMapping> out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps");
  std::string line;
  while (std::getline(in, line)) {
    unsigned long long start, end, inode;
    char perms[8] = {};
    int n = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %*s %*s %llu %n", &start, &end, perms, &inode,
                    &n) >= 4) {
      RawMapping m;
      m.start = start;
      m.end = end;
      m.perms = perms;
      m.inode = inode;
      m.path = n > 0 && static_cast<std::size_t>(n) <= line.size() ? line.substr(n) : "";
      out.push_back(m);
      continue;
    }
    unsigned long long kb;
    if (!out.empty() && std::sscanf(line.c_str(), "Rss: %llu kB", &kb) == 1) out.back().rss_kb = kb;
  }
  return out;
}

IndependentHeaps CountHeaps(const std::vector<RawMapping>& maps) {
  constexpr uint64_t kHeap = 64ull << 20;
  IndependentHeaps h;
  for (std::size_t i = 0; i < maps.size(); ++i) {
    const RawMapping& m = maps[i];
    bool anon = m.inode == 0 && (m.path.empty() || m.path.rfind("[anon:", 0) == 0);
    if (!anon || m.perms != "rw-p" || m.start % kHeap != 0 || m.end - m.start > kHeap) continue;
    uint64_t reach = m.end;
    std::size_t j = i + 1;
    while (reach < m.start + kHeap && j < maps.size() && maps[j].start == reach &&
           maps[j].perms == "---p" && maps[j].inode == 0 && maps[j].path.empty()) {
      reach = maps[j].end;
      ++j;
    }
    if (reach == m.start + kHeap) {
      ++h.count;
      h.resident += m.rss_kb << 10;
    }
  }
  return h;
}

StatusNumbers ReadStatusIndependently(pid_t pid) {
  StatusNumbers s;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    unsigned long long kb;
    if (std::sscanf(line.c_str(), "RssAnon: %llu kB", &kb) == 1) s.rss_anon = kb << 10;
    if (std::sscanf(line.c_str(), "RssFile: %llu kB", &kb) == 1) s.rss_file = kb << 10;
    if (std::sscanf(line.c_str(), "RssShmem: %llu kB", &kb) == 1) s.rss_shmem = kb << 10;
    if (std::sscanf(line.c_str(), "VmSwap: %llu kB", &kb) == 1) s.vm_swap = kb << 10;
  }
  return s;
}

bool IsRoot() { return geteuid() == 0; }

std::string WorkloadBin(const std::string& name) {
  return (fs::path(FragmenterBin()).parent_path() / name).string();
}

Process StartJvm(const TempDir& dir, std::vector<std::string> jvm_flags,
                 const std::string& main_class, std::vector<std::string> args, SpawnOptions o,
                 const std::string& java_home) {
  static int counter = 0;
  std::string ready = dir / (main_class + ".jvm." + std::to_string(++counter) + ".ready");
  std::vector<std::string> argv = {java_home + "/bin/java"};
  argv.insert(argv.end(), jvm_flags.begin(), jvm_flags.end());
  argv.insert(argv.end(), {"-cp", JAVA_WORKLOADS_CLASSPATH, main_class, "--ready-file", ready});
  argv.insert(argv.end(), args.begin(), args.end());
  Process p(argv, o);
  bool ok = WaitFor([&] { return fs::exists(ready) || !p.running(); }, 90s) && fs::exists(ready);
  if (!ok) p.Kill();
  return p;
}

pid_t NsPid(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::size_t last = line.find_last_of(" \t");
    if (last != std::string::npos) return static_cast<pid_t>(std::stol(line.substr(last + 1)));
  }
  return pid;
}

std::string StartTicks(pid_t pid) {
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  std::size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return "";
  std::istringstream fields(stat.substr(paren + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) return field;
  }
  return "";
}

std::optional<uint64_t> StatusValue(pid_t pid, const std::string& name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 &&
        line[name.size()] == ':') {
      return std::strtoull(line.c_str() + name.size() + 1, nullptr, 10);
    }
  }
  return std::nullopt;
}

std::size_t CountFds(pid_t pid) { return OpenFiles(pid).size(); }

std::vector<std::string> OpenFiles(pid_t pid) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code lec;
    fs::path target = fs::read_symlink(e.path(), lec);
    out.push_back(lec ? std::string() : target.string());
  }
  return out;
}

bool RunsWithAsan(pid_t pid) {
  std::string maps = ReadFile("/proc/" + std::to_string(pid) + "/maps");
  return maps.find("libasan") != std::string::npos ||
         maps.find("libclang_rt.asan") != std::string::npos;
}

ScopedUnlink::~ScopedUnlink() {
  if (!path.empty()) ::unlink(path.c_str());
}

bool BindUnixSocket(const std::string& path, mode_t mode, int* listening_fd) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return false;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::chmod(path.c_str(), mode) != 0 || (listening_fd != nullptr && ::listen(fd, 4) != 0)) {
    ::close(fd);
    return false;
  }
  if (listening_fd != nullptr) {
    *listening_fd = fd;
  } else {
    ::close(fd);
  }
  return true;
}

namespace {

// Files in /tmp named .memtrimd_agent.<pid>.<anything>.
std::vector<std::string> AgentSocketFiles(pid_t pid) {
  const std::string prefix = ".memtrimd_agent." + std::to_string(pid) + ".";
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/tmp", ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0) out.push_back(e.path().string());
  }
  return out;
}

}  // namespace

std::string AgentSocketOf(pid_t pid) {
  const std::string base = "/tmp/.memtrimd_agent." + std::to_string(pid) + ".";
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  std::size_t paren = stat.rfind(')');
  if (paren != std::string::npos) {
    std::istringstream fields(stat.substr(paren + 1));
    std::string field;
    for (int i = 3; i <= 22 && fields >> field; ++i) {
      if (i == 22) return base + field;
    }
  }
  std::vector<std::string> left = AgentSocketFiles(pid);
  return left.size() == 1 ? left[0] : base + "gone";
}

void RemoveStaleAgentSocket(pid_t pid) {
  RemoveStaleSocket("/tmp/.memtrimd_agent." + std::to_string(pid));
  for (const std::string& path : AgentSocketFiles(pid)) RemoveStaleSocket(path);
}

void RemoveStaleJvmSocket(pid_t pid) { RemoveStaleSocket("/tmp/.java_pid" + std::to_string(pid)); }

void RemoveStaleSocket(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 &&
      errno == ECONNREFUSED) {
    ::unlink(path.c_str());
  }
  ::close(fd);
}

}  // namespace memtrimd::testing

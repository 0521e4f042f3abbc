// The preload agent (libmemtrimd_agent.so) in real processes, driven by
// memtrimd's client (collectors/agent/client/agent_client.h): a trim that gives
// memory back (checked against the test's own reading of /proc), heap
// reports, 1,000 trims under a malloc-heavy workload without corrupting it,
// fork+exec, and sockets that must not be trusted or waited on. Every test
// runs twice: as is, and under Kubernetes' RuntimeDefault seccomp rules
// (tests/workloads/runtime_default), where the agent must do all the same.

#include <grp.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <regex>
#include <vector>

#include "collectors/agent/agent_protocol.h"
#include "collectors/agent/client/agent_client.h"
#include "collectors/jvm/malloc_info.h"
#include "collectors/procfs/target_reader.h"
#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;
using agent::AgentCommand;
using agent::AgentOptions;

constexpr uid_t kNobody = 65534;

uint64_t ArenaHeapResident(pid_t pid) { return CountHeaps(ReadSmapsIndependently(pid)).resident; }

uint64_t VmRss(pid_t pid) {
  StatusNumbers s = ReadStatusIndependently(pid);
  return s.rss_anon + s.rss_file + s.rss_shmem;
}

std::string DefaultSocket(pid_t pid) { return AgentSocketOf(pid); }

// A socket file at `path` with `mode`, owned by uid/gid; listening when
// `listen_too` (a live squatter), else closed at once (a stale file).
// Returns the listening fd or -1.
int MakeSocketFile(const std::string& path, mode_t mode, uid_t uid, gid_t gid, bool listen_too) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_GE(fd, 0);
  ::unlink(path.c_str());
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << path;
  EXPECT_EQ(::chmod(path.c_str(), mode), 0);
  EXPECT_EQ(::chown(path.c_str(), uid, gid), 0);
  if (listen_too) {
    EXPECT_EQ(::listen(fd, 4), 0);
    return fd;
  }
  ::close(fd);
  return -1;
}

// Removes a path when the test ends, however it ends.
struct Unlinker {
  std::string path;
  ~Unlinker() { ::unlink(path.c_str()); }
};

// The parameter: "plain" (no seccomp filter) or "runtime_default".
class AgentTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Runs `argv` with the agent preloaded (plus `env`) and waits for its ready
  // file (the argument after "--ready-file"). Under "runtime_default" the
  // launcher installs the filter and execs `env` with the environment on its
  // command line (the launcher itself does not load the agent).
  Process Start(std::vector<std::string> argv, std::vector<std::string> env = {},
                bool preload = true, SpawnOptions o = {}) {
    if (preload) env.push_back(std::string("LD_PRELOAD=") + AGENT_LIB);
    std::string ready;
    for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
      if (argv[i] == "--ready-file") ready = argv[i + 1];
    }
    if (GetParam() == "runtime_default") {
      std::vector<std::string> wrapped = {WorkloadBin("runtime_default"), "env"};
      wrapped.insert(wrapped.end(), env.begin(), env.end());
      wrapped.insert(wrapped.end(), argv.begin(), argv.end());
      argv = std::move(wrapped);
      env.clear();
    }
    o.env = env;
    Process p(argv, o);
    started_.push_back(p.pid());
    bool ok = WaitFor([&] { return fs::exists(ready) || !p.running(); }, 60s) && fs::exists(ready);
    if (!ok) p.Kill();
    return p;
  }

  Process StartFragmenter(std::vector<std::string> args, bool preload = true,
                          std::vector<std::string> env = {}) {
    std::vector<std::string> argv = {FragmenterBin(), "--quiet", "--ready-file",
                                     dir_ / ("fragmenter." + std::to_string(++count_) + ".ready")};
    argv.insert(argv.end(), args.begin(), args.end());
    return Start(argv, env, preload);
  }

  static Target TargetOf(pid_t pid) {
    Result<Target> t = procfs::ReadTarget("/proc", pid);
    EXPECT_TRUE(t.ok()) << t.status().message();
    return t.ok() ? *t : Target{};
  }

  // The processes are SIGKILLed when their handles go: their sockets stay in
  // /tmp. Remove those nobody listens on any more (never a live one).
  void TearDown() override {
    for (pid_t pid : started_) {
      const std::string path = DefaultSocket(pid);
      struct stat st;
      if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
      int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 &&
          errno == ECONNREFUSED) {
        ::unlink(path.c_str());
      }
      ::close(fd);
    }
  }

  TempDir dir_;
  int count_ = 0;
  std::vector<pid_t> started_;
};

TEST_P(AgentTest, TrimGivesBackWhatTheTestMeasures) {
  Process frag = StartFragmenter({"--threads", "8", "--rounds", "2", "--burst-mib", "16"});
  ASSERT_TRUE(frag.running());
  Target t = TargetOf(frag.pid());
  EXPECT_TRUE(agent::HasAgent(t));

  // The workload is idle once ready: nothing but the trim changes its memory.
  const uint64_t heaps_before = ArenaHeapResident(frag.pid());
  const uint64_t rss_before = VmRss(frag.pid());
  Result<agent::AgentTrim> trim = agent::AgentTrimNow(t);
  const uint64_t heaps_after = ArenaHeapResident(frag.pid());
  const uint64_t rss_after = VmRss(frag.pid());
  ASSERT_TRUE(trim.ok()) << trim.status().message();

  std::cout << "trim: " << static_cast<double>(trim->duration.count()) / 1e6 << " ms, agent rss "
            << (trim->rss_before >> 20) << " -> " << (trim->rss_after >> 20) << " MiB, test VmRSS "
            << (rss_before >> 20) << " -> " << (rss_after >> 20) << " MiB, arena heaps resident "
            << (heaps_before >> 20) << " -> " << (heaps_after >> 20) << " MiB\n";
  EXPECT_LT(trim->rss_after, trim->rss_before);
  EXPECT_EQ(trim->result, 1);
  EXPECT_GT(trim->duration.count(), 0);
  EXPECT_GE(heaps_before, 64ull << 20) << "the workload should have fragmented its arenas";
  EXPECT_LE(heaps_after, heaps_before / 2);
  const double agent_freed = static_cast<double>(trim->rss_before - trim->rss_after);
  const double test_freed = static_cast<double>(rss_before) - static_cast<double>(rss_after);
  EXPECT_LT(std::fabs(agent_freed - test_freed), 0.05 * test_freed)
      << "agent " << agent_freed << " vs test " << test_freed;

  // Nothing is left to give back.
  Result<agent::AgentTrim> again = agent::AgentTrimNow(t);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_LT(again->rss_before - std::min(again->rss_before, again->rss_after), 1ull << 20);
}

TEST_P(AgentTest, MallocInfoAndMallinfo2) {
  Process frag = StartFragmenter({"--threads", "3", "--rounds", "1", "--burst-mib", "4"});
  ASSERT_TRUE(frag.running());
  Target t = TargetOf(frag.pid());

  Result<std::string> xml = AgentCommand(t, "malloc_info");
  ASSERT_TRUE(xml.ok()) << xml.status().message();
  EXPECT_EQ(xml->rfind("<malloc version=\"1\">", 0), 0u) << xml->substr(0, 200);
  Result<jvm::MallocInfo> info = jvm::ParseMallocInfo(*xml);
  ASSERT_TRUE(info.ok()) << info.status().message();
  // Main arena + one per worker thread: the agent thread never malloc'd, so
  // it has no arena of its own.
  EXPECT_EQ(info->arenas.size(), 4u);

  Result<std::string> body = AgentCommand(t, "mallinfo2");
  ASSERT_TRUE(body.ok()) << body.status().message();
  Result<agent::Mallinfo2> m = agent::ParseMallinfo2(*body);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->arena, m->uordblks + m->fordblks);
  EXPECT_GT(m->uordblks, 0u);
  EXPECT_EQ(m->arena, info->system_current);

  Result<std::string> ping = AgentCommand(t, "ping");
  ASSERT_TRUE(ping.ok()) << ping.status().message();
  EXPECT_EQ(*ping, "pid=" + std::to_string(frag.pid()) +
                       "\nversion=" + std::to_string(AGENT_PROTOCOL_VERSION) +
                       "\nrefused=0\nsampling=0\nperiod=0\nlease_left_ms=0\nhooked_now=0\n");

  // The agent's two tasks are named, and are the only extra threads: the
  // agent thread and the socket task.
  int named = 0, socket_tasks = 0, tasks = 0;
  for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(frag.pid()) + "/task")) {
    const std::string comm = ReadFile(task.path() / "comm");
    named += comm == "memtrimd-agent\n";
    socket_tasks += comm == "memtrimd-sock\n";
    ++tasks;
  }
  EXPECT_EQ(named, 1);
  EXPECT_EQ(socket_tasks, 1);
  EXPECT_EQ(tasks, 1 + 3 + 2);  // main, the workload's 3 threads, the agent's 2

  // The client's cap holds.
  AgentOptions small;
  small.max_response_bytes = 1000;
  Result<std::string> capped = AgentCommand(t, "malloc_info", small);
  ASSERT_FALSE(capped.ok());
  EXPECT_EQ(capped.status().code(), ErrorCode::kTooLarge);

  // An unknown command is an answer too (status 1), not a hang.
  Result<std::string> bogus = AgentCommand(t, "bogus");
  ASSERT_FALSE(bogus.ok());
  EXPECT_EQ(bogus.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(bogus.status().message().find("unknown command"), std::string::npos);
}

// The socket task is a thread glibc does not know of, so the program's
// setuid() would not move it: it keeps no privilege to lose. In a root
// program it is nobody, with no groups and no capabilities; the agent thread
// is the program's own identity (it decides whom to answer).
TEST_P(AgentTest, SocketTaskKeepsNoPrivilege) {
  if (!IsRoot()) GTEST_SKIP() << "needs a root program to drop from";
  Process frag = StartFragmenter({"--threads", "1", "--rounds", "1", "--burst-mib", "1"});
  ASSERT_TRUE(frag.running());
  std::string sock, agent;
  for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(frag.pid()) + "/task")) {
    const std::string comm = ReadFile(task.path() / "comm");
    if (comm == "memtrimd-sock\n") sock = ReadFile(task.path() / "status");
    if (comm == "memtrimd-agent\n") agent = ReadFile(task.path() / "status");
  }
  ASSERT_FALSE(sock.empty());
  ASSERT_FALSE(agent.empty());
  auto line = [](const std::string& status, const std::string& key) {
    std::size_t at = status.find("\n" + key + ":");
    if (at == std::string::npos) return std::string("(none)");
    std::size_t end = status.find('\n', at + 1);
    return status.substr(at + key.size() + 2, end - at - key.size() - 2);
  };
  EXPECT_EQ(line(sock, "Uid"), "\t65534\t65534\t65534\t65534");
  EXPECT_EQ(line(sock, "Gid"), "\t65534\t65534\t65534\t65534");
  EXPECT_EQ(line(sock, "Groups"), "\t ");  // none (the kernel ends the list with a space)
  EXPECT_EQ(line(sock, "CapPrm"), "\t0000000000000000");
  EXPECT_EQ(line(sock, "CapEff"), "\t0000000000000000");
  EXPECT_EQ(line(agent, "Uid"), "\t0\t0\t0\t0");
  // And root is still answered: the agent thread decides, as root.
  Result<std::string> ping = AgentCommand(TargetOf(frag.pid()), "ping");
  EXPECT_TRUE(ping.ok()) << ping.status().message();
}

TEST_P(AgentTest, ThousandTrimsUnderMallocStressCorruptNothing) {
  const std::string out = dir_ / "stress.out";
  SpawnOptions o;
  o.stdout_path = out;
  o.stderr_path = dir_ / "stress.err";
  // --nice 10 on the workers only: 8 busy threads on a 2-CPU machine would
  // otherwise starve the agent thread and 1,000 trims take ~100 s.
  Process stress = Start({MALLOC_STRESS_BIN, "--threads", "8", "--seconds", "600", "--nice", "10",
                          "--ready-file", dir_ / "stress.ready"},
                         {}, true, o);
  ASSERT_TRUE(stress.running());
  Target t = TargetOf(stress.pid());

  AgentOptions opts;
  opts.timeout = 10s;
  const auto start = std::chrono::steady_clock::now();
  int ok = 0;
  std::chrono::nanoseconds in_trim{}, longest{};
  for (int i = 0; i < 1000; ++i) {
    Result<agent::AgentTrim> trim = agent::AgentTrimNow(t, opts);
    ASSERT_TRUE(trim.ok()) << "trim " << i << ": " << trim.status().message();
    ASSERT_TRUE(stress.running()) << "the workload died at trim " << i;
    in_trim += trim->duration;
    longest = std::max(longest, trim->duration);
    ++ok;
  }
  const auto wall = std::chrono::steady_clock::now() - start;
  std::cout << ok << " trims in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(wall).count() << " ms, "
            << in_trim.count() / 1000 / ok << " us mean and " << longest.count() / 1000
            << " us max inside malloc_trim\n";

  std::optional<int> code = stress.Stop(SIGTERM, 30s);
  std::string text = ReadFile(out);
  ASSERT_EQ(code, 0) << text << ReadFile(dir_ / "stress.err");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(checksum=(\d+) errors=(\d+))"))) << text;
  EXPECT_EQ(m[2], "0");
  // The workers ran while the trims ran (they start before the ready file
  // and stop only at SIGTERM): each step verified and freed one chunk and
  // allocated another. How many steps fit is the machine's business, not a
  // property of the agent, so only "some" is asserted.
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(steps=(\d+))"))) << text;
  std::cout << "workload steps during the test: " << m[1] << "\n";
  EXPECT_GT(std::stoull(m[1]), 0u);
}

TEST_P(AgentTest, ExecedChildServesItsOwnSocket) {
  const std::string ready = dir_ / "parent.ready";
  SpawnOptions o;
  o.stdout_path = dir_ / "fork.out";
  Process parent = Start({MALLOC_STRESS_BIN, "--threads", "2", "--seconds", "600", "--fork-exec",
                          "--ready-file", ready},
                         {}, true, o);
  ASSERT_TRUE(parent.running());
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready + ".child"); }, 30s));
  const pid_t child = std::stoi(ReadFile(ready + ".child"));
  started_.push_back(child);
  ASSERT_NE(child, parent.pid());

  Target pt = TargetOf(parent.pid());
  Target ct = TargetOf(child);
  EXPECT_TRUE(agent::HasAgent(ct));
  Result<std::string> pp = AgentCommand(pt, "ping");
  // The child's ready file says its main runs; its agent's constructor waits
  // at most 2 s for the socket, which a busy machine can outlast.
  Result<std::string> cp = AgentCommand(ct, "ping");
  WaitFor([&] { return (cp = AgentCommand(ct, "ping")).ok(); }, 30s);
  ASSERT_TRUE(pp.ok()) << pp.status().message();
  ASSERT_TRUE(cp.ok()) << cp.status().message();
  EXPECT_EQ(pp->rfind("pid=" + std::to_string(parent.pid()) + "\n", 0), 0u) << *pp;
  EXPECT_EQ(cp->rfind("pid=" + std::to_string(child) + "\n", 0), 0u) << *cp;
  EXPECT_TRUE(fs::exists(DefaultSocket(child)));

  Result<agent::AgentTrim> trim = agent::AgentTrimNow(ct);
  EXPECT_TRUE(trim.ok()) << trim.status().message();

  // The parent stops the child (SIGTERM) and both verified their data.
  EXPECT_EQ(parent.Stop(SIGTERM, 30s), 0) << ReadFile(dir_ / "fork.out");
  EXPECT_NE(ReadFile(dir_ / "fork.out").find("child_exit=0"), std::string::npos);
  // Both removed their sockets on exit.
  EXPECT_FALSE(fs::exists(DefaultSocket(child)));
  EXPECT_FALSE(fs::exists(DefaultSocket(parent.pid())));
}

TEST_P(AgentTest, SocketPathFromTheEnvironmentWithPid) {
  Process frag = StartFragmenter({"--threads", "1", "--rounds", "1", "--burst-mib", "1"}, true,
                                 {"MEMTRIMD_AGENT_SOCKET=" + (dir_ / "agent.%p.sock")});
  ASSERT_TRUE(frag.running());
  Target t = TargetOf(frag.pid());
  const std::string inner = dir_ / ("agent." + std::to_string(frag.pid()) + ".sock");
  Result<std::string> path = agent::AgentSocketPath(t);
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_EQ(*path, "/proc/" + std::to_string(frag.pid()) + "/root" + inner);
  struct stat st;
  ASSERT_EQ(::lstat(inner.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_FALSE(fs::exists(DefaultSocket(frag.pid())));
  EXPECT_TRUE(AgentCommand(t, "ping").ok());
}

TEST_P(AgentTest, OtherUidIsRefusedWithoutAnAnswer) {
  if (!IsRoot()) GTEST_SKIP() << "needs root to switch to uid " << kNobody;
  Process frag = StartFragmenter({"--threads", "1", "--rounds", "1", "--burst-mib", "1"});
  ASSERT_TRUE(frag.running());
  Target t = TargetOf(frag.pid());
  const std::string path = DefaultSocket(frag.pid());

  // Outcome codes of the child, which runs as nobody.
  enum { kNoAnswer = 0, kConnectFailed = 2, kAnswered = 3, kSetupFailed = 4 };
  // `keep_dac_override`: keep CAP_DAC_OVERRIDE so the 0600 file does not
  // stop the connect and the agent's own SO_PEERCRED check must refuse.
  auto try_as_nobody = [&](bool keep_dac_override) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    pid_t pid = fork();
    if (pid == 0) {
      // Only async-signal-safe calls from here on (the test is threaded).
      alarm(20);
      if (keep_dac_override && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) _exit(kSetupFailed);
      if (setgroups(0, nullptr) != 0 || setgid(kNobody) != 0 || setuid(kNobody) != 0) {
        _exit(kSetupFailed);
      }
      if (keep_dac_override) {
        __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
        __user_cap_data_struct d[2]{};
        d[0].effective = d[0].permitted = 1u << CAP_DAC_OVERRIDE;
        if (syscall(SYS_capset, &h, d) != 0) _exit(kSetupFailed);
      }
      int fd = socket(AF_UNIX, SOCK_STREAM, 0);
      if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        _exit(kConnectFailed);
      }
      static const char kPing[] = "ping\n";
      if (send(fd, kPing, sizeof(kPing) - 1, MSG_NOSIGNAL) < 0) _exit(kNoAnswer);
      char c;
      _exit(recv(fd, &c, 1, 0) > 0 ? kAnswered : kNoAnswer);
    }
    int st = 0;
    EXPECT_EQ(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  };

  // Plain nobody: the file mode already keeps it out.
  EXPECT_EQ(try_as_nobody(false), kConnectFailed);
  // Nobody past the file mode: the agent refuses it and says nothing.
  int r = try_as_nobody(true);
  if (r == kSetupFailed) GTEST_SKIP() << "cannot keep CAP_DAC_OVERRIDE across setuid here";
  EXPECT_EQ(r, kNoAnswer);

  // And it keeps serving root, having counted the refusal.
  Result<std::string> ping = AgentCommand(t, "ping");
  ASSERT_TRUE(ping.ok()) << ping.status().message();
  EXPECT_NE(ping->find("refused=1\n"), std::string::npos) << *ping;
}

TEST_P(AgentTest, SilentClientDoesNotBlockTheAgent) {
  Process frag = StartFragmenter({"--threads", "1", "--rounds", "1", "--burst-mib", "1"});
  ASSERT_TRUE(frag.running());
  Target t = TargetOf(frag.pid());
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, DefaultSocket(frag.pid()).c_str(), sizeof(addr.sun_path) - 1);
  int silent = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(::connect(silent, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);

  // The agent drops the silent client after its 2 s read deadline.
  const auto start = std::chrono::steady_clock::now();
  AgentOptions o;
  o.timeout = 5s;
  Result<std::string> ping = AgentCommand(t, "ping", o);
  const auto took = std::chrono::steady_clock::now() - start;
  ::close(silent);
  ASSERT_TRUE(ping.ok()) << ping.status().message();
  EXPECT_LT(took, 4s);
}

TEST_P(AgentTest, StaleSocketIsUnavailableAtOnce) {
  // A process without the agent and a socket file nobody listens on at its path.
  Process frag = StartFragmenter({"--threads", "1", "--rounds", "1", "--burst-mib", "1"}, false);
  ASSERT_TRUE(frag.running());
  Target t = TargetOf(frag.pid());
  const std::string path = DefaultSocket(frag.pid());
  Unlinker cleanup{path};
  MakeSocketFile(path, 0600, t.uid, t.gid, false);

  const auto start = std::chrono::steady_clock::now();
  Result<std::string> r = AgentCommand(t, "ping");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable) << r.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

TEST_P(AgentTest, AgentReplacesAStaleSocket) {
  const std::string path = dir_ / "fixed.sock";
  MakeSocketFile(path, 0600, getuid(), getgid(), false);
  Process frag = StartFragmenter({"--threads", "1", "--rounds", "1", "--burst-mib", "1"}, true,
                                 {"MEMTRIMD_AGENT_SOCKET=" + path});
  ASSERT_TRUE(frag.running());
  Result<std::string> ping = AgentCommand(TargetOf(frag.pid()), "ping");
  EXPECT_TRUE(ping.ok()) << ping.status().message();
}

TEST_P(AgentTest, SquatterIsNotTrusted) {
  if (!IsRoot()) GTEST_SKIP() << "needs root to give a socket file to uid " << kNobody;
  Process frag = StartFragmenter({"--threads", "1", "--rounds", "1", "--burst-mib", "1"}, false);
  ASSERT_TRUE(frag.running());
  Target t = TargetOf(frag.pid());
  const std::string path = DefaultSocket(frag.pid());
  Unlinker cleanup{path};

  // A live socket of another uid at the target's path.
  int fd = MakeSocketFile(path, 0600, kNobody, kNobody, true);
  Result<std::string> r = AgentCommand(t, "ping");
  ::close(fd);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kPermissionDenied) << r.status().message();

  // Right owner and mode, but another process listens (this test).
  fd = MakeSocketFile(path, 0600, t.uid, t.gid, true);
  r = AgentCommand(t, "ping");
  ::close(fd);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kPermissionDenied) << r.status().message();

  // Right owner, open to others.
  fd = MakeSocketFile(path, 0666, t.uid, t.gid, true);
  r = AgentCommand(t, "ping");
  ::close(fd);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kPermissionDenied) << r.status().message();

  // Not a socket at all.
  ::unlink(path.c_str());
  WriteFile(path, "");
  ::chmod(path.c_str(), 0600);
  r = AgentCommand(t, "ping");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kPermissionDenied) << r.status().message();
}

TEST_P(AgentTest, AgentDoesNotTakeALiveSquattersPath) {
  if (!IsRoot()) GTEST_SKIP() << "needs root to give a socket file to uid " << kNobody;
  const std::string path = dir_ / "squatted.sock";
  int squatter = MakeSocketFile(path, 0600, kNobody, kNobody, true);
  SpawnOptions o;
  o.stderr_path = dir_ / "squatted.err";
  Process frag = Start({FragmenterBin(), "--quiet", "--threads", "1", "--rounds", "1",
                        "--burst-mib", "1", "--ready-file", dir_ / "squatted.ready"},
                       {"MEMTRIMD_AGENT_SOCKET=" + path}, true, o);
  ASSERT_TRUE(frag.running());
  Result<std::string> r = AgentCommand(TargetOf(frag.pid()), "ping");
  ::close(squatter);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kPermissionDenied) << r.status().message();
  EXPECT_NE(ReadFile(dir_ / "squatted.err").find("memtrimd_agent: not started"), std::string::npos);
}

TEST_P(AgentTest, ProgramWithoutTheAgent) {
  Process frag = StartFragmenter({"--threads", "1", "--rounds", "1", "--burst-mib", "1"}, false);
  ASSERT_TRUE(frag.running());
  Target t = TargetOf(frag.pid());
  EXPECT_FALSE(agent::HasAgent(t));
  Result<std::string> r = AgentCommand(t, "ping");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable) << r.status().message();
  Result<agent::AgentTrim> trim = agent::AgentTrimNow(t);
  ASSERT_FALSE(trim.ok());
  EXPECT_EQ(trim.status().code(), ErrorCode::kUnavailable);
}

TEST_P(AgentTest, DisabledAgentDoesNotListen) {
  Process frag = StartFragmenter({"--threads", "1", "--rounds", "1", "--burst-mib", "1"}, true,
                                 {"MEMTRIMD_AGENT_DISABLE=1"});
  ASSERT_TRUE(frag.running());
  Target t = TargetOf(frag.pid());
  EXPECT_TRUE(agent::HasAgent(t));  // loaded, but not started
  EXPECT_FALSE(fs::exists(DefaultSocket(frag.pid())));
  Result<std::string> r = AgentCommand(t, "ping");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable) << r.status().message();
}

INSTANTIATE_TEST_SUITE_P(Profiles, AgentTest, ::testing::Values("plain", "runtime_default"),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace memtrimd::testing

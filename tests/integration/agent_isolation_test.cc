// The preload agent stays out of its program's descriptors: real servers
// (C and Python) that close every inherited descriptor and then serve their
// own socket, trimmed and read by memtrimd all the while, answer every one of
// their own clients; the agent's descriptors never shift the program's
// numbers; the program's record locks survive the agent's start. Each of
// these runs twice: as is, and under Kubernetes' RuntimeDefault seccomp rules
// (tests/workloads/runtime_default: unshare refused, clone only without
// namespace flags, clone3 ENOSYS), where the agent used to refuse to start.
// An agent loaded but not serving is reported unreachable by memtrimd.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

// What closing_server (C or Python) wrote to its ready file.
struct ServerInfo {
  int port = 0;
  std::string pipe;  // "R,W": the numbers its first pipe() got
  int listen_fd = -1;
};

std::optional<ServerInfo> ParseReady(const std::string& text) {
  std::smatch m;
  static const std::regex re(R"(port=(\d+) pipe=(\d+,\d+) listen_fd=(\d+)\n)");
  if (!std::regex_match(text, m, re)) return std::nullopt;
  return ServerInfo{std::stoi(m[1]), m[2], std::stoi(m[3])};
}

// One request of the program's protocol: "ask N\n"; the whole answer, read
// until the server closes (deadline 5 s per step); "" when none came.
std::string Ask(int port, int n) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "socket failed";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    std::string line = "ask " + std::to_string(n) + "\n";
    if (::send(fd, line.data(), line.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(line.size())) {
      char buf[256];
      for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 5000) <= 0) break;
        ssize_t got = ::recv(fd, buf, sizeof(buf), 0);
        if (got <= 0) break;
        answer.append(buf, static_cast<std::size_t>(got));
      }
    }
  }
  ::close(fd);
  return answer;
}

// "plain": no seccomp filter; "runtime_default": RuntimeDefault's rules.
const std::vector<std::string> kProfiles = {"plain", "runtime_default"};

class AgentIsolation : public ::testing::Test {
 protected:
  // Starts `argv` (its ready file is `ready`) with `env`, and waits for it.
  // Under "runtime_default" the launcher installs the filter and execs
  // `env` with the environment on its command line, so that the launcher
  // itself does not load the agent (its own agent would die at the exec and
  // leave its socket behind).
  Process Start(std::vector<std::string> argv, const std::string& ready,
                std::vector<std::string> env, ServerInfo* info,
                const std::string& stderr_path = "/dev/null",
                const std::string& profile = "plain") {
    if (profile == "runtime_default") {
      std::vector<std::string> wrapped = {WorkloadBin("runtime_default"), "env"};
      wrapped.insert(wrapped.end(), env.begin(), env.end());
      wrapped.insert(wrapped.end(), argv.begin(), argv.end());
      argv = std::move(wrapped);
      env.clear();
    }
    SpawnOptions o;
    o.env = std::move(env);
    o.stderr_path = stderr_path;
    Process p(std::move(argv), o);
    started_.push_back(p.pid());
    bool ok = WaitFor([&] { return fs::exists(ready) || !p.running(); }, 30s) && p.running();
    std::optional<ServerInfo> parsed = ParseReady(ReadFile(ready));
    if (!ok || !parsed) {
      p.Kill();
      return p;
    }
    *info = *parsed;
    return p;
  }

  static std::string Preload() { return std::string("LD_PRELOAD=") + AGENT_LIB; }

  void TearDown() override {
    for (pid_t pid : started_) RemoveStaleAgentSocket(pid);
  }

  TempDir dir_;
  std::vector<pid_t> started_;
};

// The same tests for the C server and the Python one, each with and without
// the seccomp rules.
class AgentIsolationTest
    : public AgentIsolation,
      public ::testing::WithParamInterface<std::tuple<std::string, std::string>> {
 protected:
  static const std::string& Kind() { return std::get<0>(GetParam()); }
  static const std::string& Profile() { return std::get<1>(GetParam()); }

  // argv of the server: the C workload or the Python one.
  static std::vector<std::string> ServerArgv(const std::string& kind, const std::string& ready) {
    if (kind == "python") return {"python3", CLOSING_SERVER_PY, ready};
    return {WorkloadBin("closing_server"), "--ready-file", ready};
  }
};

// The program's first pipe() gets the same numbers with the agent as without
// it: 3 and 4. (The old agent's socket took 3, and the pipe got 4 and 5.)
TEST_P(AgentIsolationTest, AgentTakesNoDescriptorNumberFromTheProgram) {
  ServerInfo with, without;
  Process a = Start(ServerArgv(Kind(), dir_ / "with.ready"), dir_ / "with.ready", {Preload()},
                    &with, "/dev/null", Profile());
  ASSERT_TRUE(a.running());
  Process b = Start(ServerArgv(Kind(), dir_ / "without.ready"), dir_ / "without.ready", {},
                    &without, "/dev/null", Profile());
  ASSERT_TRUE(b.running());
  EXPECT_EQ(with.pipe, without.pipe);
  EXPECT_EQ(with.pipe, "3,4");
  // And the agent is there and serving, from outside the program's table:
  // the only socket the program sees is its own listener.
  RunResult r = RunCommand({MemtrimdBin(), "trim", "--pid", std::to_string(a.pid())});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  int sockets = 0;
  for (const std::string& open : OpenFiles(a.pid())) sockets += open.rfind("socket:", 0) == 0;
  EXPECT_EQ(sockets, 1);
}

// The program closes everything inherited (closefrom / os.closerange) and
// then listens; its listening socket may well get the number the agent's
// socket had. With memtrimd reading (malloc_info every 100 ms) and trimming
// (scheduled, and `memtrimd trim` between batches) the whole time, every one
// of 100 requests gets the program's answer, and the agent keeps serving.
TEST_P(AgentIsolationTest, ProgramThatClosesEverythingAnswersAllItsClients) {
  ServerInfo info;
  const std::string err = dir_ / "server.err";
  Process server = Start(ServerArgv(Kind(), dir_ / "server.ready"), dir_ / "server.ready",
                         {Preload()}, &info, err, Profile());
  ASSERT_TRUE(server.running()) << ReadFile(err);
  // The agent said nothing: it started.
  EXPECT_EQ(ReadFile(err), "");
  const std::string pid = std::to_string(server.pid());
  std::cout << Kind() << " server (" << Profile() << "): pipe " << info.pipe << ", listening on fd "
            << info.listen_fd << "\n";

  Memtrimd m({"--target.pid=" + pid, "--sample.interval=100ms", "--smaps.interval=100ms",
              "--trim.interval=200ms", "--trim.jitter=0", "--trim.max-interval=200ms",
              "--trim.floor=0"});
  ASSERT_TRUE(m.started()) << m.log();
  // memtrimd has talked to the agent before the first request. (EXPECT: the
  // requests below still show what a failure here did to the program.)
  EXPECT_TRUE(WaitFor(
      [&] {
        return Find(m.Scrape(), "memtrimd_collector_success", {"\"agent\""}).value_or(0) == 1.0;
      },
      20s))
      << m.log();

  int wrong = 0;
  int trims_ok = 0;
  for (int i = 0; i < 100; ++i) {
    if (i % 10 == 0) {
      RunResult r = RunCommand({MemtrimdBin(), "trim", "--pid", pid});
      if (r.exit_code == 0) {
        ++trims_ok;
      } else {
        ADD_FAILURE() << "trim " << i / 10 << ": " << r.err << r.out;
      }
    }
    std::string answer = Ask(info.port, i);
    if (answer != "program " + std::to_string(i) + "\n") {
      ++wrong;
      if (wrong <= 5) ADD_FAILURE() << "request " << i << " answered '" << answer << "'";
    }
  }
  std::cout << "requests answered by someone else: " << wrong << " of 100; trims " << trims_ok
            << " of 10\n";
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(trims_ok, 10);
  // The daemon's own reads kept succeeding too.
  EXPECT_EQ(Find(m.Scrape(), "memtrimd_collector_success", {"\"agent\""}), 1.0) << m.log();
  EXPECT_TRUE(server.running());
}

INSTANTIATE_TEST_SUITE_P(Servers, AgentIsolationTest,
                         ::testing::Combine(::testing::Values("c", "python"),
                                            ::testing::ValuesIn(kProfiles)),
                         [](const auto& p) {
                           return std::get<0>(p.param) + "_" + std::get<1>(p.param);
                         });

// Tests of one server, with and without the seccomp rules.
class AgentIsolationProfileTest : public AgentIsolation,
                                  public ::testing::WithParamInterface<std::string> {};

// The agent's private table holds copies of the program's descriptors until
// it closes them; POSIX record locks belong to the table that took them
// (Linux: the lock owner is the files_struct), so closing the copies must not
// release the program's lock. Here the agent is dlopen()ed while the program
// holds a write lock, so its start closes a copy of the locked file.
TEST_P(AgentIsolationProfileTest, ProgramKeepsItsRecordLocksWhenTheAgentStarts) {
  const std::string lock = dir_ / "locked";
  ServerInfo info;
  Process server = Start({WorkloadBin("closing_server"), "--ready-file", dir_ / "lock.ready",
                          "--lock", lock, "--dlopen", AGENT_LIB},
                         dir_ / "lock.ready", {}, &info, "/dev/null", GetParam());
  ASSERT_TRUE(server.running());
  int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  ASSERT_EQ(::fcntl(fd, F_GETLK, &fl), 0);
  ::close(fd);
  EXPECT_EQ(fl.l_type, F_WRLCK) << "the program's lock is gone";
  EXPECT_EQ(fl.l_pid, server.pid());
  // The dlopen()ed agent started (its constructor waited for its thread
  // inside dlopen without a deadlock) and serves.
  RunResult r = RunCommand({MemtrimdBin(), "trim", "--pid", std::to_string(server.pid())});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(Ask(info.port, 7), "program 7\n");
}

// dlclose() does not unload the agent (it pins itself with RTLD_NODELETE
// when it starts, agent_attach.c): its two tasks never
// end, so their code and the socket task's stack stay mapped, and it goes on
// serving after the program unloaded it.
TEST_P(AgentIsolationProfileTest, DlclosedAgentStaysAndServes) {
  ServerInfo info;
  const std::string err = dir_ / "dlclose.err";
  Process server = Start({WorkloadBin("closing_server"), "--ready-file", dir_ / "dlclose.ready",
                          "--dlopen", AGENT_LIB, "--dlclose"},
                         dir_ / "dlclose.ready", {}, &info, err, GetParam());
  ASSERT_TRUE(server.running()) << ReadFile(err);
  EXPECT_EQ(ReadFile(err), "");
  const std::string pid = std::to_string(server.pid());
  EXPECT_NE(ReadFile("/proc/" + pid + "/maps").find("libmemtrimd_agent.so"), std::string::npos);
  for (int i = 0; i < 3; ++i) {
    RunResult r = RunCommand({MemtrimdBin(), "trim", "--pid", pid});
    EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  }
  EXPECT_TRUE(server.running());
  EXPECT_EQ(Ask(info.port, 5), "program 5\n");
}

// The launcher's filter is real: under it unshare(1) is refused (the test
// runs as root, whom nothing else stops), and the process reports a filter.
// Under it the agent starts, says nothing, serves from a task of its own,
// and the program's descriptors are its own.
TEST_P(AgentIsolationProfileTest, AgentServesUnderTheProfileFromATaskOfItsOwn) {
  if (GetParam() == "runtime_default") {
    RunResult denied = RunCommand({WorkloadBin("runtime_default"), "unshare", "--ipc", "true"});
    EXPECT_NE(denied.exit_code, 0) << "unshare was not refused";
    if (IsRoot()) {
      EXPECT_EQ(RunCommand({"unshare", "--ipc", "true"}).exit_code, 0);
    }
  }
  ServerInfo info;
  const std::string err = dir_ / "server.err";
  Process server = Start({WorkloadBin("closing_server"), "--ready-file", dir_ / "p.ready"},
                         dir_ / "p.ready", {Preload()}, &info, err, GetParam());
  ASSERT_TRUE(server.running()) << ReadFile(err);
  const std::string pid = std::to_string(server.pid());
  const std::string status = ReadFile("/proc/" + pid + "/status");
  EXPECT_NE(status.find(GetParam() == "runtime_default" ? "Seccomp:\t2\n" : "Seccomp:\t0\n"),
            std::string::npos)
      << status;
  EXPECT_EQ(ReadFile(err), "");
  EXPECT_EQ(info.pipe, "3,4");
  EXPECT_TRUE(fs::exists(AgentSocketOf(server.pid())));

  // The agent's two tasks: the pthread shares the program's table (the same
  // descriptors as the main thread), the socket task has one of its own,
  // which holds the agent's listening socket and nothing of the program's.
  std::map<std::string, std::vector<std::string>> fds_of;
  for (const auto& task : fs::directory_iterator("/proc/" + pid + "/task")) {
    std::string comm = ReadFile(task.path() / "comm");
    std::vector<std::string> open;
    for (const auto& fd : fs::directory_iterator(task.path() / "fd")) {
      open.push_back(fd.path().filename().string() + " " + fs::read_symlink(fd.path()).string());
    }
    std::sort(open.begin(), open.end());
    fds_of[comm] = open;
  }
  ASSERT_EQ(fds_of.count("memtrimd-agent\n"), 1u);
  ASSERT_EQ(fds_of.count("memtrimd-sock\n"), 1u);
  ASSERT_EQ(fds_of.count("closing_server\n"), 1u);
  EXPECT_EQ(fds_of["memtrimd-agent\n"], fds_of["closing_server\n"]);
  const std::vector<std::string>& own = fds_of["memtrimd-sock\n"];
  ASSERT_EQ(own.size(), 1u) << ::testing::PrintToString(own);
  EXPECT_NE(own[0].find("socket:"), std::string::npos) << own[0];
  for (const std::string& fd : fds_of["closing_server\n"]) {
    EXPECT_NE(fd.substr(fd.find(' ')), own[0].substr(own[0].find(' ')))
        << "the agent's socket is in the program's table";
  }

  RunResult r = RunCommand({MemtrimdBin(), "trim", "--pid", pid});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(Ask(info.port, 3), "program 3\n");
}

INSTANTIATE_TEST_SUITE_P(Profiles, AgentIsolationProfileTest, ::testing::ValuesIn(kProfiles),
                         [](const auto& p) { return p.param; });

// An agent that is loaded but cannot start (here its socket's directory does
// not exist) says why once on the program's stderr, leaves the program
// untouched, and memtrimd says plainly that the loaded agent cannot be
// reached.
TEST_F(AgentIsolation, LoadedAgentThatCannotStartSaysWhyAndIsReportedUnreachable) {
  ServerInfo info;
  const std::string err = dir_ / "server.err";
  const std::string socket = dir_ / "missing/agent.sock";
  Process server =
      Start({WorkloadBin("closing_server"), "--ready-file", dir_ / "off.ready"}, dir_ / "off.ready",
            {Preload(), "MEMTRIMD_AGENT_SOCKET=" + socket}, &info, err);
  ASSERT_TRUE(server.running()) << ReadFile(err);
  EXPECT_EQ(info.pipe, "3,4");
  const std::string text = ReadFile(err);
  const std::string said = "memtrimd_agent: not started: cannot bind the socket path";
  std::size_t first = text.find(said);
  EXPECT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find(said, first + 1), std::string::npos) << "said more than once: " << text;

  const std::string pid = std::to_string(server.pid());
  RunResult inspect = RunCommand({MemtrimdBin(), "inspect", "--pid", pid});
  EXPECT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("backend: agent loaded but unreachable: agent: no socket at"),
            std::string::npos)
      << inspect.out;
  EXPECT_NE(inspect.out.find("(the agent did not start; it says why on the program's stderr"),
            std::string::npos)
      << inspect.out;
  RunResult json = RunCommand({MemtrimdBin(), "inspect", "--pid", pid, "--json"});
  EXPECT_NE(json.out.find("\"agent\":{\"reachable\":false,\"unreachable_reason\":\"agent: no "
                          "socket at"),
            std::string::npos)
      << json.out;
  RunResult trim = RunCommand({MemtrimdBin(), "trim", "--pid", pid});
  EXPECT_NE(trim.exit_code, 0);
  EXPECT_EQ(Ask(info.port, 1), "program 1\n");
}

}  // namespace
}  // namespace memtrimd::testing

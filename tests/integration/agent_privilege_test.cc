// The preload agent in programs that start as root and drop privileges
// (setuid to a service user, like mariadbd --user, nginx): memtrimd, as root
// or as the program's final uid, still trims them; a program that changes
// uid behind glibc's back is reported as unreachable, with the reason; a
// socket left by a killed process never stops a later process that gets the
// same pid; and a real mariadbd --user=mysql under sysbench is trimmed.
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;

// The effective uid of `pid` (second field of Uid: in its status).
std::optional<uid_t> Euid(pid_t pid) {
  std::istringstream in(ReadFile("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Uid:", 0) != 0) continue;
    std::istringstream f(line.substr(4));
    uid_t real = 0, effective = 0;
    if (f >> real >> effective) return effective;
  }
  return std::nullopt;
}

// SIGKILLs a process this test started indirectly (pid 1 of a pid namespace,
// whose parent-death signal its uid change cleared) when the test ends.
// Only while the pid is still that process (same start time).
struct KillOnExit {
  explicit KillOnExit(pid_t p) : pid(p), start(StartTicks(p)) {}
  ~KillOnExit() {
    if (pid > 0 && !start.empty() && StartTicks(pid) == start) ::kill(pid, SIGKILL);
  }
  pid_t pid;
  std::string start;
};

// The only child of `pid` (unshare --fork's child), or -1.
pid_t OnlyChild(pid_t pid) {
  std::istringstream in(
      ReadFile("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children"));
  pid_t child = -1;
  return in >> child ? child : -1;
}

// Sum of memtrimd_trim_runs_total over the series whose labels hold `label`.
double RunsWith(const Series& s, const std::string& label) {
  double sum = 0;
  for (const auto& [key, value] : s) {
    if (key.rfind("memtrimd_trim_runs_total{", 0) == 0 && key.find(label) != std::string::npos) {
      sum += value;
    }
  }
  return sum;
}

class AgentPrivilegeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!IsRoot()) GTEST_SKIP() << "needs root: the programs start as root and drop to a user";
    // Processes that run as other users write their ready files here.
    fs::permissions(dir_.path(), fs::perms::owner_all | fs::perms::group_read |
                                     fs::perms::group_exec | fs::perms::others_read |
                                     fs::perms::others_exec);
    shared_ = dir_ / "shared";
    fs::create_directory(shared_);
    fs::permissions(shared_, fs::perms::all);
  }

  void TearDown() override {
    for (pid_t pid : started_) RemoveStaleAgentSocket(pid);
  }

  static std::string Preload() { return std::string("LD_PRELOAD=") + AGENT_LIB; }

  // Waits until `ready` exists and `pid` runs as `uid`.
  static bool WaitReady(Process& p, pid_t pid, const std::string& ready, uid_t uid) {
    return WaitFor([&] { return (fs::exists(ready) && Euid(pid) == uid) || !p.running(); }, 30s) &&
           p.running();
  }

  static RunResult Trim(pid_t pid, std::optional<uid_t> as_uid = std::nullopt,
                        std::optional<gid_t> as_gid = std::nullopt) {
    SpawnOptions o;
    o.uid = as_uid;
    o.gid = as_gid;
    return RunCommand({MemtrimdBin(), "trim", "--pid", std::to_string(pid), "--json"}, o);
  }

  TempDir dir_;
  std::string shared_;
  std::vector<pid_t> started_;
};

// Started as root, setgid+setuid to nobody (through glibc, as servers do):
// the agent's socket follows to nobody, and both a root memtrimd and one
// running as nobody (a sidecar with the program's uid) trim it. The program
// sets itself dumpable, as nginx does, so that its own uid may read /proc.
TEST_F(AgentPrivilegeTest, ProgramThatDropsRootIsTrimmedByRootAndByItsOwnUid) {
  const std::string ready = dir_ / "drop.ready";
  SpawnOptions o;
  o.env = {Preload()};
  Process server({WorkloadBin("closing_server"), "--ready-file", ready, "--setgid",
                  std::to_string(kNogroup), "--setuid", std::to_string(kNobody), "--dumpable"},
                 o);
  started_.push_back(server.pid());
  ASSERT_TRUE(WaitReady(server, server.pid(), ready, kNobody));

  struct stat st;
  const std::string socket = AgentSocketOf(server.pid());
  ASSERT_EQ(::lstat(socket.c_str(), &st), 0) << socket;
  EXPECT_EQ(st.st_uid, kNobody);
  EXPECT_EQ(st.st_gid, kNogroup);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  RunResult as_root = Trim(server.pid());
  EXPECT_EQ(as_root.exit_code, 0) << as_root.err << as_root.out;
  EXPECT_NE(as_root.out.find("\"backend\":\"agent\""), std::string::npos) << as_root.out;
  RunResult as_nobody = Trim(server.pid(), kNobody, kNogroup);
  EXPECT_EQ(as_nobody.exit_code, 0) << as_nobody.err << as_nobody.out;

  RunResult inspect = RunCommand({MemtrimdBin(), "inspect", "--pid", std::to_string(server.pid())});
  EXPECT_NE(inspect.out.find("backend: agent (libmemtrimd_agent.so is loaded and answers)"),
            std::string::npos)
      << inspect.out;
}

// A program that changes uid with bare system calls (no glibc setuid, so the
// agent cannot hand its socket over): the socket stays root's. A root
// memtrimd still trims it (a root-owned file, served by the target's pid);
// memtrimd as the program's uid cannot connect, and inspect says so plainly
// instead of "agent (loaded)".
TEST_F(AgentPrivilegeTest, AgentThatCannotBeReachedIsReportedWithTheReason) {
  const std::string ready = dir_ / "raw.ready";
  SpawnOptions o;
  o.env = {Preload()};
  Process server(
      {WorkloadBin("closing_server"), "--ready-file", ready, "--setgid", std::to_string(kNogroup),
       "--setuid", std::to_string(kNobody), "--raw", "--dumpable"},
      o);
  started_.push_back(server.pid());
  ASSERT_TRUE(WaitReady(server, server.pid(), ready, kNobody));
  struct stat st;
  ASSERT_EQ(::lstat(AgentSocketOf(server.pid()).c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);

  RunResult as_root = Trim(server.pid());
  EXPECT_EQ(as_root.exit_code, 0) << as_root.err << as_root.out;

  SpawnOptions nobody;
  nobody.uid = kNobody;
  nobody.gid = kNogroup;
  RunResult inspect =
      RunCommand({MemtrimdBin(), "inspect", "--pid", std::to_string(server.pid())}, nobody);
  EXPECT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("backend: agent loaded but unreachable: agent: connect "),
            std::string::npos)
      << inspect.out;
  EXPECT_NE(inspect.out.find("permission denied"), std::string::npos) << inspect.out;
  EXPECT_EQ(inspect.out.find("backend: agent (libmemtrimd_agent.so"), std::string::npos)
      << inspect.out;
  RunResult trim = Trim(server.pid(), kNobody, kNogroup);
  EXPECT_NE(trim.exit_code, 0) << trim.out;
}

// Pid 1 of a fresh pid namespace, twice: the same pid for two processes, as
// pid reuse gives. The first drops root to nobody and is SIGKILLed, leaving
// its socket file (nobody's) in /tmp. The second runs as another uid from
// the start; it must still serve its agent, and memtrimd must trim it. (With
// a name by pid alone the second agent cannot remove the leftover of another
// uid from the sticky /tmp and does not start.)
TEST_F(AgentPrivilegeTest, LeftoverSocketOfAKilledProcessDoesNotStopTheNextWithItsPid) {
  auto start_in_new_pid_ns = [&](const std::string& ready, std::vector<std::string> run_as,
                                 std::vector<std::string> server_args, pid_t* server_pid) {
    std::vector<std::string> argv = {"unshare", "--pid", "--fork", "--mount-proc", "--kill-child"};
    argv.insert(argv.end(), run_as.begin(), run_as.end());
    argv.insert(argv.end(),
                {"env", Preload(), WorkloadBin("closing_server"), "--ready-file", ready});
    argv.insert(argv.end(), server_args.begin(), server_args.end());
    Process p(argv);
    WaitFor([&] { return OnlyChild(p.pid()) > 0 || !p.running(); }, 30s);
    *server_pid = OnlyChild(p.pid());
    started_.push_back(*server_pid);
    return p;
  };

  pid_t first = -1;
  const std::string first_ready = shared_ + "/first.ready";
  Process ns1 = start_in_new_pid_ns(
      first_ready, {}, {"--setgid", std::to_string(kNogroup), "--setuid", std::to_string(kNobody)},
      &first);
  ASSERT_GT(first, 0);
  KillOnExit kill_first(first);  // after ns1: runs before ns1's reaping
  if (!WaitReady(ns1, first, first_ready, kNobody)) {
    if (!ns1.running()) GTEST_SKIP() << "cannot make a pid namespace here";
    FAIL() << "the first server did not start";
  }
  ASSERT_EQ(NsPid(first), 1);
  const std::string leftover = "/tmp/.memtrimd_agent.1." + StartTicks(first);
  ScopedUnlink remove_leftover{leftover};
  ASSERT_TRUE(fs::is_socket(leftover)) << leftover;
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ASSERT_TRUE(ns1.Wait(30s).has_value());
  struct stat st;
  ASSERT_EQ(::lstat(leftover.c_str(), &st), 0) << "SIGKILL leaves the socket file";
  EXPECT_EQ(st.st_uid, kNobody);

  // uid 1 (daemon): neither root nor the leftover's owner.
  pid_t second = -1;
  const std::string second_ready = shared_ + "/second.ready";
  Process ns2 = start_in_new_pid_ns(
      second_ready, {"setpriv", "--reuid=1", "--regid=1", "--clear-groups"}, {}, &second);
  ASSERT_GT(second, 0);
  KillOnExit kill_second(second);
  ASSERT_TRUE(WaitReady(ns2, second, second_ready, 1));
  ASSERT_EQ(NsPid(second), 1);
  RunResult r = Trim(second);
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  const std::string own = "/tmp/.memtrimd_agent.1." + StartTicks(second);
  ScopedUnlink remove_own{own};
  EXPECT_NE(own, leftover);
  EXPECT_TRUE(fs::is_socket(own)) << own;
}

// A real Debian server: mariadbd --user=mysql (started as root, drops to
// mysql), with the agent preloaded, driven by sysbench while memtrimd reads
// and trims it on a short schedule. sysbench completes without errors, the
// trims succeed, and at a clean shutdown mariadbd (now mysql) removes its
// socket file itself.
TEST_F(AgentPrivilegeTest, MariadbWithUserMysqlIsTrimmedUnderSysbench) {
  const passwd* mysql = ::getpwnam("mysql");
  ASSERT_NE(mysql, nullptr) << "mariadb-server is not installed (scripts/install-deps.sh)";
  const uid_t mysql_uid = mysql->pw_uid;
  const gid_t mysql_gid = mysql->pw_gid;
  const std::string data = dir_ / "data";
  fs::create_directory(data);
  ASSERT_EQ(::chown(data.c_str(), mysql_uid, mysql_gid), 0);
  RunResult install =
      RunCommand({"mariadb-install-db", "--no-defaults", "--user=mysql", "--datadir=" + data,
                  "--auth-root-authentication-method=normal", "--skip-test-db"});
  ASSERT_EQ(install.exit_code, 0) << install.err << install.out;

  const std::string sock = data + "/mysqld.sock";
  SpawnOptions o;
  o.env = {Preload()};
  o.stderr_path = dir_ / "mariadbd.err";
  Process db(
      {"mariadbd", "--no-defaults", "--user=mysql", "--datadir=" + data, "--socket=" + sock,
       "--skip-networking", "--pid-file=" + data + "/mysqld.pid", "--innodb-buffer-pool-size=32M"},
      o);
  started_.push_back(db.pid());
  ASSERT_TRUE(
      WaitFor([&] { return (fs::is_socket(sock) && Euid(db.pid()) == mysql_uid) || !db.running(); },
              60s) &&
      db.running())
      << ReadFile(dir_ / "mariadbd.err");
  const std::string agent_socket = AgentSocketOf(db.pid());
  struct stat st;
  ASSERT_EQ(::lstat(agent_socket.c_str(), &st), 0) << agent_socket;
  EXPECT_EQ(st.st_uid, mysql_uid);

  RunResult created = RunCommand({"mariadb", "-S", sock, "-uroot", "-e", "CREATE DATABASE sbtest"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  const std::vector<std::string> sysbench = {
      "sysbench",          "oltp_read_write",   "--db-driver=mysql", "--mysql-socket=" + sock,
      "--mysql-user=root", "--mysql-db=sbtest", "--tables=1",        "--table-size=2000"};
  std::vector<std::string> prepare = sysbench;
  prepare.push_back("prepare");
  RunResult prepared = RunCommand(prepare);
  ASSERT_EQ(prepared.exit_code, 0) << prepared.err << prepared.out;

  Memtrimd m({"--target.pid=" + std::to_string(db.pid()), "--sample.interval=100ms",
              "--smaps.interval=200ms", "--trim.interval=200ms", "--trim.jitter=0",
              "--trim.max-interval=200ms", "--trim.floor=0"});
  ASSERT_TRUE(m.started()) << m.log();
  // Bounded by the number of transactions, not by time.
  std::vector<std::string> run = sysbench;
  run.insert(run.end(), {"--threads=4", "--events=2000", "--time=0", "run"});
  RunResult bench = RunCommand(run);
  RunResult manual = Trim(db.pid());
  const Series after = m.Scrape();
  EXPECT_EQ(bench.exit_code, 0) << bench.err << bench.out;
  EXPECT_TRUE(std::regex_search(bench.out, std::regex(R"(transactions:\s+2000\s)"))) << bench.out;
  EXPECT_EQ(bench.out.find("FATAL"), std::string::npos) << bench.out;
  EXPECT_EQ(bench.err.find("FATAL"), std::string::npos) << bench.err;
  EXPECT_EQ(manual.exit_code, 0) << manual.err << manual.out;
  const double scheduled = RunsWith(after, "result=\"success\"");
  const double failed = RunsWith(after, "result=\"failure\"");
  std::cout << "sysbench: " << bench.out.substr(bench.out.find("transactions:"), 120)
            << "\nscheduled trims: " << scheduled << " succeeded, " << failed << " failed\n";
  EXPECT_GE(scheduled, 1.0) << m.log();
  EXPECT_EQ(failed, 0.0) << m.log();
  EXPECT_EQ(Find(after, "memtrimd_collector_success", {"\"agent\""}), 1.0) << m.log();

  // A clean shutdown: mariadbd, running as mysql, removes the agent's file.
  EXPECT_EQ(db.Stop(SIGTERM, 60s), 0) << ReadFile(dir_ / "mariadbd.err");
  EXPECT_FALSE(fs::exists(agent_socket)) << agent_socket;
}

}  // namespace
}  // namespace memtrimd::testing

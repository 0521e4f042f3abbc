// Bad input: a one-line "memtrimd: ..." on stderr and exit code 2, never a
// crash and never a daemon left running.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

// A pid that is not in use now.
pid_t UnusedPid() {
  for (pid_t p = 4000000; p > 300000; p -= 7919) {
    if (access(("/proc/" + std::to_string(p)).c_str(), F_OK) != 0) return p;
  }
  return 4194301;
}

void ExpectUsageError(const std::vector<std::string>& args, const std::string& part) {
  std::vector<std::string> argv = {MemtrimdBin()};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = RunCommand(argv);
  EXPECT_EQ(r.exit_code, 2) << args.front() << "\n" << r.err;
  EXPECT_EQ(r.err.rfind("memtrimd: ", 0), 0u) << r.err;
  // Exactly one line.
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  EXPECT_NE(r.err.find(part), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(BadInput, UnknownFlag) { ExpectUsageError({"--target.pidd=1"}, "--target.pidd"); }

TEST(BadInput, MalformedDuration) {
  ExpectUsageError({"--sample.interval=5 seconds"}, "--sample.interval");
  ExpectUsageError({"--smaps.interval=1h-"}, "--smaps.interval");
}

TEST(BadInput, NonExistentPid) {
  std::string pid = std::to_string(UnusedPid());
  ExpectUsageError({"--target.pid=" + pid, "--web.listen-address=127.0.0.1:0"},
                   "no process with pid " + pid);
  ExpectUsageError({"inspect", "--pid", pid}, "no process with pid " + pid);
}

TEST(BadInput, NotAPid) { ExpectUsageError({"--target.pid=12abc"}, "not a process id"); }

TEST(BadInput, UnreadablePid) {
  if (!IsRoot()) GTEST_SKIP() << "needs root to run memtrimd as another user";
  // As nobody, root's init process cannot be read.
  std::vector<std::string> argv = {MemtrimdBin(), "inspect", "--pid", "1"};
  SpawnOptions o;
  o.uid = 65534;
  o.gid = 65534;
  RunResult r = RunCommand(argv, o);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cannot read /proc/1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("CAP_SYS_PTRACE"), std::string::npos) << r.err;
  argv = {MemtrimdBin(), "--target.pid=1", "--web.listen-address=127.0.0.1:0"};
  r = RunCommand(argv, o);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cannot read /proc/1"), std::string::npos) << r.err;
}

TEST(BadInput, PortInUse) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::string port = std::to_string(ntohs(addr.sin_port));
  ExpectUsageError(
      {"--target.pid=" + std::to_string(getpid()), "--web.listen-address=127.0.0.1:" + port},
      "cannot listen on 127.0.0.1:" + port);
  close(fd);
}

TEST(BadInput, InvalidRegexAndSizes) {
  ExpectUsageError({"--target.match=[unclosed"}, "--target.match");
  ExpectUsageError({"--target.memory-limit=1.5Gi"}, "--target.memory-limit");
  ExpectUsageError({"--glibc.heap-size=100"}, "--glibc.heap-size");
  ExpectUsageError({"--log.format=text"}, "--log.format");
}

TEST(BadInput, HelpAndVersionExitZero) {
  RunResult r = RunCommand({MemtrimdBin(), "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--sample.interval"), std::string::npos);
  r = RunCommand({MemtrimdBin(), "--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("memtrimd 0.", 0), 0u) << r.out;
}

// `memtrimd jcmd` runs in the launcher when the line is simple, and in the
// full program otherwise; both must give the same kind of answer.
TEST(BadInput, JcmdLines) {
  ExpectUsageError({"jcmd", "--pid", "x", "VM.version"}, "not a process id");
  ExpectUsageError({"jcmd", "--pid", std::to_string(UnusedPid()), "VM.version"},
                   "no process with pid");
  ExpectUsageError({"jcmd", "--pid=1"}, "no command given");
  ExpectUsageError({"jcmd", "--timeout", "0s", "--pid", "1", "VM.version"}, "--timeout");
  ExpectUsageError({"jcmd", "--pidd", "1", "VM.version"}, "--pid is required");
  RunResult r = RunCommand({MemtrimdBin(), "jcmd", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("--timeout"), std::string::npos) << r.out;
}

// The launcher alone, without memtrimd-daemon beside it: one clear line.
TEST(BadInput, LauncherWithoutFullProgram) {
  TempDir dir;
  std::string copy = dir / "memtrimd";
  WriteFile(copy, ReadFile(MemtrimdBin()));
  ASSERT_EQ(chmod(copy.c_str(), 0755), 0);
  RunResult r = RunCommand({copy, "--version"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("memtrimd: cannot run ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("memtrimd-daemon"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

// memtrimd-daemon without the web module beside it: fine without a web
// config, one clear line with one.
TEST(BadInput, WebConfigWithoutTheWebModule) {
  TempDir dir;
  std::string bin = MemtrimdBin();
  std::string daemon = bin.substr(0, bin.rfind('/')) + "/memtrimd-daemon";
  for (const std::string& from : {bin, daemon}) {
    std::string copy = dir / from.substr(from.rfind('/') + 1);
    WriteFile(copy, ReadFile(from));
    ASSERT_EQ(chmod(copy.c_str(), 0755), 0);
  }
  WriteFile(dir / "web.yml", "http_server_config:\n  headers:\n    X-Frame-Options: deny\n");
  RunResult r = RunCommand({dir / "memtrimd", "--web.config.file=" + (dir / "web.yml"),
                            "--target.pid=" + std::to_string(getpid())});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("memtrimd: --web.config.file: libmemtrimd_web.so is missing", 0), 0u)
      << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

}  // namespace
}  // namespace memtrimd::testing

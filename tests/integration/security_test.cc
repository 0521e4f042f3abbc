// Security: what memtrimd refuses, caps or never does when the target's side
// is hostile. Squatters at a real JVM's attach socket path (another uid; the
// right uid but another process), pre-planted symlinks at the attach trigger
// paths, answers and files larger than memtrimd's caps, and a check, under
// strace, that memtrimd starts no process.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>

#include "collectors/glibc/glibc_heap_collector.h"
#include "collectors/jvm/attach_client.h"
#include "collectors/procfs/target_reader.h"
#include "collectors/sample.h"
#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;

std::string Str(pid_t pid) { return std::to_string(pid); }

// The JVM's attach socket as memtrimd reaches it.
std::string AttachSocket(pid_t jvm) {
  return "/proc/" + Str(jvm) + "/root/tmp/.java_pid" + Str(NsPid(jvm));
}

RunResult Jcmd(pid_t pid, const std::vector<std::string>& command) {
  std::vector<std::string> argv = {MemtrimdBin(), "jcmd", "--pid", Str(pid)};
  argv.insert(argv.end(), command.begin(), command.end());
  return RunCommand(argv);
}

// Errors are one line on stderr, starting "memtrimd: ".
void ExpectOneLineError(const RunResult& r) {
  EXPECT_EQ(r.err.rfind("memtrimd: ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

// Starts tests/workloads/attach_server with `args` and waits until it
// listens (its ready file is written after bind, chmod and listen). The
// ready file goes to `ready_dir`, which its uid must be able to write.
Process StartAttachServer(std::vector<std::string> args, const std::string& ready_dir,
                          SpawnOptions o) {
  static int n = 0;
  const std::string ready = ready_dir + "/attach_server." + Str(++n) + ".ready";
  std::vector<std::string> argv = {WorkloadBin("attach_server"), "--ready-file", ready};
  argv.insert(argv.end(), args.begin(), args.end());
  Process p(argv, o);
  bool ok = WaitFor([&] { return fs::exists(ready) || !p.running(); }, 10s) && fs::exists(ready);
  if (!ok) p.Kill();
  return p;
}

// Connects to an attach_server and sends `word`; returns once the server
// logged it. The server takes one connection at a time, in order, so every
// connection made before this one is in its log by then.
bool Mark(const std::string& socket_path, const std::string& server_log, const std::string& word) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path)) return false;
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool sent =
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::send(fd, word.data(), word.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(word.size());
  ::shutdown(fd, SHUT_WR);
  bool logged =
      sent &&
      WaitFor([&] { return ReadFile(server_log).find("head=" + word + "\n") != std::string::npos; },
              10s);
  ::close(fd);
  return logged;
}

// The server log's "request" lines before the one of `word`.
std::vector<std::string> RequestsBefore(const std::string& server_log, const std::string& word) {
  std::vector<std::string> out;
  for (const std::string& line : Lines(ReadFile(server_log))) {
    if (line.rfind("request ", 0) != 0) continue;
    if (line.find("head=" + word) != std::string::npos) break;
    out.push_back(line);
  }
  return out;
}

bool ThreadDumped(const std::string& jvm_stdout) {
  return ReadFile(jvm_stdout).find("Full thread dump") != std::string::npos;
}

bool Java17Present() { return fs::exists(std::string(kJava17Home) + "/bin/java"); }

class SecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(WorkloadBin("attach_server"))) {
      GTEST_FAIL() << WorkloadBin("attach_server") << " is missing: build the attach_server target";
    }
  }

  // SIGKILLed JVMs leave their attach sockets in /tmp.
  void TearDown() override {
    for (pid_t pid : jvms_) {
      if (::kill(pid, 0) != 0) RemoveStaleJvmSocket(pid);
    }
  }

  Process StartJava(std::vector<std::string> flags, SpawnOptions o = {},
                    const std::string& java_home = kJava17Home) {
    Process p = StartJvm(dir_, std::move(flags), "NativeChurn", {"--threads", "1", "--quiet"}, o,
                         java_home);
    jvms_.push_back(p.pid());
    return p;
  }

  // A fresh JVM: no attach listener yet (nothing has asked for one).
  Process StartFreshJvm(SpawnOptions o = {}, const std::string& java_home = kJava17Home) {
    if (o.stdout_path == "/dev/null") o.stdout_path = dir_ / ("jvm." + Str(++count_) + ".out");
    jvm_stdout_ = o.stdout_path;
    return StartJava({}, o, java_home);
  }

  TempDir dir_;
  std::string jvm_stdout_;
  int count_ = 0;
  std::vector<pid_t> jvms_;
};

TEST_F(SecurityTest, SquatterOfAnotherUidAtTheJvmSocketIsNeverContacted) {
  if (!IsRoot()) GTEST_SKIP() << "needs root to run a squatter as uid " << kNobody;
  if (!Java17Present()) GTEST_SKIP() << "no JDK 17";
  Process jvm = StartFreshJvm();
  ASSERT_TRUE(jvm.running());
  // The squatter binds the JVM's path in the JVM's /tmp, which is ours here.
  struct stat ours, theirs;
  ASSERT_EQ(::stat("/tmp", &ours), 0);
  ASSERT_EQ(::stat(("/proc/" + Str(jvm.pid()) + "/root/tmp").c_str(), &theirs), 0);
  if (ours.st_dev != theirs.st_dev || ours.st_ino != theirs.st_ino) {
    GTEST_SKIP() << "the JVM has a /tmp of its own";
  }
  const std::string path = "/tmp/.java_pid" + Str(NsPid(jvm.pid()));
  ASSERT_FALSE(fs::exists(path)) << "a fresh JVM has no attach listener";
  ScopedUnlink cleanup{path};
  SpawnOptions o;
  o.uid = kNobody;
  o.gid = kNobody;
  o.stdout_path = dir_ / "squatter.out";
  const std::string shared = dir_ / "shared";  // where uid 65534 may write its ready file
  fs::create_directory(shared);
  fs::permissions(shared, fs::perms::all);
  Process squatter = StartAttachServer({"--path", path, "--mode", "600"}, shared, o);
  ASSERT_TRUE(squatter.running());
  struct stat st;
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  ASSERT_TRUE(S_ISSOCK(st.st_mode));
  ASSERT_EQ(st.st_uid, kNobody);

  RunResult r = Jcmd(jvm.pid(), {"VM.version"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  ExpectOneLineError(r);
  EXPECT_NE(r.err.find("is owned by uid 65534"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  // memtrimd did not even connect: the first connection the squatter saw is
  // the test's marker.
  ASSERT_TRUE(Mark(path, o.stdout_path, "MARK1")) << ReadFile(o.stdout_path);
  EXPECT_TRUE(RequestsBefore(o.stdout_path, "MARK1").empty()) << ReadFile(o.stdout_path);
  // And the JVM was not signalled (no thread dump, no listener of its own).
  EXPECT_TRUE(jvm.running());
  EXPECT_FALSE(ThreadDumped(jvm_stdout_));

  // The daemon refuses it the same way, and says so.
  Memtrimd m({"--target.pid=" + Str(jvm.pid()), "--sample.interval=200ms", "--jvm.interval=300ms",
              "--trim.interval=0"});
  ASSERT_TRUE(m.started()) << m.log();
  Series s;
  ASSERT_TRUE(WaitFor(
      [&] { return (s = m.Scrape(), Find(s, "memtrimd_jvm_attachable").has_value()); }, 20s))
      << m.log();
  EXPECT_EQ(Find(s, "memtrimd_jvm_attachable"), 0.0);
  EXPECT_EQ(Find(s, "memtrimd_collector_success", {"\"jvm\""}), 0.0);
  EXPECT_NE(Curl(m.url("/report")).body.find("is owned by uid 65534"), std::string::npos);
  ASSERT_TRUE(Mark(path, o.stdout_path, "MARK2"));
  std::vector<std::string> before = RequestsBefore(o.stdout_path, "MARK2");
  ASSERT_EQ(before.size(), 1u) << ReadFile(o.stdout_path);  // MARK1 only
  EXPECT_FALSE(ThreadDumped(jvm_stdout_));
  EXPECT_TRUE(jvm.running());
}

TEST_F(SecurityTest, SquatterOfTheJvmsUidServedByAnotherProcessIsRefused) {
  if (!Java17Present()) GTEST_SKIP() << "no JDK 17";
  Process jvm = StartFreshJvm();
  ASSERT_TRUE(jvm.running());
  const std::string path = AttachSocket(jvm.pid());
  ASSERT_FALSE(fs::exists(path)) << "a fresh JVM has no attach listener";
  ScopedUnlink cleanup{path};
  // Same uid as the JVM (this test's), mode 0600: only the peer check is left.
  SpawnOptions o;
  o.stdout_path = dir_ / "squatter.out";
  Process squatter = StartAttachServer({"--path", path, "--mode", "600"}, dir_.path(), o);
  ASSERT_TRUE(squatter.running());

  RunResult r = Jcmd(jvm.pid(), {"VM.version"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  ExpectOneLineError(r);
  EXPECT_NE(
      r.err.find("served by pid " + Str(squatter.pid()) + ", not the target " + Str(jvm.pid())),
      std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  // memtrimd connected (that is how it learns the peer) but sent nothing:
  // the command never reached the squatter.
  ASSERT_TRUE(Mark(path, o.stdout_path, "MARK1")) << ReadFile(o.stdout_path);
  std::vector<std::string> before = RequestsBefore(o.stdout_path, "MARK1");
  ASSERT_EQ(before.size(), 1u) << ReadFile(o.stdout_path);
  EXPECT_EQ(before[0], "request bytes=0 head=");
  EXPECT_TRUE(jvm.running());
  EXPECT_FALSE(ThreadDumped(jvm_stdout_));

  Memtrimd m({"--target.pid=" + Str(jvm.pid()), "--sample.interval=200ms", "--jvm.interval=300ms",
              "--trim.interval=0"});
  ASSERT_TRUE(m.started()) << m.log();
  Series s;
  ASSERT_TRUE(WaitFor(
      [&] { return (s = m.Scrape(), Find(s, "memtrimd_jvm_attachable").has_value()); }, 20s))
      << m.log();
  EXPECT_EQ(Find(s, "memtrimd_jvm_attachable"), 0.0);
  EXPECT_NE(Curl(m.url("/report")).body.find("served by pid " + Str(squatter.pid())),
            std::string::npos);
  ASSERT_TRUE(Mark(path, o.stdout_path, "MARK2"));
  for (const std::string& line : RequestsBefore(o.stdout_path, "MARK2")) {
    if (line.find("MARK1") != std::string::npos) continue;
    EXPECT_EQ(line, "request bytes=0 head=") << "the daemon sent the squatter a command";
  }
  EXPECT_FALSE(ThreadDumped(jvm_stdout_));
}

struct FileFacts {
  std::string content;
  struct stat st {};
};

FileFacts FactsOf(const std::string& path) {
  FileFacts f;
  f.content = ReadFile(path);
  EXPECT_EQ(::stat(path.c_str(), &f.st), 0) << path;
  return f;
}

void ExpectUntouched(const FileFacts& before, const std::string& path) {
  FileFacts after = FactsOf(path);
  EXPECT_EQ(after.content, before.content) << path;
  EXPECT_EQ(after.st.st_size, before.st.st_size);
  EXPECT_EQ(after.st.st_mode, before.st.st_mode);
  EXPECT_EQ(after.st.st_uid, before.st.st_uid);
  EXPECT_EQ(after.st.st_mtim.tv_sec, before.st.st_mtim.tv_sec);
  EXPECT_EQ(after.st.st_mtim.tv_nsec, before.st.st_mtim.tv_nsec);
  EXPECT_EQ(after.st.st_nlink, before.st.st_nlink);
}

TEST_F(SecurityTest, TriggerSymlinkInTheJvmsWorkingDirectoryIsNotFollowed) {
  if (!Java17Present()) GTEST_SKIP() << "no JDK 17";
  const std::string cwd = dir_ / "cwd";
  fs::create_directory(cwd);
  // A file the test owns, with an old mtime so a touch would show.
  const std::string victim = dir_ / "victim";
  WriteFile(victim, "precious\n");
  ASSERT_EQ(::chmod(victim.c_str(), 0640), 0);
  timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, victim.c_str(), old, 0), 0);
  const FileFacts before = FactsOf(victim);

  SpawnOptions o;
  o.cwd = cwd;
  Process jvm = StartFreshJvm(o);
  ASSERT_TRUE(jvm.running());
  const std::string name = ".attach_pid" + Str(NsPid(jvm.pid()));
  const std::string link = cwd + "/" + name;
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  const std::string tmp_trigger = "/proc/" + Str(jvm.pid()) + "/root/tmp/" + name;
  ScopedUnlink cleanup{tmp_trigger};
  ASSERT_FALSE(fs::exists(tmp_trigger));

  // memtrimd will not open the symlink. HotSpot would follow it, and stop
  // there: what it finds decides whether a SIGQUIT starts the listener or
  // prints a thread dump, so memtrimd does not signal, and makes no trigger
  // file of its own in the JVM's /tmp, where HotSpot would not look.
  RunResult r = Jcmd(jvm.pid(), {"VM.version"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find(name + " exists and is not a regular file"), std::string::npos) << r.err;
  ExpectUntouched(before, victim);
  std::error_code ec;
  EXPECT_EQ(fs::read_symlink(link, ec), fs::path(victim))
      << "the planted link is not memtrimd's to remove: " << ec.message();
  EXPECT_FALSE(fs::exists(fs::symlink_status(tmp_trigger)));
  EXPECT_TRUE(jvm.running());
  EXPECT_FALSE(ThreadDumped(jvm_stdout_));
}

TEST_F(SecurityTest, DanglingTriggerSymlinksAreNotFollowedAndNothingIsSignalled) {
  if (!Java17Present()) GTEST_SKIP() << "no JDK 17";
  const std::string cwd = dir_ / "cwd";
  fs::create_directory(cwd);
  SpawnOptions o;
  o.cwd = cwd;
  Process jvm = StartFreshJvm(o);
  ASSERT_TRUE(jvm.running());
  const std::string name = ".attach_pid" + Str(NsPid(jvm.pid()));
  // Both places memtrimd may create the trigger hold a symlink to a file
  // that does not exist: following either would create it.
  const std::string via_cwd = dir_ / "created-through-cwd";
  const std::string via_tmp = dir_ / "created-through-tmp";
  const std::string cwd_link = cwd + "/" + name;
  const std::string tmp_link = "/proc/" + Str(jvm.pid()) + "/root/tmp/" + name;
  ASSERT_FALSE(fs::exists(fs::symlink_status(tmp_link)));
  ScopedUnlink cleanup{tmp_link};
  ASSERT_EQ(::symlink(via_cwd.c_str(), cwd_link.c_str()), 0);
  ASSERT_EQ(::symlink(via_tmp.c_str(), tmp_link.c_str()), 0);

  RunResult r = Jcmd(jvm.pid(), {"VM.version"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  ExpectOneLineError(r);
  EXPECT_NE(r.err.find(name), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("File exists"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(fs::symlink_status(via_cwd)));
  EXPECT_FALSE(fs::exists(fs::symlink_status(via_tmp)));
  EXPECT_TRUE(fs::is_symlink(cwd_link));
  EXPECT_TRUE(fs::is_symlink(tmp_link));
  // No trigger file, so no signal: a SIGQUIT would have printed a thread dump.
  EXPECT_TRUE(jvm.running());
  EXPECT_FALSE(ThreadDumped(jvm_stdout_));
  EXPECT_FALSE(fs::exists(AttachSocket(jvm.pid())));
}

// A process that looks like a HotSpot JVM (a file named libjvm.so mapped)
// and serves its own /tmp/.java_pid<pid>: it passes every check of the
// socket, so the size cap is what is left.
class FakeJvm {
 public:
  FakeJvm(const TempDir& dir, long long answer_bytes) {
    static int n = 0;
    const std::string sub = dir / ("fake-jvm." + Str(++n));
    fs::create_directory(sub);
    log_ = sub + "/server.out";
    const std::string ready = sub + "/ready";
    pause_ = sub + "/pause";
    SpawnOptions o;
    o.stdout_path = log_;
    process_ = Process({WorkloadBin("attach_server"), "--path", "/tmp/.java_pid%p", "--fake-libjvm",
                        sub, "--answer-bytes", std::to_string(answer_bytes), "--ready-file", ready,
                        "--pause-file", pause_},
                       o);
    WaitFor([&] { return fs::exists(ready) || !process_.running(); }, 10s);
    cleanup_.path = "/tmp/.java_pid" + Str(process_.pid());
  }
  pid_t pid() const { return process_.pid(); }
  bool running() { return process_.running() && fs::exists(cleanup_.path); }
  // Answers sent so far.
  std::size_t answers() const { return LogLines("answered "); }
  // Stops answering once the answer being sent is over, so that no client is
  // in the middle of reading one; false if it did not stop within the time.
  bool Pause(std::chrono::milliseconds timeout) {
    const std::size_t before = LogLines("paused");
    WriteFile(pause_, "");
    return WaitFor([&] { return LogLines("paused") > before; }, timeout);
  }
  void Resume() { fs::remove(pause_); }

 private:
  std::size_t LogLines(std::string_view prefix) const {
    std::size_t count = 0;
    for (const std::string& line : Lines(ReadFile(log_))) count += line.rfind(prefix, 0) == 0;
    return count;
  }

  std::string log_;
  std::string pause_;
  Process process_;
  ScopedUnlink cleanup_;
};

TEST_F(SecurityTest, AttachAnswerOverTheCapIsAClearErrorAtTheExactBoundary) {
  const std::size_t cap = jvm::AttachOptions{}.max_response_bytes;
  ASSERT_EQ(cap, 4u << 20);
  // The whole answer counts: "0\n" and the body. Exactly the cap is fine.
  {
    FakeJvm fake(dir_, static_cast<long long>(cap) - 2);
    ASSERT_TRUE(fake.running());
    RunResult r = Jcmd(fake.pid(), {"VM.version"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.size(), cap - 2);
  }
  // One byte more, and an answer that never ends: the same clear error (not
  // the deadline, which is what reading without a cap would end in).
  for (long long body : {static_cast<long long>(cap) - 1, -1LL}) {
    SCOPED_TRACE(body);
    FakeJvm fake(dir_, body);
    ASSERT_TRUE(fake.running());
    RunResult r = Jcmd(fake.pid(), {"VM.version"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err, "memtrimd: pid " + Str(fake.pid()) + ": attach: answer larger than " +
                         std::to_string(cap) + " bytes\n");
    EXPECT_TRUE(r.out.empty()) << r.out.size() << " bytes printed";
  }
}

TEST_F(SecurityTest, DaemonMemoryStaysFlatAgainstAJvmThatAnswersWithoutEnd) {
  FakeJvm fake(dir_, -1);
  ASSERT_TRUE(fake.running());
  Memtrimd m({"--target.pid=" + Str(fake.pid()), "--sample.interval=100ms", "--jvm.interval=100ms",
              "--smaps.interval=10s", "--trim.interval=0"});
  ASSERT_TRUE(m.started()) << m.log();
  const pid_t self = m.process().pid();
  ASSERT_TRUE(WaitFor([&] { return fake.answers() >= 5; }, 20s)) << m.log();
  Series s = m.Scrape();
  EXPECT_EQ(Find(s, "memtrimd_jvm_attachable"), 0.0);
  EXPECT_EQ(Find(s, "memtrimd_collector_success", {"\"jvm\""}), 0.0);
  EXPECT_NE(Curl(m.url("/report")).body.find("answer larger than 4194304 bytes"),
            std::string::npos);
  // Each attempt reads up to the 4 MiB cap and drops it. After the first few
  // (glibc has raised its mmap threshold and keeps one such buffer's pages
  // in memtrimd's arena) 40 more must not add up. RSS is read while the fake
  // answers nothing: on a busy machine the attempts follow each other
  // without a gap, and the answer half read at any moment (up to 4 MiB) is
  // not what this test measures.
  const auto quiet_rss = [&] {
    // Two ticks after the pause: each ends with memtrimd's own malloc_trim.
    const double samples = Find(m.Scrape(), "memtrimd_samples_total").value_or(0);
    EXPECT_TRUE(WaitFor(
        [&] { return Find(m.Scrape(), "memtrimd_samples_total").value_or(0) >= samples + 2; },
        10s));
    return StatusValue(self, "VmRSS").value_or(UINT64_MAX);
  };
  const std::size_t fds_before = CountFds(self);
  const uint64_t threads_before = StatusValue(self, "Threads").value_or(0);
  ASSERT_TRUE(fake.Pause(20s)) << m.log();
  const uint64_t rss_before = quiet_rss();
  const std::size_t answers_before = fake.answers();
  fake.Resume();
  ASSERT_TRUE(WaitFor([&] { return fake.answers() >= answers_before + 40; }, 60s)) << m.log();
  EXPECT_TRUE(m.process().running());
  EXPECT_EQ(Curl(m.url()).status, 200);
  // Descriptors and threads come back to where they were (a sample may hold
  // a socket open, and a target's read runs on a thread of its own, at any
  // one moment).
  EXPECT_TRUE(WaitFor([&] { return CountFds(self) <= fds_before; }, 10s))
      << CountFds(self) << " fds, was " << fds_before;
  EXPECT_TRUE(
      WaitFor([&] { return StatusValue(self, "Threads").value_or(0) <= threads_before; }, 10s))
      << StatusValue(self, "Threads").value_or(0) << " threads, was " << threads_before;
  if (RunsWithAsan(self)) {
    std::cout << "memtrimd runs with AddressSanitizer: its quarantine keeps freed memory, "
                 "RSS not compared\n";
    return;
  }
  // 1 MiB: room for what one more sample, scrape and log line may leave in
  // glibc's free lists; a 4 MiB answer kept per attempt would be 160 MiB.
  ASSERT_TRUE(fake.Pause(20s)) << m.log();
  uint64_t rss_after = 0;
  EXPECT_TRUE(WaitFor(
      [&] {
        rss_after = quiet_rss();
        return rss_after <= rss_before + 1024;
      },
      10s))
      << "VmRSS " << rss_before << " kB -> " << rss_after << " kB";
}

TEST_F(SecurityTest, SmapsOverTheReadersCapIsRefusedWithAClearError) {
  // A real smaps cannot reach the daemon's 256 MiB cap (65,530 mappings, the
  // default vm.max_map_count, is ~80 MiB of smaps), so the collector runs
  // here with a lowered cap against a real process with many mappings.
  const std::string bin = WorkloadBin("many_mappings");
  ASSERT_TRUE(fs::exists(bin)) << bin << " is missing: build the many_mappings target";
  const std::string ready = dir_ / "mappings.ready";
  Process p({bin, "--mappings", "20000", "--quiet", "--ready-file", ready});
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready) || !p.running(); }, 30s) && p.running());
  Result<Target> t = procfs::ReadTarget("/proc", p.pid());
  ASSERT_TRUE(t.ok()) << t.status().message();
  const std::size_t cap = 1u << 20;
  ASSERT_GT(ReadFile("/proc/" + Str(p.pid()) + "/smaps").size(), 4 * cap);

  glibc::GlibcHeapOptions small;
  small.max_smaps_bytes = cap;
  glibc::GlibcHeapCollector capped(small);
  TargetSample s;
  Status st = capped.Collect(*t, s);
  EXPECT_EQ(st.code(), ErrorCode::kTooLarge) << st.message();
  EXPECT_EQ(st.message(), "/proc/" + Str(p.pid()) + "/smaps is larger than the cap of " +
                              std::to_string(cap) + " bytes");
  EXPECT_FALSE(s.glibc.has_value()) << "nothing half-read is reported";
  // The same collector with the default cap reads it all: the cap was the
  // only difference.
  glibc::GlibcHeapCollector normal({});
  TargetSample full;
  Status ok = normal.Collect(*t, full);
  ASSERT_TRUE(ok.ok()) << ok.message();
  ASSERT_TRUE(full.glibc.has_value());
  EXPECT_GE(full.glibc->mappings, 20000u);
}

TEST_F(SecurityTest, EnvironmentOverTheReadCapMeansNoSignalAndSaysWhy) {
  if (!Java17Present()) GTEST_SKIP() << "no JDK 17";
  // memtrimd reads the JVM's environment (JAVA_TOOL_OPTIONS may hold
  // -XX:+DisableAttachMechanism) with a 1 MiB cap; one string may be at most
  // 128 KiB, so ten of 120 KiB make 1.2 MiB.
  SpawnOptions o;
  for (char c = 'A'; c < 'A' + 10; ++c) {
    o.env.push_back(std::string("MEMTRIMD_TEST_BIG_") + c + "=" + std::string(120 * 1024, 'x'));
  }
  // Without hsperfdata (the JVM's own verdict) memtrimd needs the environment.
  o.stdout_path = dir_ / "jvm.out";
  jvm_stdout_ = o.stdout_path;
  Process jvm = StartJava({"-XX:-UsePerfData"}, o);
  ASSERT_TRUE(jvm.running());
  const std::string environ = "/proc/" + Str(jvm.pid()) + "/environ";
  ASSERT_GT(ReadFile(environ).size(), 1u << 20);
  RunResult r = Jcmd(jvm.pid(), {"VM.version"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  ExpectOneLineError(r);
  EXPECT_NE(r.err.find("not signalling"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(environ + " is larger than 1048576 bytes"), std::string::npos) << r.err;
  EXPECT_TRUE(jvm.running());
  EXPECT_FALSE(ThreadDumped(jvm_stdout_));
  EXPECT_FALSE(fs::exists(AttachSocket(jvm.pid())));
}

// ---- memtrimd starts no processes -------------------------------------------

struct TraceLine {
  pid_t pid = 0;
  std::string call;  // "execve(...) = 0" and the like, without the pid
};

std::vector<TraceLine> ReadTrace(const std::string& path) {
  std::vector<TraceLine> out;
  std::regex re(R"(^(\d+)\s+(.*)$)");
  for (const std::string& line : Lines(ReadFile(path))) {
    std::smatch m;
    if (std::regex_match(line, m, re)) out.push_back({std::stoi(m[1]), m[2]});
  }
  return out;
}

bool Starts(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Checks a `strace -f -e trace=process` log of memtrimd: every clone makes a
// thread, nothing forks, the only execs are `expected_execs` (in order, by
// file name), all in the first process; signals go only to `signalled` with
// SIGQUIT. Returns the number of signals sent.
int ExpectNoProcessStarted(const std::string& trace, const std::vector<std::string>& expected_execs,
                           pid_t signalled = 0) {
  SCOPED_TRACE(trace);
  std::vector<TraceLine> lines = ReadTrace(trace);
  EXPECT_FALSE(lines.empty()) << ReadFile(trace);
  if (lines.empty()) return 0;
  int signals = 0;
  const pid_t main_pid = lines.front().pid;
  std::vector<std::string> execs;
  int threads = 0;
  // pidfds open on `signalled` ("pidfd_open(<pid>, 0)   = <fd>"): a signal
  // sent through one of them goes to that process.
  std::set<std::string> pidfds;
  const std::string pidfd_open = "pidfd_open(" + Str(signalled) + ", 0)";
  for (const TraceLine& l : lines) {
    const std::string& c = l.call;
    if (Starts(c, pidfd_open) && c.rfind(" = ") != std::string::npos) {
      pidfds.insert(c.substr(c.rfind(" = ") + 3));
    }
    if (Starts(c, "fork(") || Starts(c, "vfork(")) ADD_FAILURE() << "forked: " << c;
    if (Starts(c, "clone(") || Starts(c, "clone3(")) {
      if (c.find("CLONE_THREAD") == std::string::npos) {
        ADD_FAILURE() << "a clone that is not a thread: " << c;
      } else {
        ++threads;
      }
    }
    if (Starts(c, "execve(") || Starts(c, "execveat(")) {
      EXPECT_EQ(l.pid, main_pid) << "exec in another process: " << c;
      std::smatch m;
      if (std::regex_search(c, m, std::regex(R"re(^execve\("([^"]*)")re"))) {
        execs.push_back(fs::path(m[1].str()).filename().string());
      } else {
        execs.push_back(c);
      }
    }
    for (const char* sig :
         {"kill(", "tkill(", "tgkill(", "rt_sigqueueinfo(", "pidfd_send_signal("}) {
      if (!Starts(c, sig)) continue;
      ++signals;
      bool to_the_jvm = Starts(c, "kill(" + Str(signalled) + ", SIGQUIT)");
      for (const std::string& fd : pidfds) {
        to_the_jvm = to_the_jvm || Starts(c, "pidfd_send_signal(" + fd + ", SIGQUIT, NULL, 0)");
      }
      EXPECT_TRUE(to_the_jvm) << "memtrimd sent a signal: " << c;
    }
  }
  EXPECT_EQ(execs, expected_execs);
  std::cout << fs::path(trace).filename().string() << ": " << execs.size() << " exec, " << threads
            << " threads started, " << signals << " signals sent, no process\n";
  return signals;
}

TEST_F(SecurityTest, MemtrimdStartsNoProcesses) {
  if (!Java17Present()) GTEST_SKIP() << "no JDK 17";
  if (RunCommand({"strace", "-V"}).exit_code != 0) GTEST_SKIP() << "no strace";
  Process jvm = StartJava({"-XX:NativeMemoryTracking=summary"});
  ASSERT_TRUE(jvm.running());
  SpawnOptions agent;
  agent.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Process frag =
      StartFragmenter(dir_, {"--threads", "2", "--rounds", "1", "--burst-mib", "4"}, "", agent);
  ASSERT_TRUE(frag.running());
  const std::vector<std::string> strace = {
      "strace", "-f", "--seccomp-bpf", "-e", "trace=process,pidfd_open", "-o"};
  // LeakSanitizer cannot run under ptrace (the asan preset's memtrimd).
  const char* asan = std::getenv("ASAN_OPTIONS");
  SpawnOptions no_lsan;
  no_lsan.env = {std::string("ASAN_OPTIONS=") + (asan != nullptr ? asan : "") + ":detect_leaks=0"};
  auto traced = [&](const std::string& name, std::vector<std::string> args) {
    std::vector<std::string> argv = strace;
    argv.push_back(dir_ / name);
    argv.push_back(MemtrimdBin());
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, no_lsan);
  };
  // The JVM has no listener yet: this jcmd starts it (trigger file, SIGQUIT),
  // in the launcher itself.
  RunResult jcmd = traced("jcmd.trace", {"jcmd", "--pid", Str(jvm.pid()), "VM.version"});
  ASSERT_EQ(jcmd.exit_code, 0) << jcmd.err;
  EXPECT_GE(ExpectNoProcessStarted(dir_ / "jcmd.trace", {"memtrimd"}, jvm.pid()), 1)
      << "the trace shows the SIGQUIT that started the listener";
  RunResult inspect = traced("inspect.trace", {"inspect", "--pid", Str(jvm.pid())});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  ExpectNoProcessStarted(dir_ / "inspect.trace", {"memtrimd", "memtrimd-daemon"}, jvm.pid());
  RunResult jvm_trim = traced("trim-jvm.trace", {"trim", "--pid", Str(jvm.pid())});
  ASSERT_EQ(jvm_trim.exit_code, 0) << jvm_trim.out << jvm_trim.err;
  ExpectNoProcessStarted(dir_ / "trim-jvm.trace", {"memtrimd", "memtrimd-daemon"}, jvm.pid());
  RunResult agent_trim = traced("trim-agent.trace", {"trim", "--pid", Str(frag.pid())});
  ASSERT_EQ(agent_trim.exit_code, 0) << agent_trim.out << agent_trim.err;
  ExpectNoProcessStarted(dir_ / "trim-agent.trace", {"memtrimd", "memtrimd-daemon"});

  // The daemon, watching the JVM (attach commands every 500 ms, a trim every
  // second) while it is scraped. strace -D: memtrimd keeps the pid the
  // harness started, so the harness can stop and kill it by pid.
  const std::string trace = dir_ / "daemon.trace";
  std::vector<std::string> wrapper = {"strace", "-D"};
  wrapper.insert(wrapper.end(), strace.begin() + 1, strace.end());
  wrapper.push_back(trace);
  Memtrimd m(WrapWith{wrapper},
             {"--target.pid=" + Str(jvm.pid()), "--sample.interval=200ms", "--jvm.interval=500ms",
              "--smaps.interval=500ms", "--trim.interval=1s", "--trim.jitter=0"},
             no_lsan);
  ASSERT_TRUE(m.started()) << m.log();
  ASSERT_TRUE(WaitFor(
      [&] {
        Series s = m.Scrape();
        return Find(s, "memtrimd_collector_success", {"\"jvm\""}) == 1.0 &&
               Find(s, "memtrimd_trim_runs_total", {"success", "scheduled"}).value_or(0) >= 1;
      },
      30s))
      << m.log();
  EXPECT_EQ(Curl(m.url("/report")).status, 200);
  const pid_t daemon = m.process().pid();
  ASSERT_EQ(m.process().Stop(SIGTERM, 20s), 0) << m.log();
  // strace writes the last lines after its tracee is gone.
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const TraceLine& l : ReadTrace(trace)) {
          if (l.pid == daemon && l.call == "+++ exited with 0 +++") return true;
        }
        return false;
      },
      10s))
      << ReadFile(trace);
  ExpectNoProcessStarted(trace, {"memtrimd", "memtrimd-daemon"}, jvm.pid());
  EXPECT_EQ(ReadTrace(trace).front().pid, daemon);
}

// A trigger file planted by another user where the JVM looks first. HotSpot
// honours .attach_pid<pid> only when its owner is the JVM's effective uid or
// root (AttachListener::is_init_trigger), and a SIGQUIT without one it
// honours prints a thread dump: memtrimd must not take such a file as its
// own, and must say why it did not signal.
// The trigger-file tests run on every JDK found: which files HotSpot
// honours is its rule, checked again on each.
class TriggerFileTest : public SecurityTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(TriggerFileTest, PlantedByAnotherUserIsNotUsedAndNothingIsSignalled) {
  if (!IsRoot()) GTEST_SKIP() << "needs root to act as uid " << kNobody;
  const std::string cwd = dir_ / "cwd";
  fs::create_directory(cwd);
  fs::permissions(cwd, fs::perms::all | fs::perms::sticky_bit);  // as /tmp is
  SpawnOptions o;
  o.cwd = cwd;
  Process jvm = StartFreshJvm(o, GetParam());  // the test's uid: root
  ASSERT_TRUE(jvm.running());
  const std::string name = ".attach_pid" + Str(NsPid(jvm.pid()));
  const std::string planted = cwd + "/" + name;
  SpawnOptions as_nobody;
  as_nobody.uid = kNobody;
  as_nobody.gid = kNobody;
  RunResult touch = RunCommand({"touch", planted}, as_nobody);
  ASSERT_EQ(touch.exit_code, 0) << touch.err;
  struct stat st;
  ASSERT_EQ(::stat(planted.c_str(), &st), 0);
  ASSERT_EQ(st.st_uid, kNobody);

  RunResult r = Jcmd(jvm.pid(), {"VM.version"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  ExpectOneLineError(r);
  EXPECT_NE(r.err.find("not signalling"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(name + " exists, owned by uid 65534"), std::string::npos) << r.err;
  EXPECT_TRUE(jvm.running());
  EXPECT_FALSE(ThreadDumped(jvm_stdout_));
  EXPECT_FALSE(fs::exists(AttachSocket(jvm.pid())));
  EXPECT_TRUE(fs::exists(planted)) << "not memtrimd's file to remove";
}

// The same place holding a file of the JVM's own user: HotSpot honours it,
// so memtrimd uses it (and leaves it to its owner).
TEST_P(TriggerFileTest, OneOfTheJvmsOwnUserIsUsed) {
  const std::string cwd = dir_ / "cwd";
  fs::create_directory(cwd);
  SpawnOptions o;
  o.cwd = cwd;
  Process jvm = StartFreshJvm(o, GetParam());
  ASSERT_TRUE(jvm.running());
  const std::string planted = cwd + "/.attach_pid" + Str(NsPid(jvm.pid()));
  WriteFile(planted, "");
  RunResult r = Jcmd(jvm.pid(), {"VM.version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("JDK " + std::to_string(JdkFeature(GetParam()))), std::string::npos)
      << r.out;
  EXPECT_FALSE(ThreadDumped(jvm_stdout_));
  EXPECT_TRUE(fs::exists(planted));
  fs::remove(planted);
}

INSTANTIATE_TEST_SUITE_P(AllJdks, TriggerFileTest, ::testing::ValuesIn(FindJdkHomes()),
                         [](const ::testing::TestParamInfo<std::string>& jdk) {
                           return JdkTestName(jdk.param);
                         });

// A fake JVM (a libjvm.so mapped, SIGQUIT caught, no attach socket) that
// logs, on SIGQUIT, where HotSpot would find its trigger file.
class FakeJvmWithoutListener {
 public:
  // `extra`: attach_server flags (--chroot, --cwd, --uid); `o`: how it runs.
  FakeJvmWithoutListener(const TempDir& dir, std::vector<std::string> extra, SpawnOptions o) {
    static int n = 0;
    const std::string sub = dir / ("fake-jvm-nolistener." + Str(++n));
    fs::create_directory(sub);
    fs::permissions(sub, fs::perms::all);  // its uid writes libjvm.so and the ready file
    log_ = sub + "/out";
    o.stdout_path = log_;
    std::vector<std::string> args = {"--fake-libjvm", sub, "--sigquit-log"};
    args.insert(args.end(), extra.begin(), extra.end());
    process_ = StartAttachServer(args, sub, o);
  }
  Process& process() { return process_; }
  std::string log() const { return ReadFile(log_); }

 private:
  Process process_;
  std::string log_;
};

// A trigger file only where the target's uid could have made it: a fake JVM
// of uid 65534 whose working directory is /etc gets it in its /tmp (sticky,
// writable by all), never in /etc, which only root may write.
TEST_F(SecurityTest, TriggerIsNotMadeInAWorkingDirectoryTheTargetCannotWrite) {
  if (!IsRoot()) GTEST_SKIP() << "needs root to act as uid " << kNobody;
  SpawnOptions o;
  o.uid = kNobody;
  o.gid = kNobody;
  o.cwd = "/etc";
  FakeJvmWithoutListener fake(dir_, {}, o);
  ASSERT_TRUE(fake.process().running());
  const std::string name = ".attach_pid" + Str(fake.process().pid());
  ASSERT_FALSE(fs::exists("/etc/" + name));
  ScopedUnlink cleanup{"/etc/" + name};

  RunResult r = Jcmd(fake.process().pid(), {"VM.version"});
  // One SIGQUIT, the trigger where HotSpot looks next and honours it; the
  // fake never listens, so the jcmd fails after its 3 s.
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(fake.log().find("sigquit trigger=/tmp/" + name + " uid=0 honoured=1"),
            std::string::npos)
      << fake.log() << r.err;
  EXPECT_EQ(fake.log().find("trigger=" + name), std::string::npos) << fake.log();
  EXPECT_FALSE(fs::exists("/etc/" + name));
  EXPECT_FALSE(fs::exists("/tmp/" + name)) << "removed afterwards";
}

// A chrooted fake JVM whose /tmp is a symlink to /root: the trigger goes
// where the JVM itself resolves /tmp (its own /root, inside its root), never
// to memtrimd's /root. Its working directory is gone (removed after it
// started there), so the trigger cannot go there.
TEST_F(SecurityTest, TriggerDirectoryIsResolvedInsideTheTargetsRoot) {
  if (!IsRoot()) GTEST_SKIP() << "needs root to act as uid " << kNobody;
  if (fs::exists("/root/.attach_pid1")) GTEST_SKIP() << "/root/.attach_pid1 exists already";
  const std::string root = dir_ / "chroot";
  fs::create_directories(root + "/work");
  fs::create_directory(root + "/root");
  ASSERT_EQ(::chown((root + "/root").c_str(), kNobody, kNobody), 0);
  ASSERT_EQ(::chmod((root + "/root").c_str(), 0700), 0);
  fs::create_directory_symlink("/root", root + "/tmp");  // absolute: resolves in its root
  FakeJvmWithoutListener fake(
      dir_, {"--chroot", root, "--cwd", "/work", "--uid", Str(static_cast<pid_t>(kNobody))}, {});
  ASSERT_TRUE(fake.process().running());
  fs::remove(root + "/work");
  const pid_t pid = fake.process().pid();
  ASSERT_EQ(fs::read_symlink("/proc/" + Str(pid) + "/root"), fs::path(root));
  const std::string name = ".attach_pid" + Str(pid);
  ASSERT_FALSE(fs::exists("/root/" + name));
  ScopedUnlink cleanup{"/root/" + name};

  RunResult r = Jcmd(pid, {"VM.version"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(fake.log().find("sigquit trigger=/tmp/" + name + " uid=0 honoured=1"),
            std::string::npos)
      << fake.log() << r.err;
  EXPECT_FALSE(fs::exists("/root/" + name));
  EXPECT_FALSE(fs::exists(root + "/root/" + name)) << "removed afterwards";
}

}  // namespace
}  // namespace memtrimd::testing

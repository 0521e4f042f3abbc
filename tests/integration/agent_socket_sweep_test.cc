// No agent socket is left on disk, however a program with the agent ends.
// A shell ending through _exit (every `sh -c` of kubectl exec in a container
// whose environment holds LD_PRELOAD) removes its own socket, while its
// forked children, which call _exit too, leave their parent's alone. What a
// SIGKILLed program leaves, a node-mode memtrimd removes; and a neighbour's
// attempts to make that sweep remove something else (a symlink named like an
// agent socket, a regular file so named, a live socket so named, a target
// whose /tmp is a symlink to a directory of another user's stale socket)
// leave all of them untouched.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tests/integration/harness.h"
#include "tests/integration/node_agent.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kAttacker = kNamelessUid;

bool IsSocket(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

bool IsSymlink(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// A stale socket of `uid` at `path`: bound by a process of that uid, which
// then exits (nobody listens on it).
bool StaleSocketOf(uid_t uid, const std::string& path) {
  SpawnOptions o;
  o.uid = uid;
  o.gid = uid;
  RunResult r =
      RunCommand({"python3", "-c",
                  "import socket,sys\nsocket.socket(socket.AF_UNIX).bind(sys.argv[1])\n", path},
                 o);
  return r.exit_code == 0 && IsSocket(path);
}

// The name a stale agent socket of a process long gone would have: a pid
// above any pid_max, so no live process can ever have it.
std::string GoneAgentName(int n) {
  return ".memtrimd_agent.9" + std::to_string(4194304 + n) + "." + std::to_string(n);
}

// A fake JVM (attach_server) as nobody, chrooted into `root`, its fake
// libjvm in `fake_dir` (whose name carries the test's marker); returned once
// it is ready, or once it has ended (the caller checks running()).
Process ChrootedFakeJvm(const std::string& fake_dir, const std::string& root) {
  fs::create_directory(fake_dir);
  fs::permissions(fake_dir, fs::perms::all);
  const std::string ready = fake_dir + "/ready";
  Process fake({WorkloadBin("attach_server"), "--ready-file", ready, "--fake-libjvm", fake_dir,
                "--sigquit-log", "--chroot", root, "--uid", std::to_string(kNobodyUid)});
  if (!WaitFor([&] { return fs::exists(ready) || !fake.running(); }, 30s)) {
    ADD_FAILURE() << fake_dir << ": the fake JVM was not ready in 30 s";
  }
  return fake;
}

TEST(AgentSocketExitTest, AShellEndingThroughExitLeavesNoSocketAndItsChildrenKeepIt) {
  if (!IsRoot()) GTEST_SKIP() << "needs root to act as uid " << kNobodyUid;
  TempDir dir;
  fs::permissions(dir.path(), fs::perms::all);
  const std::string forked = dir / "forked";
  StdinPipe in(dir / "in");
  ASSERT_TRUE(in.ok());
  SpawnOptions o;
  o.uid = kNobodyUid;
  o.gid = kNobodyUid;
  o.stdin_path = in.path();
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  // A subshell (a forked child that ends through _exit), then a builtin
  // read that waits for the test, then exit: dash (Debian's /bin/sh) ends
  // both through _exit.
  Process sh({"/bin/sh", "-c", "(exit 0); : > \"$1\"; read line; exit 3", "sh", forked}, o);
  ASSERT_TRUE(sh.running());
  const std::string socket = AgentSocketOf(sh.pid());
  ASSERT_TRUE(WaitFor([&] { return fs::exists(forked) || !sh.running(); }, 30s));
  ASSERT_TRUE(sh.running());
  // The child's _exit left the parent's socket alone.
  EXPECT_TRUE(IsSocket(socket)) << socket;
  ASSERT_TRUE(in.Write("go\n"));
  EXPECT_EQ(sh.Wait(30s), 3);
  EXPECT_FALSE(fs::exists(fs::symlink_status(socket))) << socket << " left behind";
  RemoveStaleAgentSocket(sh.pid());
}

TEST(AgentSocketSweepTest, WhatAKilledProgramLeftIsRemovedAndNothingElse) {
  if (!IsRoot()) GTEST_SKIP() << "needs root: the targets run as other users";
  TempDir dir;
  fs::permissions(dir.path(), fs::perms::all);
  const std::string marker = "mtsweep" + std::to_string(::getpid());
  std::vector<std::unique_ptr<ScopedUnlink>> cleanup;
  auto remove_later = [&](const std::string& path) {
    cleanup.push_back(std::unique_ptr<ScopedUnlink>(new ScopedUnlink{path}));
  };

  // A watched program with the agent (its socket is live and must stay),
  // and one memtrimd never watches, killed below.
  SpawnOptions nobody;
  nobody.uid = kNobodyUid;
  nobody.gid = kNobodyUid;
  nobody.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Process watched = StartFragmenter(
      dir, {"--threads", "1", "--rounds", "1", "--burst-mib", "4", "--tag", marker}, "", nobody);
  ASSERT_TRUE(watched.running());
  Process victim =
      StartFragmenter(dir, {"--threads", "1", "--rounds", "1", "--burst-mib", "4"}, "", nobody);
  ASSERT_TRUE(victim.running());
  const std::string live_socket = AgentSocketOf(watched.pid());
  const std::string victim_socket = AgentSocketOf(victim.pid());
  ASSERT_TRUE(IsSocket(live_socket));
  ASSERT_TRUE(IsSocket(victim_socket));

  // Another user's files the attacker points at.
  const std::string others = dir / "others";
  fs::create_directory(others);
  fs::permissions(others, fs::perms::all | fs::perms::sticky_bit);
  const std::string others_file = others + "/file";
  WriteFile(others_file, "not yours\n");
  ASSERT_EQ(::chown(others_file.c_str(), kNobodyUid, kNobodyUid), 0);
  const std::string others_stale = others + "/" + GoneAgentName(1);
  ASSERT_TRUE(StaleSocketOf(kNobodyUid, others_stale));

  // The attacker's plants in /tmp, each named like an agent socket.
  SpawnOptions attacker;
  attacker.uid = kAttacker;
  attacker.gid = kAttacker;
  const std::string link_to_file = "/tmp/" + GoneAgentName(2);
  const std::string link_to_socket = "/tmp/" + GoneAgentName(3);
  const std::string regular = "/tmp/" + GoneAgentName(4);
  const std::string live_plant = "/tmp/" + GoneAgentName(5);
  for (const std::string& p : {link_to_file, link_to_socket, regular, live_plant}) remove_later(p);
  ASSERT_EQ(RunCommand({"ln", "-s", others_file, link_to_file}, attacker).exit_code, 0);
  ASSERT_EQ(RunCommand({"ln", "-s", others_stale, link_to_socket}, attacker).exit_code, 0);
  ASSERT_EQ(RunCommand({"touch", regular}, attacker).exit_code, 0);
  Process listener({"python3", "-c",
                    "import socket,sys,time\n"
                    "s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen()\n"
                    "time.sleep(600)\n",
                    live_plant},
                   attacker);
  ASSERT_TRUE(WaitFor([&] { return IsSocket(live_plant) || !listener.running(); }, 30s));

  // A target (a fake JVM, chrooted, as nobody) whose /tmp is a symlink to
  // a directory of the node holding another user's stale agent socket.
  const std::string elsewhere = dir / "elsewhere";
  fs::create_directory(elsewhere);
  fs::permissions(elsewhere, fs::perms::all | fs::perms::sticky_bit);
  const std::string elsewhere_stale = elsewhere + "/" + GoneAgentName(6);
  ASSERT_TRUE(StaleSocketOf(kNobodyUid, elsewhere_stale));
  const std::string root = dir / "chroot";
  fs::create_directory(root);
  fs::create_directory_symlink(elsewhere, root + "/tmp");
  Process fake = ChrootedFakeJvm(dir / ("fake-jvm-" + marker), root);
  ASSERT_TRUE(fake.running());

  // A target (another fake JVM, chrooted, as nobody) with a /tmp of its own
  // that holds a stale socket: only this memtrimd watches it, so only its
  // sweep can remove that one (the node's /tmp is shared with other tests'
  // memtrimds, whose sweeps remove stale sockets there too).
  const std::string own_root = dir / "own-root";
  fs::create_directories(own_root + "/tmp");
  fs::permissions(own_root + "/tmp", fs::perms::all | fs::perms::sticky_bit);
  const std::string own_stale = own_root + "/tmp/" + GoneAgentName(8);
  ASSERT_TRUE(StaleSocketOf(kNobodyUid, own_stale));
  Process own = ChrootedFakeJvm(dir / ("own-jvm-" + marker), own_root);
  ASSERT_TRUE(own.running());

  Memtrimd m(WrapWith{NodeAgentCaps()},
             {"--targets=node", "--targets.match=" + marker, "--targets.min-rss=0",
              "--discovery.interval=300ms", "--sample.interval=200ms", "--no-collector.jvm",
              "--trim.interval=0"});
  ASSERT_TRUE(m.started()) << m.log();
  ASSERT_TRUE(WaitFor([&] { return Find(m.Scrape(), "memtrimd_targets_watched") == 3.0; }, 30s))
      << m.log();

  // SIGKILL: the agent cannot remove its socket; memtrimd does.
  ASSERT_EQ(::kill(victim.pid(), SIGKILL), 0);
  victim.Wait(30s);
  remove_later(victim_socket);
  EXPECT_TRUE(WaitFor([&] { return !fs::exists(fs::symlink_status(victim_socket)); }, 30s))
      << victim_socket << " not removed\n"
      << m.log();
  // One more stale socket, made after that removal: once it is gone too, a
  // whole sweep of every target's /tmp has run with every plant in place.
  const std::string later = "/tmp/" + GoneAgentName(7);
  remove_later(later);
  ASSERT_TRUE(StaleSocketOf(kNobodyUid, later));
  EXPECT_TRUE(WaitFor([&] { return !fs::exists(fs::symlink_status(later)); }, 30s)) << m.log();
  // The socket in the target's own /tmp: this memtrimd's sweep removed it,
  // counted from the next sample on.
  EXPECT_TRUE(WaitFor([&] { return !fs::exists(fs::symlink_status(own_stale)); }, 30s))
      << own_stale << " not removed\n"
      << m.log();
  EXPECT_TRUE(WaitFor(
      [&] { return Find(m.Scrape(), "memtrimd_agent_sockets_removed_total").value_or(0) >= 1.0; },
      10s))
      << m.log();
  EXPECT_TRUE(LogHas(m.log(), {"removed stale agent sockets"})) << m.log();

  // Untouched: the live agent's socket, the attacker's plants and what they
  // point at, and the stale socket behind the symlinked /tmp.
  EXPECT_TRUE(IsSocket(live_socket)) << live_socket;
  EXPECT_TRUE(IsSymlink(link_to_file));
  EXPECT_TRUE(IsSymlink(link_to_socket));
  EXPECT_EQ(ReadFile(others_file), "not yours\n");
  EXPECT_TRUE(IsSocket(others_stale));
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(regular)));
  EXPECT_TRUE(IsSocket(live_plant));
  EXPECT_TRUE(IsSocket(elsewhere_stale)) << "removed through the target's symlinked /tmp";

  listener.Kill();
  own.Kill();
  fake.Kill();
  watched.Kill();
}

}  // namespace
}  // namespace memtrimd::testing

// Symbols come only from the object a target mapped. A user maps a copy of
// site_holder under a name holding a newline, which maps prints as "\012",
// and plants beside it a symlink literally named with those four characters
// to a root-only ELF (0600 in a 0700 directory: site_holder with every
// symbol renamed secret_*, the same code at the same offsets). memtrimd, root
// in node mode with --collector.sites, must name the program's own
// functions and never one of the secret file's, in /report and in
// /debug/pprof/heap. Before, it opened the name maps printed, following the
// symlink as root, and served secret_hold_200. And a user who, in its own
// user and mount namespace, covers the directory of the program it runs
// with a bind mount of one where that name is a symlink to the secret file:
// symbolisation (as root, as the daemon's) still names the program's own
// functions. (The agent answers no memtrimd across such a namespace: its
// root is not root there, so that case is checked on the symbol source.)
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "collectors/procfs/maps.h"
#include "collectors/symbols/symbolize.h"
#include "collectors/symbols/target_elf.h"
#include "tests/integration/harness.h"
#include "tests/integration/node_agent.h"
#include "tests/integration/served_sites.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

// A root-only copy of site_holder with every symbol renamed secret_*, in a
// 0700 directory.
class SecretElf {
 public:
  SecretElf() {
    ::chmod(dir_.path().c_str(), 0700);
    RunResult copy =
        RunCommand({"objcopy", "--prefix-symbols=secret_", WorkloadBin("site_holder"), path_});
    EXPECT_EQ(copy.exit_code, 0) << copy.err;
    ::chmod(path_.c_str(), 0600);
  }
  const std::string& path() const { return path_; }

 private:
  TempDir dir_;
  std::string path_ = dir_ / "secret";
};

// A directory of the attacker's own.
std::string AttackerDir(const TempDir& dir, const std::string& name) {
  const std::string home = dir / name;
  fs::create_directory(home);
  EXPECT_EQ(::chown(home.c_str(), kNamelessUid, kNamelessUid), 0);
  return home;
}

TEST(SymbolSourceTest, ANewlineNameBesideASymlinkNamesNoFunctionOfARootOnlyFile) {
  if (!IsRoot()) GTEST_SKIP() << "needs root: the attacker is another user";
  const std::string marker = "symsrc" + std::to_string(::getpid());
  SecretElf secret_elf;
  const std::string& secret = secret_elf.path();
  TempDir dir;
  const std::string home = AttackerDir(dir, marker);
  std::vector<std::string> plant = AsUser(kNamelessUid);
  plant.insert(plant.end(),
               {"/bin/sh", "-c", "cp \"$1\" \"$2/$4\" && ln -s \"$3\" \"$2/$5\"", "plant",
                WorkloadBin("site_holder"), home, secret, "holder\nx", "holder\\012x"});
  RunResult planted = RunCommand(plant);
  ASSERT_EQ(planted.exit_code, 0) << planted.err;
  ASSERT_TRUE(fs::is_symlink(home + "/holder\\012x"));

  const std::string out = home + "/out", trigger = home + "/hold";
  std::vector<std::string> argv = AsUser(kNamelessUid);
  argv.insert(argv.end(), {"env", std::string("LD_PRELOAD=") + AGENT_LIB, home + "/holder\nx",
                           "1048576", trigger, "1048576", "2"});
  SpawnOptions o;
  o.stdout_path = out;
  Process holder(argv, o);
  ASSERT_TRUE(WaitFor(
      [&] { return ReadFile(out).find("armed\n") != std::string::npos || !holder.running(); },
      30s));
  ASSERT_TRUE(holder.running());

  Memtrimd m(WrapWith{NodeAgentCaps()},
             {"--targets=node", "--targets.match=" + marker, "--targets.exclude=^(setpriv|env) ",
              "--targets.min-rss=1MiB", "--discovery.interval=300ms", "--sample.interval=300ms",
              "--collector.sites", "--sites.interval=300ms", "--trim.interval=0"});
  ASSERT_TRUE(m.started()) << m.log();
  ASSERT_TRUE(WaitFor([&] { return ReadServedSites(m).on; }, 30s)) << m.log();
  WriteFile(trigger, "");
  ServedSites sites;
  ASSERT_TRUE(WaitFor(
      [&] {
        sites = ReadServedSites(m);
        return !sites.rows.empty() && sites.rows[0].live > 100.0 * (1 << 20);
      },
      30s))
      << m.log();

  // The program's own functions are named; none of the secret file's.
  EXPECT_EQ(sites.rows[0].name.rfind("hold < hold_200 < main", 0), 0u) << sites.rows[0].name;
  HttpResponse report = Curl(m.url("/report?format=json"));
  ASSERT_EQ(report.status, 200);
  EXPECT_EQ(report.body.find("secret_"), std::string::npos) << report.body;
  HttpResponse profile = Curl(m.url("/debug/pprof/heap"));
  ASSERT_EQ(profile.status, 200);
  WriteFile(dir / "heap.pb.gz", profile.body);
  RunResult names = RunCommand({"gzip", "-dc", dir / "heap.pb.gz"});
  ASSERT_EQ(names.exit_code, 0) << names.err;
  EXPECT_NE(names.out.find("hold_200"), std::string::npos);
  EXPECT_EQ(names.out.find("secret_"), std::string::npos) << names.out;

  holder.Kill();
  RemoveStaleAgentSocket(holder.pid());
}

TEST(SymbolSourceTest, ABindMountOverTheMappedFileInAUserNamespaceNamesOnlyTheMappedFile) {
  if (!IsRoot()) GTEST_SKIP() << "needs root: the attacker is another user";
  SecretElf secret;
  TempDir dir;
  const std::string home = AttackerDir(dir, "bind");
  std::vector<std::string> argv = AsUser(kNamelessUid);
  // The poll is the attacker's: the mount comes once the program runs.
  argv.insert(argv.end(),
              {"unshare", "-Urm", "sh", "-c",
               "cd \"$1\" && mkdir real fake && cp \"$2\" real/holder && "
               "ln -s \"$3\" fake/holder && { ./real/holder 65536 >out & echo $! >holder.pid; } && "
               "until grep -q ready out; do sleep 0.05; done && "
               "mount --bind fake real && touch mounted && wait",
               "attacker", home, WorkloadBin("site_holder"), secret.path()});
  Process attacker(argv);
  // Killed by its pid even when a check below fails.
  struct KillOnExit {
    pid_t pid = -1;
    ~KillOnExit() {
      if (pid > 0) ::kill(pid, SIGKILL);
    }
  } kill_holder;
  const bool mounted =
      WaitFor([&] { return fs::exists(home + "/mounted") || !attacker.running(); }, 30s);
  // Written before the program's output was polled: there when it runs.
  kill_holder.pid = static_cast<pid_t>(std::stol("0" + ReadFile(home + "/holder.pid")));
  ASSERT_TRUE(mounted);
  ASSERT_TRUE(attacker.running());
  const pid_t holder = kill_holder.pid;
  ASSERT_GT(holder, 0);

  std::vector<uint64_t> addresses;
  std::istringstream printed(ReadFile(home + "/out"));
  std::string kind, name, hex;
  while (printed >> kind && kind != "ready" && printed >> name >> hex) {
    if (kind == "function") addresses.push_back(std::stoull(hex, nullptr, 16));
  }
  ASSERT_EQ(addresses.size(), 3u);
  Target t;
  t.pid = holder;
  t.proc_dir = "/proc/" + std::to_string(holder);
  auto maps = procfs::ParseMaps(ReadFile(t.proc_dir + "/maps"));
  ASSERT_TRUE(maps.ok()) << maps.status().message();
  symbols::SymbolCache cache(16u << 20);
  symbols::TargetElfSource source(t, cache);
  symbols::Symbolization s = symbols::Symbolize(addresses, *maps, source);
  ASSERT_EQ(s.frames.size(), 3u);
  EXPECT_EQ(s.frames[0].function, "hold_200");
  EXPECT_EQ(s.frames[1].function, "hold_50");
  EXPECT_EQ(s.frames[2].function, "hold_10");
  for (const symbols::Frame& f : s.frames) EXPECT_EQ(f.function.find("secret_"), std::string::npos);

  // Without the capabilities map_files and the target's ids need (as the node
  // agent runs), on a thread of its own (capset changes the calling thread
  // only): by the name, as root, which now leads to the secret file, refused
  // for its inode.
  std::thread([&] {
    __user_cap_header_struct head{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct caps[2]{};
    ASSERT_EQ(::syscall(SYS_capget, &head, caps), 0);
    for (int cap : {CAP_SYS_ADMIN, CAP_CHECKPOINT_RESTORE, CAP_SETUID, CAP_SETGID})
      caps[cap / 32].effective &= ~(1u << (cap % 32));
    ASSERT_EQ(::syscall(SYS_capset, &head, caps), 0);
    symbols::SymbolCache fresh(16u << 20);
    symbols::TargetElfSource by_name(t, fresh);
    symbols::Symbolization n = symbols::Symbolize(addresses, *maps, by_name);
    ASSERT_EQ(n.frames.size(), 3u);
    for (const symbols::Frame& f : n.frames) EXPECT_EQ(f.function, "[unknown]");
  }).join();

  attacker.Kill();
}

}  // namespace
}  // namespace memtrimd::testing

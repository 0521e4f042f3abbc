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
// And a node agent, which cannot read a debug file as the target, says so
// for a stripped program rather than only showing its file's name.
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
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

// A holder run as the nameless user and sampled by a root node-mode
// memtrimd with the node agent's capabilities.
struct NodeSampled {
  Process holder;
  std::unique_ptr<Memtrimd> m;
  ServedSites sites;
};

// `program_args` (its trigger file: home + "/hold", its output home +
// "/out") run as the nameless user with the agent preloaded until it
// prints "armed"; memtrimd watching the processes whose command line holds
// `marker` and whose anonymous RSS is at least `min_rss`; once sampling is
// on, the trigger written and the served sites read until `held` says so.
void StartAndHold(const std::string& home, const std::string& marker,
                  const std::vector<std::string>& program_args, const std::string& min_rss,
                  const std::function<bool(const ServedSites&)>& held, NodeSampled& out) {
  const std::string stdout_path = home + "/out";
  std::vector<std::string> argv = AsUser(kNamelessUid);
  argv.insert(argv.end(), {"env", std::string("LD_PRELOAD=") + AGENT_LIB});
  argv.insert(argv.end(), program_args.begin(), program_args.end());
  SpawnOptions o;
  o.stdout_path = stdout_path;
  out.holder = Process(argv, o);
  ASSERT_TRUE(WaitFor(
      [&] {
        return ReadFile(stdout_path).find("armed\n") != std::string::npos || !out.holder.running();
      },
      30s));
  ASSERT_TRUE(out.holder.running());

  out.m = std::make_unique<Memtrimd>(
      WrapWith{NodeAgentCaps()},
      std::vector<std::string>{"--targets=node", "--targets.match=" + marker,
                               "--targets.exclude=^(setpriv|env) ", "--targets.min-rss=" + min_rss,
                               "--discovery.interval=300ms", "--sample.interval=300ms",
                               "--collector.sites", "--sites.interval=300ms", "--trim.interval=0"});
  Memtrimd& m = *out.m;
  ASSERT_TRUE(m.started()) << m.log();
  ASSERT_TRUE(WaitFor([&] { return ReadServedSites(m).on; }, 30s)) << m.log();
  WriteFile(home + "/hold", "");
  ASSERT_TRUE(WaitFor(
      [&] {
        out.sites = ReadServedSites(m);
        return held(out.sites);
      },
      30s))
      << m.log();
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

  NodeSampled run;
  ASSERT_NO_FATAL_FAILURE(StartAndHold(
      home, marker, {home + "/holder\nx", "1048576", home + "/hold", "1048576", "2"}, "1MiB",
      [](const ServedSites& s) { return !s.rows.empty() && s.rows[0].live > 100.0 * (1 << 20); },
      run));
  const ServedSites& sites = run.sites;
  Memtrimd& m = *run.m;
  Process& holder = run.holder;

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

// A node agent cannot take a target's ids, so it reads no debug file for a
// stripped program: its sites say so, naming the capabilities it lacks,
// rather than only showing the program's file where functions were.
TEST(SymbolSourceTest, ANodeAgentSaysWhyAStrippedProgramHasNoFunctionNames) {
  if (!IsRoot()) GTEST_SKIP() << "needs root: the target is another user";
  const std::string marker = "symstrip" + std::to_string(::getpid());
  TempDir dir;
  const std::string home = AttackerDir(dir, marker);
  const std::string program = home + "/cxx_site_holder.stripped";
  RunResult strip =
      RunCommand({"strip", "--strip-all", "-o", program, WorkloadBin("cxx_site_holder")});
  ASSERT_EQ(strip.exit_code, 0) << strip.err;
  // Before it holds anything the program's anonymous RSS is about 200 KiB.
  NodeSampled run;
  ASSERT_NO_FATAL_FAILURE(StartAndHold(
      home, marker, {program, home + "/hold"}, "64KiB",
      [](const ServedSites& s) {
        return !s.rows.empty() && s.rows[0].live > 32.0 * (1 << 20) && !s.unnamed_files.empty();
      },
      run));
  const ServedSites& sites = run.sites;
  Process& holder = run.holder;
  EXPECT_TRUE(sites.rows[0].name.starts_with("cxx_site_holder.stripped")) << sites.rows[0].name;
  const ServedUnnamedFile& f = sites.unnamed_files[0];
  EXPECT_EQ(f.file, program);
  EXPECT_TRUE(f.why.starts_with(
      "stripped: only the functions it exports have names; its debug file (build id "))
      << f.why;
  // The node agent has neither CAP_SETUID nor CAP_SETGID (the target has no
  // supplementary groups, as memtrimd: only its uid and gid are wanted).
  EXPECT_TRUE(f.why.ends_with("): taking the target's uid " + std::to_string(kNamelessUid) +
                              " and gid " + std::to_string(kNamelessUid) +
                              " needs CAP_SETUID and CAP_SETGID"))
      << f.why;

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

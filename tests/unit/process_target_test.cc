#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>
#include "tests/unit/fixtures.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>

#include "collectors/common/target.h"
#include "collectors/procfs/cmdline.h"
#include "collectors/procfs/proc_stat.h"
#include "collectors/procfs/process_collector.h"
#include "collectors/procfs/runtime.h"
#include "collectors/procfs/target_reader.h"
#include "collectors/procfs/task_states.h"
#include "collectors/sample.h"

namespace memtrimd::procfs {
namespace {

namespace fs = std::filesystem;
using namespace std::string_view_literals;

std::string FixtureDir(const std::string& name) {
  return std::string(MEMTRIMD_FIXTURES) + "/proc/" + name;
}

using test::ReadWhole;
std::map<std::string, uint64_t> ReadExpected(const std::string& dir) {
  return test::ReadProcExpected(dir);
}

// /proc/<pid>/maps is smaps without the field lines.
std::string MapsFromSmaps(const std::string& smaps) {
  std::istringstream in(smaps);
  std::ostringstream out;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.find('-') != std::string::npos &&
        ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f'))) {
      out << line << '\n';
    }
  }
  return out.str();
}

// A directory that removes itself.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "memtrimd-proc-test.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void WriteFile(const fs::path& path, std::string_view text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

// ---------------------------------------------------------------------------
// ProcessCollector.

class ProcessCollectorFixture : public testing::TestWithParam<const char*> {};

TEST_P(ProcessCollectorFixture, FillsTheProcessPart) {
  const std::string name = GetParam();
  auto expected = ReadExpected(name);
  Target target;
  target.pid = 1;
  target.proc_dir = FixtureDir(name);
  ProcessCollector collector;
  EXPECT_EQ(collector.Name(), "process");
  TargetSample out;
  Status st = collector.Collect(target, out);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(out.process.has_value());
  EXPECT_EQ(out.process->name, name == "jvm17" ? "java" : name);
  EXPECT_EQ(out.process->rss_anon, expected.at("rss_anon_bytes"));
  EXPECT_EQ(out.process->rss_file, expected.at("rss_file_bytes"));
  EXPECT_EQ(out.process->rss_shmem, expected.at("rss_shmem_bytes"));
  EXPECT_EQ(out.process->vm_swap, expected.at("vm_swap_bytes"));
  EXPECT_EQ(out.process->vm_hwm, expected.at("vm_hwm_bytes"));
  EXPECT_EQ(out.process->threads, expected.at("threads"));
  EXPECT_TRUE(out.process->has_memory);
  EXPECT_FALSE(out.cgroup.has_value());
  EXPECT_FALSE(out.glibc.has_value());
}

TEST_P(ProcessCollectorFixture, ReadStartTicksMatchesExpected) {
  const std::string name = GetParam();
  Result<uint64_t> ticks = ReadStartTicks(FixtureDir(name));
  ASSERT_TRUE(ticks.ok()) << ticks.status().message();
  EXPECT_EQ(*ticks, ReadExpected(name).at("start_time_ticks"));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ProcessCollectorFixture,
                         testing::Values("fragmenter", "jvm17", "sleep"));

TEST(ProcessCollector, MissingDirectoryIsNotFound) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  Target target;
  target.proc_dir = (tmp.path() / "no-such-pid").string();
  ProcessCollector collector;
  TargetSample out;
  Status st = collector.Collect(target, out);
  EXPECT_EQ(st.code(), ErrorCode::kNotFound) << st.message();
  EXPECT_FALSE(out.process.has_value());
}

TEST(ProcessCollector, ZombieWithoutMemoryIsNotFound) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  WriteFile(tmp.path() / "status",
            "Name:\tdefunct\nState:\tZ (zombie)\nTgid:\t77\nPid:\t77\nThreads:\t1\n");
  Target target;
  target.proc_dir = tmp.path().string();
  ProcessCollector collector;
  TargetSample out;
  Status st = collector.Collect(target, out);
  EXPECT_EQ(st.code(), ErrorCode::kNotFound) << st.message();
  EXPECT_FALSE(out.process.has_value());
}

TEST(ProcessCollector, MalformedStatusIsAParseError) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  WriteFile(tmp.path() / "status", "Name:\tx\nTgid:\t7\nVmRSS:\tabc kB\nThreads:\t1\n");
  Target target;
  target.proc_dir = tmp.path().string();
  ProcessCollector collector;
  TargetSample out;
  Status st = collector.Collect(target, out);
  EXPECT_EQ(st.code(), ErrorCode::kParseError) << st.message();
  EXPECT_FALSE(out.process.has_value());
}

// ---------------------------------------------------------------------------
// ReadTarget.

// A /proc tree in a temp dir: <root>/<pid>/{stat,status,maps} from a fixture.
TEST(ReadTarget, FixtureTreeWithMaps) {
  struct Case {
    const char* fixture;
    pid_t pid;
    const char* comm;
    Runtime runtime;
  };
  for (const Case& c : {Case{"jvm17", 5426, "java", Runtime::kJvm},
                        Case{"fragmenter", 5364, "fragmenter", Runtime::kGlibc},
                        Case{"sleep", 5538, "sleep", Runtime::kGlibc}}) {
    SCOPED_TRACE(c.fixture);
    TempDir tmp;
    ASSERT_FALSE(tmp.path().empty());
    const fs::path dir = tmp.path() / std::to_string(c.pid);
    const std::string src = FixtureDir(c.fixture);
    WriteFile(dir / "stat", ReadWhole(src + "/stat"));
    WriteFile(dir / "status", ReadWhole(src + "/status"));
    WriteFile(dir / "maps", MapsFromSmaps(ReadWhole(src + "/smaps")));

    Result<Target> t = ReadTarget(tmp.path().string(), c.pid);
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_EQ(t->pid, c.pid);
    EXPECT_EQ(t->nspid, c.pid);
    EXPECT_EQ(t->comm, c.comm);
    EXPECT_EQ(t->runtime, c.runtime);
    EXPECT_EQ(t->start_ticks, ReadExpected(c.fixture).at("start_time_ticks"));
    EXPECT_EQ(t->uid, 0u);
    EXPECT_EQ(t->gid, 0u);
    EXPECT_EQ(fs::path(t->proc_dir), dir);
  }
}

TEST(ReadTarget, FixtureTreeWithoutMapsFails) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const fs::path dir = tmp.path() / "5538";
  WriteFile(dir / "stat", ReadWhole(FixtureDir("sleep") + "/stat"));
  WriteFile(dir / "status", ReadWhole(FixtureDir("sleep") + "/status"));
  Result<Target> t = ReadTarget(tmp.path().string(), 5538);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kNotFound) << t.status().message();
}

TEST(ReadTarget, TheTestProcessItself) {
  const pid_t pid = getpid();
  Result<Target> t = ReadTarget("/proc", pid);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->pid, pid);
  EXPECT_EQ(t->proc_dir, "/proc/" + std::to_string(pid));
  EXPECT_EQ(t->runtime, Runtime::kGlibc);
  EXPECT_EQ(t->uid, geteuid());
  EXPECT_EQ(t->gid, getegid());
  EXPECT_EQ(t->nspid, pid);  // /proc is this process's own pid namespace

  std::string comm = ReadWhole("/proc/self/comm");
  while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  EXPECT_EQ(t->comm, comm);
  EXPECT_FALSE(comm.empty());

  Result<ProcStat> st = ParseProcStat(ReadWhole("/proc/self/stat"));
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ(t->start_ticks, st->start_ticks);
  EXPECT_GT(t->start_ticks, 0u);

  // The identity holds across reads.
  Result<Target> again = ReadTarget("/proc", pid);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_TRUE(again->SameProcess(*t));
}

TEST(ReadTarget, NonexistentPidIsNotFound) {
  // pid_max is one more than the largest pid the kernel hands out.
  std::string pid_max_text = ReadWhole("/proc/sys/kernel/pid_max");
  const long pid_max = std::strtol(pid_max_text.c_str(), nullptr, 10);
  ASSERT_GT(pid_max, 1);
  const auto pid = static_cast<pid_t>(pid_max);
  ASSERT_FALSE(fs::exists("/proc/" + std::to_string(pid)));
  Result<Target> t = ReadTarget("/proc", pid);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kNotFound) << t.status().message();
}

TEST(Target, SameProcessComparesPidStartTimeAndProgram) {
  Target a;
  a.pid = 10;
  a.start_ticks = 500;
  Target b = a;
  b.comm = "renamed";
  EXPECT_TRUE(a.SameProcess(b));
  b.start_ticks = 501;  // a recycled pid
  EXPECT_FALSE(a.SameProcess(b));
  b = a;
  b.pid = 11;
  EXPECT_FALSE(a.SameProcess(b));
  b = a;
  b.exec_mark = a.exec_mark + 1;  // the same process after an exec
  EXPECT_FALSE(a.SameProcess(b));
}

// ---------------------------------------------------------------------------
// Runtime detection.

constexpr std::string_view kExe =
    "55c05736e000-55c057370000 r--p 00000000 fe:00 248056                     /usr/bin/app\n";
constexpr std::string_view kHeapLine =
    "55c0910bb000-55c0910dc000 rw-p 00000000 00:00 0                          [heap]\n";
constexpr std::string_view kAnonLine = "7f3071246000-7f3071253000 rw-p 00000000 00:00 0 \n";
constexpr std::string_view kLibc =
    "7f3071071000-7f3071097000 r--p 00000000 fe:00 332835                     "
    "/usr/lib/x86_64-linux-gnu/libc.so.6\n";
constexpr std::string_view kJvm =
    "7f0d74000000-7f0d74200000 r-xp 00000000 fe:00 400000                     "
    "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so\n";
constexpr std::string_view kMusl =
    "7f5b1c000000-7f5b1c014000 r--p 00000000 00:2a 1234                       "
    "/lib/ld-musl-x86_64.so.1\n";
constexpr std::string_view kStackLine =
    "7ffc37ed5000-7ffc37ef6000 rw-p 00000000 00:00 0                          [stack]\n";

std::string Join(std::initializer_list<std::string_view> lines) {
  std::string out;
  for (std::string_view l : lines) out += l;
  return out;
}

TEST(RuntimeFromMaps, JvmWinsEvenAfterLibc) {
  EXPECT_EQ(RuntimeFromMaps(Join({kExe, kHeapLine, kLibc, kAnonLine, kJvm, kStackLine})),
            Runtime::kJvm);
  EXPECT_EQ(RuntimeFromMaps(Join({kJvm, kLibc})), Runtime::kJvm);
  EXPECT_EQ(RuntimeFromMaps(Join({kMusl, kJvm})), Runtime::kJvm);  // a JVM on musl
}

TEST(RuntimeFromMaps, Glibc) {
  EXPECT_EQ(RuntimeFromMaps(Join({kExe, kHeapLine, kAnonLine, kLibc, kStackLine})),
            Runtime::kGlibc);
  // Before glibc 2.34 the file was libc-<version>.so.
  EXPECT_EQ(RuntimeFromMaps("7f00-7f01 r-xp 00000000 08:01 99 /lib/x86_64-linux-gnu/libc-2.31.so"),
            Runtime::kGlibc);
}

// Right after exec only the executable and ld.so are mapped: not "unknown"
// for good, but not yet known.
TEST(RuntimeFromMaps, AProcessWhoseLoaderHasNotMappedLibcIsStillLoading) {
  constexpr std::string_view kLoader =
      "7f10-7f11 r-xp 00000000 08:01 98 /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2";
  EXPECT_TRUE(MapsFactsFrom(Join({kExe, kLoader, kStackLine})).StillLoading());
  EXPECT_FALSE(MapsFactsFrom(Join({kExe, kLoader, kLibc, kStackLine})).StillLoading());
  EXPECT_FALSE(MapsFactsFrom(Join({kExe, kMusl, kStackLine})).StillLoading());
  EXPECT_FALSE(MapsFactsFrom(Join({kExe, kStackLine})).StillLoading());  // static
}

TEST(RuntimeFromMaps, MuslOnlyWithoutGlibc) {
  EXPECT_EQ(RuntimeFromMaps(Join({kExe, kHeapLine, kMusl, kAnonLine, kStackLine})), Runtime::kMusl);
  // gcompat and friends: glibc mapped as well means glibc.
  EXPECT_EQ(RuntimeFromMaps(Join({kMusl, kLibc})), Runtime::kGlibc);
  EXPECT_EQ(RuntimeFromMaps(Join({kLibc, kMusl})), Runtime::kGlibc);
}

TEST(RuntimeFromMaps, NothingKnownIsUnknown) {
  EXPECT_EQ(RuntimeFromMaps(Join({kExe, kHeapLine, kAnonLine, kStackLine})), Runtime::kUnknown);
  EXPECT_EQ(RuntimeFromMaps(""), Runtime::kUnknown);
  EXPECT_EQ(RuntimeFromMaps("7f00-7f01 r-xp 00000000 08:01 99 /usr/lib/libcrypto.so.3\n"
                            "7f01-7f02 r-xp 00000000 08:01 98 /usr/lib/libcap.so.2\n"),
            Runtime::kUnknown);
}

TEST(RuntimeFromMaps, JvmWhoseLibraryWasReplacedOnDisk) {
  // After a JDK package upgrade, a running JVM's maps shows its libjvm.so as
  // "(deleted)"; it is still a JVM.
  EXPECT_STREQ(
      RuntimeName(RuntimeFromMaps(Join({kExe, kLibc,
                                        "7f0d74000000-7f0d74200000 r-xp 00000000 fe:00 400000     "
                                        "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so "
                                        "(deleted)\n"}))),
      "jvm");
}

TEST(RuntimeFromMaps, MuslInstalledAsLibcSo) {
  // musl's own install (and Debian's musl package) makes /lib/ld-musl-*.so.1
  // a symlink to <libdir>/libc.so; maps shows the file the link resolves to.
  // glibc never maps a file named plain "libc.so" (that is a linker script).
  EXPECT_STREQ(
      RuntimeName(RuntimeFromMaps(Join({kExe, kHeapLine,
                                        "7f5b1c000000-7f5b1c014000 r--p 00000000 fe:00 1234       "
                                        "/usr/lib/x86_64-linux-musl/libc.so\n",
                                        kStackLine}))),
      "musl");
}

TEST(RuntimeFromMaps, RecordedProcesses) {
  EXPECT_EQ(RuntimeFromMaps(MapsFromSmaps(ReadWhole(FixtureDir("jvm17") + "/smaps"))),
            Runtime::kJvm);
  EXPECT_EQ(RuntimeFromMaps(MapsFromSmaps(ReadWhole(FixtureDir("fragmenter") + "/smaps"))),
            Runtime::kGlibc);
  EXPECT_EQ(RuntimeFromMaps(MapsFromSmaps(ReadWhole(FixtureDir("sleep") + "/smaps"))),
            Runtime::kGlibc);
}

// ---------------------------------------------------------------------------
// Allocator detection from maps.

constexpr std::string_view kJemalloc =
    "7f3071000000-7f3071010000 r-xp 00000000 fe:00 4242                       "
    "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2\n";
constexpr std::string_view kTcmalloc =
    "7f3072000000-7f3072010000 r-xp 00000000 fe:00 4243                       "
    "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4.5.10\n";
constexpr std::string_view kMimalloc =
    "7f3073000000-7f3073010000 r-xp 00000000 fe:00 4244                       "
    "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2.0\n";

TEST(MapsFacts, PlainGlibcProgramAndJvmAreGlibc) {
  std::string source;
  EXPECT_EQ(MapsFactsFrom(Join({kExe, kHeapLine, kLibc})).allocator(&source), Allocator::kGlibc);
  EXPECT_EQ(source, "glibc malloc (no other allocator mapped)");
  EXPECT_EQ(MapsFactsFrom(Join({kExe, kLibc, kJvm})).allocator(), Allocator::kGlibc);
}

TEST(MapsFacts, MappedAllocatorLibraryWins) {
  std::string source;
  MapsFacts je = MapsFactsFrom(Join({kExe, kLibc, kJemalloc, kJvm}));
  EXPECT_EQ(je.runtime(), Runtime::kJvm);
  EXPECT_EQ(je.allocator(&source), Allocator::kJemalloc);
  EXPECT_EQ(source, "libjemalloc.so.2 mapped");
  EXPECT_EQ(MapsFactsFrom(Join({kTcmalloc, kLibc})).allocator(&source), Allocator::kTcmalloc);
  EXPECT_EQ(source, "libtcmalloc_minimal.so.4.5.10 mapped");
  EXPECT_EQ(MapsFactsFrom(Join({kLibc, kMimalloc})).allocator(), Allocator::kMimalloc);
}

TEST(MapsFacts, MuslProgramAndJvmOnMusl) {
  EXPECT_EQ(MapsFactsFrom(Join({kExe, kMusl})).allocator(), Allocator::kMusl);
  MapsFacts jvm = MapsFactsFrom(Join({kMusl, kJvm}));
  EXPECT_EQ(jvm.runtime(), Runtime::kJvm);
  EXPECT_EQ(jvm.allocator(), Allocator::kMusl);
  // glibc mapped beside a musl file (a glibc program reading musl's loader
  // as data) stays glibc.
  EXPECT_EQ(MapsFactsFrom(Join({kLibc, kMusl})).allocator(), Allocator::kGlibc);
}

TEST(MapsFacts, MuslInstalledAsLibcSoIsMuslsMalloc) {
  // Debian's musl: the loader is /usr/lib/x86_64-linux-musl/libc.so.
  MapsFacts f = MapsFactsFrom(Join(
      {kExe,
       "7f5b1c000000-7f5b1c014000 r-xp 00000000 00:2a 99 /usr/lib/x86_64-linux-musl/libc.so\n"}));
  EXPECT_EQ(f.runtime(), Runtime::kMusl);
  EXPECT_EQ(f.allocator(), Allocator::kMusl);
}

TEST(MapsFacts, NoLibcNoAllocator) {
  std::string source = "x";
  EXPECT_EQ(MapsFactsFrom(Join({kExe, kHeapLine})).allocator(&source), Allocator::kUnknown);
  EXPECT_EQ(source, "");
  // A file that only starts like an allocator library is not one.
  EXPECT_EQ(
      AllocatorOfMapping("7f00-7f01 r--p 00000000 08:01 9 /data/libjemalloc-notes.txt", nullptr),
      Allocator::kUnknown);
  EXPECT_EQ(AllocatorOfMapping("7f00-7f01 rw-p 00000000 00:00 0", nullptr), Allocator::kUnknown);
}

TEST(MapsFacts, ReplacedLibraryStillCounts) {
  std::string library;
  EXPECT_EQ(AllocatorOfMapping("7f00-7f01 r-xp 00000000 08:01 9 "
                               "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 (deleted)",
                               &library),
            Allocator::kJemalloc);
  EXPECT_EQ(library, "libjemalloc.so.2");
}

TEST(FoldRuntime, OneLineAtATime) {
  EXPECT_EQ(FoldRuntime(Runtime::kUnknown, kLibc), Runtime::kGlibc);
  EXPECT_EQ(FoldRuntime(Runtime::kGlibc, kJvm), Runtime::kJvm);
  EXPECT_EQ(FoldRuntime(Runtime::kJvm, kLibc), Runtime::kJvm);
  EXPECT_EQ(FoldRuntime(Runtime::kJvm, kMusl), Runtime::kJvm);
  EXPECT_EQ(FoldRuntime(Runtime::kGlibc, kMusl), Runtime::kGlibc);
  EXPECT_EQ(FoldRuntime(Runtime::kUnknown, kMusl), Runtime::kMusl);
  EXPECT_EQ(FoldRuntime(Runtime::kMusl, kAnonLine), Runtime::kMusl);
  EXPECT_EQ(FoldRuntime(Runtime::kUnknown, kHeapLine), Runtime::kUnknown);
}

TEST(RuntimeName, Names) {
  EXPECT_STREQ(RuntimeName(Runtime::kGlibc), "glibc");
  EXPECT_STREQ(RuntimeName(Runtime::kJvm), "jvm");
  EXPECT_STREQ(RuntimeName(Runtime::kMusl), "musl");
  EXPECT_STREQ(RuntimeName(Runtime::kUnknown), "unknown");
}

// ---------------------------------------------------------------------------
// cmdline.

TEST(CmdlineToString, NulsBecomeSpaces) {
  EXPECT_EQ(CmdlineToString("sleep\0"
                            "1000\0"sv),
            "sleep 1000");
  EXPECT_EQ(CmdlineToString("a\0b\0c\0"sv), "a b c");
}

TEST(CmdlineToString, TrailingNulIsDropped) {
  EXPECT_EQ(CmdlineToString("a\0b"sv), "a b");  // no trailing NUL
  EXPECT_EQ(CmdlineToString("java\0"sv), "java");
  EXPECT_EQ(CmdlineToString("x\0\0"sv), "x");
  EXPECT_EQ(CmdlineToString(""sv), "");
  EXPECT_EQ(CmdlineToString("\0"sv), "");
}

TEST(CmdlineToString, RewrittenTitleIsKept) {
  // setproctitle-style: one string with spaces, no NUL separators.
  EXPECT_EQ(CmdlineToString("nginx: worker process"sv), "nginx: worker process");
}

TEST(CmdlineToString, RecordedProcesses) {
  EXPECT_EQ(CmdlineToString(ReadWhole(FixtureDir("fragmenter") + "/cmdline")),
            "./fragmenter --threads 6 --rounds 3 --burst-mib 16 --ready-file fragmenter.ready "
            "--tag fixture --quiet");
  EXPECT_EQ(CmdlineToString(ReadWhole(FixtureDir("jvm17") + "/cmdline")),
            "java -Xmx64m -XX:NativeMemoryTracking=summary NativeChurn --threads 12 --ready-file "
            "native_churn.ready --quiet");
  EXPECT_EQ(CmdlineToString(ReadWhole(FixtureDir("sleep") + "/cmdline")), "sleep 1000");
}

// ---------------------------------------------------------------------------
// AnyTaskUninterruptible: a task tree written in /proc's shape, and this
// process itself.

// A task's stat line (recorded from a real `cat`, fields after comm kept)
// with its id, name and state.
std::string TaskStat(int tid, const std::string& comm, char state) {
  return std::to_string(tid) + " (" + comm + ") " + state +
         " 9463 9463 2473 0 -1 4194304 98 0 0 0 0 0 0 0 20 0 1 0 1165141 3133440 407 "
         "18446744073709551615 94194994970624 94194994990505 140727034119936 0 0 0 0 0 0 0 0 0 "
         "17 1 0 0 0 0 0 94194995006512 94194995008128 94195283312640 140727034120843 "
         "140727034120863 140727034120863 140727034122219 0\n";
}

TEST(TaskStates, ATaskInStateDIsSeenWhicheverThreadDirectoryIsNamed) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const fs::path proc = tmp.path() / "42";
  WriteFile(proc / "task" / "42" / "stat", TaskStat(42, "java", 'S'));
  // A name that spells a state is a name: the state follows the last ')'.
  WriteFile(proc / "task" / "43" / "stat", TaskStat(43, "w) D (x", 'R'));
  EXPECT_FALSE(AnyTaskUninterruptible(proc.string()));
  // The mapping thread queued for the mmap lock.
  WriteFile(proc / "task" / "44" / "stat", TaskStat(44, "mapper", 'D'));
  EXPECT_TRUE(AnyTaskUninterruptible(proc.string()));
  // Named through a live thread (a leader that called pthread_exit).
  EXPECT_TRUE(AnyTaskUninterruptible((proc / "task" / "43").string()));
}

TEST(TaskStates, WhatCannotBeToldCountsAsWaiting) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const fs::path proc = tmp.path() / "42";
  // No task directory (the process is gone, or /proc is not what it seems).
  fs::create_directories(proc);
  EXPECT_TRUE(AnyTaskUninterruptible(proc.string()));
  // More tasks than it may read.
  for (int tid = 42; tid < 45; ++tid) {
    WriteFile(proc / "task" / std::to_string(tid) / "stat", TaskStat(tid, "t", 'S'));
  }
  EXPECT_FALSE(AnyTaskUninterruptible(proc.string(), 3));
  EXPECT_TRUE(AnyTaskUninterruptible(proc.string(), 2));
  // A thread whose stat is gone (it ended while listed) waits for nothing.
  fs::remove(proc / "task" / "44" / "stat");
  EXPECT_FALSE(AnyTaskUninterruptible(proc.string()));
}

TEST(TaskStates, ThisRunningProcessHasNoTaskInStateD) {
  EXPECT_FALSE(AnyTaskUninterruptible("/proc/self"));
  EXPECT_FALSE(AnyTaskUninterruptible("/proc/" + std::to_string(::getpid())));
}

}  // namespace
}  // namespace memtrimd::procfs

// smaps_bench: what one smaps read costs memtrimd, against the floor of
// reading the same file and throwing the bytes away.
//
// Starts the many_mappings workload (--mappings 5000 by default, or
// $SMAPS_BENCH_MAPPINGS), waits for its ready file and benchmarks against
// that live process:
//
//   BM_RawRead         open + read() the whole of /proc/<pid>/smaps into a
//                      fixed 64 KiB buffer, close. The reference: the kernel's
//                      cost of producing the text, which no parser can avoid.
//   BM_ReadLines       ForEachLine with a callback that only counts lines:
//                      the reader's own cost (line splitting, one std::function
//                      call per line) without the parser.
//   BM_ReadAndParse    ForEachLine + SmapsParser::Feed + Finish: what the glibc
//                      collector does per read.
//   BM_Collect         GlibcHeapCollector::Collect: read + parse + arena heap
//                      detection + heap_info confirmation.
//   BM_ParseOnly       ParseSmaps over an in-memory copy of the text: the
//                      parser alone, without the kernel.
//   BM_StatusRawRead   the same floor for /proc/<pid>/status ...
//   BM_StatusReadAndParse  ... and ReadSmallFile + ParseProcStatus, which the
//                      process collector does every sample.
//
// After the run it prints the ratios against the references (CPU time, from
// the medians when --benchmark_repetitions is given; the wall-time ratio
// alongside) and whether the target ReadAndParse / RawRead <= 1.25 holds.
// The exit status stays 0 either way: a ratio is a report, not an assertion.
//
// The child is killed by pid on every way out: normal return, exit(), a fatal
// signal (handler), and, if this process is SIGKILLed, PR_SET_PDEATHSIG.

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "collectors/common/file_reader.h"
#include "collectors/common/target.h"
#include "collectors/glibc/glibc_heap_collector.h"
#include "collectors/procfs/proc_status.h"
#include "collectors/procfs/smaps.h"
#include "collectors/procfs/target_reader.h"
#include "collectors/sample.h"

#ifndef MEMTRIMD_MANY_MAPPINGS
#error "MEMTRIMD_MANY_MAPPINGS (path of the many_mappings workload) must be defined"
#endif

namespace {

constexpr double kParseTarget = 1.25;  // ReadAndParse / RawRead
constexpr std::size_t kMaxSmapsBytes = 256u << 20;

// --- The child process -------------------------------------------------------

// Plain globals: the signal handler reads them.
volatile pid_t g_child = -1;
char g_ready_dir[64] = {};
char g_ready_file[128] = {};
char g_ready_tmp[132] = {};  // many_mappings writes <ready>.tmp, then renames it

// Async-signal-safe: only unlink and rmdir.
void RemoveReadyFiles() {
  if (g_ready_file[0] != '\0') {
    ::unlink(g_ready_file);
    ::unlink(g_ready_tmp);
    g_ready_file[0] = '\0';
  }
  if (g_ready_dir[0] != '\0') {
    ::rmdir(g_ready_dir);
    g_ready_dir[0] = '\0';
  }
}

// SIGTERM, wait up to 2 s, then SIGKILL; always reaps.
void StopChild() {
  pid_t pid = g_child;
  if (pid <= 0) return;
  g_child = -1;
  ::kill(pid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (;;) {
    pid_t r = ::waitpid(pid, nullptr, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  RemoveReadyFiles();
}

// Fatal signals: kill and reap the child, remove the ready files (all
// async-signal-safe), then die of the same signal.
void OnFatalSignal(int sig) {
  pid_t pid = g_child;
  if (pid > 0) {
    g_child = -1;
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  RemoveReadyFiles();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// Static guard: its destructor runs on return from main and on exit().
struct ChildGuard {
  ~ChildGuard() { StopChild(); }
} g_child_guard;

void InstallSignalHandlers() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) {
    struct sigaction sa {};
    sa.sa_handler = OnFatalSignal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
  std::atexit(StopChild);
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "smaps_bench: %s\n", what.c_str());
  StopChild();
  std::exit(1);
}

// Starts many_mappings and waits (deadline) for its ready file.
pid_t StartManyMappings(long mappings) {
  const char* tmp = std::getenv("TMPDIR");
  if (tmp == nullptr || *tmp == '\0' || std::strlen(tmp) > 40) tmp = "/tmp";
  std::snprintf(g_ready_dir, sizeof g_ready_dir, "%s/smaps_bench.XXXXXX", tmp);
  if (::mkdtemp(g_ready_dir) == nullptr) {
    g_ready_dir[0] = '\0';
    Die(std::string("mkdtemp: ") + std::strerror(errno));
  }
  std::snprintf(g_ready_file, sizeof g_ready_file, "%s/ready", g_ready_dir);
  std::snprintf(g_ready_tmp, sizeof g_ready_tmp, "%s.tmp", g_ready_file);
  std::string count = std::to_string(mappings);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) Die(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // If the benchmark is SIGKILLed, the kernel still stops the workload.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, STDOUT_FILENO);
    ::execl(MEMTRIMD_MANY_MAPPINGS, "many_mappings", "--mappings", count.c_str(), "--ready-file",
            g_ready_file, "--quiet", static_cast<char*>(nullptr));
    std::fprintf(stderr, "smaps_bench: exec %s: %s\n", MEMTRIMD_MANY_MAPPINGS,
                 std::strerror(errno));
    ::_exit(127);
  }
  g_child = pid;

  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    if (::access(g_ready_file, F_OK) == 0) break;
    int st = 0;
    if (::waitpid(pid, &st, WNOHANG) == pid) {
      g_child = -1;
      Die("many_mappings exited before it was ready (status " + std::to_string(st) + ")");
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      Die("many_mappings did not write its ready file within 30 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pid;
}

// --- Shared state --------------------------------------------------------------

pid_t g_pid = 0;
std::string g_smaps_path;
std::string g_status_path;
std::string g_smaps_text;  // one copy of the file, for BM_ParseOnly
memtrimd::Target g_target;

std::array<char, 64 * 1024> g_raw_buf;

// open + read() everything into the fixed buffer + close; returns bytes read.
std::size_t RawRead(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
  if (fd < 0) return 0;
  std::size_t total = 0;
  for (;;) {
    ssize_t got = ::read(fd, g_raw_buf.data(), g_raw_buf.size());
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    total += static_cast<std::size_t>(got);
  }
  ::close(fd);
  benchmark::DoNotOptimize(g_raw_buf.data());
  return total;
}

// --- Benchmarks ----------------------------------------------------------------

void BM_RawRead(benchmark::State& state) {
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::size_t n = RawRead(g_smaps_path);
    if (n == 0) {
      state.SkipWithError("raw read of smaps returned nothing");
      break;
    }
    bytes += n;
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}

void BM_ReadAndParse(benchmark::State& state) {
  // Like the collector: the mapping vector's capacity is reused across reads.
  std::vector<memtrimd::procfs::Mapping> storage;
  std::size_t mappings = 0;
  for (auto _ : state) {
    memtrimd::procfs::SmapsParser parser;
    parser.Reset(std::move(storage));
    memtrimd::Status st = memtrimd::ForEachLine(g_smaps_path, kMaxSmapsBytes,
                                                [&](std::string_view line) { parser.Feed(line); });
    auto result = parser.Finish();
    if (!st.ok() || !result.ok()) {
      state.SkipWithError(!st.ok() ? st.message().c_str() : result.status().message().c_str());
      break;
    }
    mappings = result->size();
    storage = std::move(result).value();
    benchmark::DoNotOptimize(storage.data());
  }
  state.counters["mappings"] = static_cast<double>(mappings);
}

// ForEachLine with a callback that only counts: the reader's line splitting
// and the std::function call per line, without the parser.
void BM_ReadLines(benchmark::State& state) {
  std::size_t lines = 0;
  for (auto _ : state) {
    lines = 0;
    memtrimd::Status st =
        memtrimd::ForEachLine(g_smaps_path, kMaxSmapsBytes, [&](std::string_view line) {
          benchmark::DoNotOptimize(line.data());
          ++lines;
        });
    if (!st.ok()) {
      state.SkipWithError(st.message().c_str());
      break;
    }
  }
  state.counters["lines"] = static_cast<double>(lines);
}

void BM_Collect(benchmark::State& state) {
  memtrimd::glibc::GlibcHeapCollector collector(memtrimd::glibc::GlibcHeapOptions{});
  std::size_t mappings = 0;
  for (auto _ : state) {
    memtrimd::TargetSample out;
    memtrimd::Status st = collector.Collect(g_target, out);
    if (!st.ok() || !out.glibc) {
      state.SkipWithError(st.ok() ? "no glibc sample" : st.message().c_str());
      break;
    }
    mappings = out.glibc->mappings;
    benchmark::DoNotOptimize(out);
  }
  state.counters["mappings"] = static_cast<double>(mappings);
}

void BM_ParseOnly(benchmark::State& state) {
  std::size_t mappings = 0;
  for (auto _ : state) {
    auto result = memtrimd::procfs::ParseSmaps(g_smaps_text);
    if (!result.ok()) {
      state.SkipWithError(result.status().message().c_str());
      break;
    }
    mappings = result->size();
    benchmark::DoNotOptimize(result);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(g_smaps_text.size()));
  state.counters["mappings"] = static_cast<double>(mappings);
}

void BM_StatusRawRead(benchmark::State& state) {
  for (auto _ : state) {
    if (RawRead(g_status_path) == 0) {
      state.SkipWithError("raw read of status returned nothing");
      break;
    }
  }
}

void BM_StatusReadAndParse(benchmark::State& state) {
  for (auto _ : state) {
    auto text = memtrimd::ReadSmallFile(g_status_path);
    if (!text.ok()) {
      state.SkipWithError(text.status().message().c_str());
      break;
    }
    auto st = memtrimd::procfs::ParseProcStatus(*text);
    if (!st.ok()) {
      state.SkipWithError(st.status().message().c_str());
      break;
    }
    benchmark::DoNotOptimize(st);
  }
}

BENCHMARK(BM_RawRead)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReadLines)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReadAndParse)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Collect)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ParseOnly)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StatusRawRead)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StatusReadAndParse)->Unit(benchmark::kMicrosecond);

// --- Ratios ----------------------------------------------------------------------

// The console reporter, also keeping each benchmark's wall and CPU time per
// iteration (the median when repetitions were asked for, else the mean of the
// runs).
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  struct Times {
    double wall_us = -1;  // < 0: the benchmark did not run
    double cpu_us = -1;
  };

  // Colour only on a terminal, so logs and pipes get plain text.
  RatioReporter() : ConsoleReporter(::isatty(STDOUT_FILENO) ? OO_ColorTabular : OO_Tabular) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      std::string name = r.run_name.function_name;
      double scale = UnitToMicros(r.time_unit);
      double wall = r.GetAdjustedRealTime() * scale;
      double cpu = r.GetAdjustedCPUTime() * scale;
      if (r.run_type == Run::RT_Aggregate) {
        if (r.aggregate_name == "median") median_[name] = Times{wall, cpu};
      } else {
        Times& t = sum_[name];
        t.wall_us = (t.wall_us < 0 ? 0 : t.wall_us) + wall;
        t.cpu_us = (t.cpu_us < 0 ? 0 : t.cpu_us) + cpu;
        count_[name] += 1;
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }

  Times Get(const std::string& name) const {
    if (auto it = median_.find(name); it != median_.end()) return it->second;
    if (auto it = sum_.find(name); it != sum_.end()) {
      double n = count_.at(name);
      return Times{it->second.wall_us / n, it->second.cpu_us / n};
    }
    return Times{};
  }

 private:
  static double UnitToMicros(benchmark::TimeUnit u) {
    switch (u) {
      case benchmark::kNanosecond:
        return 1e-3;
      case benchmark::kMicrosecond:
        return 1;
      case benchmark::kMillisecond:
        return 1e3;
      case benchmark::kSecond:
        return 1e6;
    }
    return 1;
  }
  std::map<std::string, Times> median_;
  std::map<std::string, Times> sum_;
  std::map<std::string, int> count_;
};

// The ratio is taken on CPU time (user + system of this process: the kernel
// produces smaps in the reading thread, so the raw read is almost all system
// time). On a shared machine wall time also counts time spent preempted;
// its ratio is printed alongside.
void PrintRatio(const RatioReporter& rep, const char* num, const char* den, double target) {
  RatioReporter::Times a = rep.Get(num);
  RatioReporter::Times b = rep.Get(den);
  if (a.cpu_us < 0 || b.cpu_us <= 0 || b.wall_us <= 0) return;
  double ratio = a.cpu_us / b.cpu_us;
  std::printf("ratio %s/%s = %.3f  (CPU %.1f us / %.1f us; wall ratio %.3f)", num + 3, den + 3,
              ratio, a.cpu_us, b.cpu_us, a.wall_us / b.wall_us);
  if (target > 0) std::printf("  target <= %.2f: %s", target, ratio <= target ? "PASS" : "FAIL");
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  InstallSignalHandlers();

  long mappings = 5000;
  if (const char* env = std::getenv("SMAPS_BENCH_MAPPINGS"); env != nullptr && *env != '\0') {
    mappings = std::strtol(env, nullptr, 10);
    if (mappings < 1) Die("SMAPS_BENCH_MAPPINGS must be a positive integer");
  }
  g_pid = StartManyMappings(mappings);
  g_smaps_path = "/proc/" + std::to_string(g_pid) + "/smaps";
  g_status_path = "/proc/" + std::to_string(g_pid) + "/status";

  auto target = memtrimd::procfs::ReadTarget("/proc", g_pid);
  if (!target.ok()) Die("ReadTarget: " + target.status().message());
  g_target = *target;

  auto text = memtrimd::ReadSmallFile(g_smaps_path, kMaxSmapsBytes);
  if (!text.ok()) Die("read " + g_smaps_path + ": " + text.status().message());
  g_smaps_text = std::move(text).value();
  auto parsed = memtrimd::procfs::ParseSmaps(g_smaps_text);
  if (!parsed.ok()) Die("parse " + g_smaps_path + ": " + parsed.status().message());

  std::printf("many_mappings --mappings %ld: pid %d, %zu mappings in smaps, %zu bytes of smaps\n",
              mappings, static_cast<int>(g_pid), parsed->size(), g_smaps_text.size());
  std::fflush(stdout);
  benchmark::AddCustomContext("many_mappings_requested", std::to_string(mappings));
  benchmark::AddCustomContext("smaps_mappings", std::to_string(parsed->size()));
  benchmark::AddCustomContext("smaps_bytes", std::to_string(g_smaps_text.size()));

  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  std::printf("\n");
  PrintRatio(reporter, "BM_ReadAndParse", "BM_RawRead", kParseTarget);
  PrintRatio(reporter, "BM_ReadLines", "BM_RawRead", 0);
  PrintRatio(reporter, "BM_Collect", "BM_RawRead", 0);
  PrintRatio(reporter, "BM_ParseOnly", "BM_RawRead", 0);
  PrintRatio(reporter, "BM_StatusReadAndParse", "BM_StatusRawRead", 0);
  std::fflush(stdout);

  StopChild();
  return 0;
}

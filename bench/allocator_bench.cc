// allocator_bench: what one read of the allocator's own figures ("allocator")
// and one release ("trim") cost through the preload agent, against references
// measured in the same run on the same target:
//
//   statm         open + read /proc/<pid>/statm + close, by this process
//   smaps_rollup  the same for /proc/<pid>/smaps_rollup (the kernel walks
//                 every mapping's page tables: what a sample already costs)
//   ping          the agent's "ping": the socket round trip alone, through
//                 the same client memtrimd uses (AgentCommand: socket path
//                 from environ, ownership and peer checks, deadline)
//   malloc_info   under glibc only: the agent's malloc_info, which the agent
//                 collector already asks for every smaps interval
//
//   allocator_bench --pid PID [--label NAME] [--reads 500] [--releases 50]
//                   [--warmup 20] [--header]
//
// The reads are interleaved (one of each kind per round, the order rotating),
// so all kinds see the same machine. Each is timed on the wall clock and on
// two CPU clocks: this thread's (memtrimd's side, which for the /proc reads
// is all the work: the kernel runs it in the reader) and the target's whole
// process (the agent thread's work: utime + stime, read with
// clock_getcpuclockid in nanoseconds rather than /proc/<pid>/stat's clock
// ticks). A target that is idle apart from the agent (the fragmenter once
// ready) is needed for the second to mean "per request"; after each agent
// request the target's clock is read only once the agent's two tasks sleep
// again (its socket task back in accept(), its thread waiting for the next
// call), so their close and return count to that request.
//
// Then the releases: one "trim" on the heap as the target left it (the first
// release does the real work: it is reported alone, with the RSS it gave
// back and the allocator's free-kept figure around it), then --releases more
// on the released heap (the steady state of a trim schedule).
//
// Output: markdown table rows, each line prefixed with its table's name and
// a tab ("reads\t| ... |", "releases\t| ... |"), so a driver can collect the
// rows of several targets under one header (--header prints the headers in
// the same form and exits). bench/allocator_bench.sh runs it for every
// allocator. Exit status 1 when a request fails.

#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench_args.h"
#include "collectors/agent/client/agent_client.h"
#include "collectors/agent/client/allocator_stats.h"
#include "collectors/common/allocator.h"
#include "collectors/procfs/target_reader.h"

namespace {

using memtrimd::Result;
using memtrimd::Target;
namespace agent = memtrimd::agent;
using Clock = std::chrono::steady_clock;

struct Options {
  pid_t pid = 0;
  std::string label;
  long reads = 500;
  long releases = 50;
  long warmup = 20;
  bool header = false;
};

[[noreturn]] void Usage(const std::string& msg) {
  if (!msg.empty()) std::fprintf(stderr, "allocator_bench: %s\n", msg.c_str());
  std::fprintf(stderr,
               "usage: allocator_bench --pid PID [--label NAME] [--reads 500] [--releases 50] "
               "[--warmup 20] [--header]\n");
  std::exit(2);
}

long ParseLong(const char* s, const char* what, long lo, long hi) {
  std::optional<long> v = bench::ParseLongIn(s, lo, hi);
  if (!v) Usage(bench::NotAnInteger(what, s, lo, hi));
  return *v;
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) Usage(std::string(name) + " needs a value");
      return argv[++i];
    };
    if (a == "--pid") {
      o.pid = static_cast<pid_t>(ParseLong(value("--pid"), "--pid", 1, 1 << 22));
    } else if (a == "--label") {
      o.label = value("--label");
    } else if (a == "--reads") {
      o.reads = ParseLong(value("--reads"), "--reads", 1, 1000000);
    } else if (a == "--releases") {
      o.releases = ParseLong(value("--releases"), "--releases", 0, 100000);
    } else if (a == "--warmup") {
      o.warmup = ParseLong(value("--warmup"), "--warmup", 0, 100000);
    } else if (a == "--header") {
      o.header = true;
    } else if (a == "--help" || a == "-h") {
      Usage("");
    } else {
      Usage("unknown argument '" + std::string(a) + "'");
    }
  }
  if (!o.header && o.pid == 0) Usage("--pid is required");
  return o;
}

int64_t Nanos(clockid_t clock) {
  timespec ts{};
  if (::clock_gettime(clock, &ts) != 0) return 0;
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// What one request or read cost.
struct Cost {
  int64_t wall_ns = 0;
  int64_t own_cpu_ns = 0;     // this thread: memtrimd's side
  int64_t target_cpu_ns = 0;  // the target process
};

struct Series {
  std::vector<Cost> costs;

  // Nearest rank over the wall times.
  double WallPercentileUs(double p) const {
    if (costs.empty()) return 0;
    std::vector<int64_t> w;
    w.reserve(costs.size());
    for (const Cost& c : costs) w.push_back(c.wall_ns);
    std::sort(w.begin(), w.end());
    auto rank = static_cast<std::size_t>(p / 100.0 * static_cast<double>(w.size()) + 0.999999);
    rank = std::clamp<std::size_t>(rank, 1, w.size());
    return static_cast<double>(w[rank - 1]) / 1e3;
  }
  double MeanUs(int64_t Cost::*field) const {
    if (costs.empty()) return 0;
    double sum = 0;
    for (const Cost& c : costs) sum += static_cast<double>(c.*field);
    return sum / static_cast<double>(costs.size()) / 1e3;
  }
  double OwnCpuUs() const { return MeanUs(&Cost::own_cpu_ns); }
  double TargetCpuUs() const { return MeanUs(&Cost::target_cpu_ns); }
  double TotalCpuUs() const { return OwnCpuUs() + TargetCpuUs(); }
};

// The target: its identity for the agent client, its CPU clock, and the
// stat files of the agent's thread and socket task (to see them asleep).
class Subject {
 public:
  bool Open(pid_t pid) {
    Result<Target> t = memtrimd::procfs::ReadTarget("/proc", pid);
    if (!t.ok()) return Fail("pid " + std::to_string(pid) + ": " + t.status().message());
    target_ = std::move(t).value();
    if (::clock_getcpuclockid(pid, &cpu_clock_) != 0) return Fail("clock_getcpuclockid");
    const std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
    if (DIR* d = ::opendir(task_dir.c_str())) {
      while (dirent* e = ::readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::string dir = task_dir + "/" + e->d_name;
        std::array<char, 32> comm{};
        if (ReadSmall(dir + "/comm", comm.data(), comm.size()) > 0 &&
            (std::string_view(comm.data()).starts_with("memtrimd-agent") ||
             std::string_view(comm.data()).starts_with("memtrimd-sock"))) {
          agent_stats_.push_back(dir + "/stat");
        }
      }
      ::closedir(d);
    }
    if (agent_stats_.size() != 2) {
      return Fail("no memtrimd-agent and memtrimd-sock tasks: is the agent preloaded?");
    }
    statm_ = "/proc/" + std::to_string(pid) + "/statm";
    rollup_ = "/proc/" + std::to_string(pid) + "/smaps_rollup";
    return true;
  }

  const Target& target() const { return target_; }
  const std::string& statm() const { return statm_; }
  const std::string& rollup() const { return rollup_; }
  const std::string& error() const { return error_; }
  int64_t TargetCpu() const { return Nanos(cpu_clock_); }

  // Polls (bounded: 1 s) until both agent tasks sleep again: after the
  // answer the socket task still closes the connection and returns to
  // accept().
  void WaitAgentIdle() const {
    const auto deadline = Clock::now() + std::chrono::seconds(1);
    std::array<char, 512> buf{};
    for (const std::string& stat : agent_stats_) {
      while (Clock::now() < deadline) {
        ssize_t n = ReadSmall(stat, buf.data(), buf.size());
        if (n <= 0) break;
        // "tid (comm) S ...": the state follows the last ')'.
        std::string_view s(buf.data(), static_cast<std::size_t>(n));
        std::size_t close = s.rfind(')');
        if (close == std::string_view::npos || close + 2 >= s.size()) break;
        if (s[close + 2] != 'R') break;
      }
    }
  }

  // Reads the whole file into a scratch buffer of `cap` bytes, as a
  // collector's raw read does; the bytes are thrown away. Returns the byte
  // count, or -1.
  static ssize_t ReadAll(const std::string& path, char* buf, std::size_t cap) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t total = 0;
    for (;;) {
      ssize_t n = ::read(fd, buf, cap);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) total = -1;
      if (n <= 0) break;
      total += n;
    }
    ::close(fd);
    return total;
  }

  // One read() of a small file, '\0'-terminated (`cap` includes the '\0').
  static ssize_t ReadSmall(const std::string& path, char* buf, std::size_t cap) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n;
    do {
      n = ::read(fd, buf, cap - 1);
    } while (n < 0 && errno == EINTR);
    ::close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return n;
  }

 private:
  bool Fail(std::string m) {
    error_ = std::move(m);
    return false;
  }

  Target target_;
  clockid_t cpu_clock_ = CLOCK_REALTIME;
  std::vector<std::string> agent_stats_;  // the agent's thread and socket task
  std::string statm_, rollup_, error_;
};

enum class Kind { kStatm, kRollup, kPing, kAllocator, kMallocInfo };

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kStatm:
      return "statm read";
    case Kind::kRollup:
      return "smaps_rollup read";
    case Kind::kPing:
      return "agent ping";
    case Kind::kAllocator:
      return "agent allocator";
    case Kind::kMallocInfo:
      return "agent malloc_info";
  }
  return "?";
}

std::vector<char> g_scratch(1 << 16);

// One read or request, timed; `body` receives an agent answer.
bool Measure(const Subject& s, Kind k, Cost& cost, std::string* body = nullptr) {
  const int64_t t0 = s.TargetCpu();
  const int64_t c0 = Nanos(CLOCK_THREAD_CPUTIME_ID);
  const auto w0 = Clock::now();
  bool ok = true;
  std::string err;
  if (k == Kind::kStatm || k == Kind::kRollup) {
    ok = Subject::ReadAll(k == Kind::kStatm ? s.statm() : s.rollup(), g_scratch.data(),
                          g_scratch.size()) > 0;
    if (!ok) err = std::strerror(errno);
  } else {
    const char* command = k == Kind::kPing        ? "ping"
                          : k == Kind::kAllocator ? "allocator"
                                                  : "malloc_info";
    Result<std::string> r = agent::AgentCommand(s.target(), command);
    ok = r.ok();
    if (!ok) {
      err = r.status().message();
    } else if (body != nullptr) {
      *body = std::move(r).value();
    }
  }
  const auto w1 = Clock::now();
  const int64_t c1 = Nanos(CLOCK_THREAD_CPUTIME_ID);
  if (k != Kind::kStatm && k != Kind::kRollup) s.WaitAgentIdle();
  const int64_t t1 = s.TargetCpu();
  if (!ok) {
    std::fprintf(stderr, "allocator_bench: %s: %s\n", KindName(k), err.c_str());
    return false;
  }
  cost.wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(w1 - w0).count();
  cost.own_cpu_ns = c1 - c0;
  cost.target_cpu_ns = t1 - t0;
  return true;
}

struct Release {
  Cost cost;
  agent::AgentTrim trim;
};

bool MeasureRelease(const Subject& s, Release& out) {
  const int64_t t0 = s.TargetCpu();
  const int64_t c0 = Nanos(CLOCK_THREAD_CPUTIME_ID);
  const auto w0 = Clock::now();
  Result<agent::AgentTrim> r = agent::AgentTrimNow(s.target());
  const auto w1 = Clock::now();
  const int64_t c1 = Nanos(CLOCK_THREAD_CPUTIME_ID);
  s.WaitAgentIdle();
  const int64_t t1 = s.TargetCpu();
  if (!r.ok()) {
    std::fprintf(stderr, "allocator_bench: trim: %s\n", r.status().message().c_str());
    return false;
  }
  out.trim = std::move(r).value();
  out.cost.wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(w1 - w0).count();
  out.cost.own_cpu_ns = c1 - c0;
  out.cost.target_cpu_ns = t1 - t0;
  return true;
}

std::string Mib(std::optional<uint64_t> bytes) {
  if (!bytes) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", static_cast<double>(*bytes) / (1024.0 * 1024.0));
  return b;
}

double Ratio(double a, double b) { return b > 0 ? a / b : 0; }

void PrintHeaders() {
  std::printf(
      "reads\t| allocator | what | n | wall p50 (us) | wall p99 (us) | memtrimd CPU (us) | "
      "target CPU (us) | p50 / ping | p50 / smaps_rollup | CPU / smaps_rollup |\n");
  std::printf("reads\t|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  std::printf(
      "releases\t| allocator | call | which | n | wall p50 (ms) | wall max (ms) | in the call "
      "p50 (ms) | target CPU (ms) | RSS before -> after (MiB) | free kept before -> after (MiB) | "
      "p50 / ping | p50 / smaps_rollup |\n");
  std::printf("releases\t|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|\n");
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = ParseArgs(argc, argv);
  if (o.header) {
    PrintHeaders();
    return 0;
  }
  Subject s;
  if (!s.Open(o.pid)) {
    std::fprintf(stderr, "allocator_bench: %s\n", s.error().c_str());
    return 1;
  }

  // Which allocator serves the target (and a first request of each kind:
  // page cache, the allocator's per-thread state in the agent thread).
  Cost scratch;
  std::string body;
  if (!Measure(s, Kind::kAllocator, scratch, &body)) return 1;
  Result<agent::AllocatorStats> stats = agent::ParseAllocatorStats(body);
  if (!stats.ok()) {
    std::fprintf(stderr, "allocator_bench: allocator answer: %s\n",
                 stats.status().message().c_str());
    return 1;
  }
  const std::string label =
      o.label.empty() ? std::string(memtrimd::AllocatorName(stats->allocator)) : o.label;
  // Under glibc the agent collector also asks "malloc_info" every smaps
  // interval: what a sample already cost the target before "allocator".
  std::vector<Kind> kinds = {Kind::kStatm, Kind::kRollup, Kind::kPing, Kind::kAllocator};
  if (stats->allocator == memtrimd::Allocator::kGlibc) kinds.push_back(Kind::kMallocInfo);
  for (long i = 0; i < o.warmup; ++i) {
    for (Kind k : kinds) {
      if (!Measure(s, k, scratch)) return 1;
    }
  }

  std::vector<Series> series(kinds.size());
  for (Series& x : series) x.costs.reserve(static_cast<std::size_t>(o.reads));
  for (long i = 0; i < o.reads; ++i) {
    // Rotate the order so no kind always follows another.
    for (std::size_t j = 0; j < kinds.size(); ++j) {
      const std::size_t k = (j + static_cast<std::size_t>(i)) % kinds.size();
      Cost c;
      if (!Measure(s, kinds[k], c)) return 1;
      series[k].costs.push_back(c);
    }
  }
  const Series& ping = series[2];
  const Series& rollup = series[1];
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    const Series& x = series[k];
    std::printf("reads\t| %s | %s | %zu | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %.2f |\n",
                label.c_str(), KindName(kinds[k]), x.costs.size(), x.WallPercentileUs(50),
                x.WallPercentileUs(99), x.OwnCpuUs(), x.TargetCpuUs(),
                Ratio(x.WallPercentileUs(50), ping.WallPercentileUs(50)),
                Ratio(x.WallPercentileUs(50), rollup.WallPercentileUs(50)),
                Ratio(x.TotalCpuUs(), rollup.TotalCpuUs()));
  }

  Release first;
  if (!MeasureRelease(s, first)) return 1;
  std::vector<Release> again(static_cast<std::size_t>(o.releases));
  for (Release& r : again) {
    if (!MeasureRelease(s, r)) return 1;
  }
  auto row = [&](const char* which, const std::vector<Release>& rs) {
    if (rs.empty()) return;
    Series wall, inside;
    for (const Release& r : rs) {
      wall.costs.push_back(r.cost);
      inside.costs.push_back(Cost{r.trim.duration.count(), 0, 0});
    }
    const double p50_us = wall.WallPercentileUs(50);
    const Release& last = rs.back();
    // The first release's "before" and the last one's "after".
    const std::string rss = Mib(rs.front().trim.rss_before) + " -> " + Mib(last.trim.rss_after);
    const std::string kept =
        Mib(rs.front().trim.free_kept_before) + " -> " + Mib(last.trim.free_kept_after);
    std::printf(
        "releases\t| %s | %s | %s | %zu | %.2f | %.2f | %.2f | %.2f | %s | %s | %.0f | %.0f "
        "|\n",
        label.c_str(), last.trim.call.c_str(), which, rs.size(), p50_us / 1e3,
        wall.WallPercentileUs(100) / 1e3, inside.WallPercentileUs(50) / 1e3,
        wall.TargetCpuUs() / 1e3, rss.c_str(), kept.c_str(),
        Ratio(p50_us, ping.WallPercentileUs(50)), Ratio(p50_us, rollup.WallPercentileUs(50)));
  };
  row("first", {first});
  row("again", again);
  return 0;
}

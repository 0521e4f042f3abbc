// resident_bench: what one resident pass of the sites collector costs (the
// resident pages of every live sampled allocation's range, read from
// /proc/<pid>/pagemap: agent::EstimateResident with its default bounds),
// against a reference measured in the same run on the same process: one
// read of /proc/<pid>/smaps (what the smaps collector does every
// --smaps.interval; the kernel walks every mapping's page tables for it).
//
//   resident_bench [--samples 65536] [--rounds 21] [--seed 1]
//
// It forks a target that mallocs --samples blocks (sizes log-uniform from
// 64 B to 1 MiB), writes a random share of each, and sends their addresses;
// the pass is then given one live sample per block (weights as the sampler
// gives them at the default 512 KiB period, 64 samples a stack). 65,536 is
// the agent's whole live table: the worst case. Passes and smaps reads
// alternate, --rounds of each; the medians of wall and this thread's CPU
// time are printed, with their ratio, and the pass's share of the default
// --sites.interval (30 s). The target does no work for either read: its
// only cost is the read side of its mmap lock while the kernel walks its
// page tables (as for smaps). The target is killed by its pid on exit.

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_args.h"
#include "collectors/agent/client/agent_sites.h"
#include "collectors/agent/client/site_resident.h"
#include "collectors/common/file_reader.h"
#include "collectors/procfs/pagemap.h"

namespace {

struct Block {
  uint64_t ptr;
  uint64_t size;
};

double Seconds(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The target: holds the blocks, sends them, waits to be killed.
[[noreturn]] void RunTarget(int fd, long n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> log_size(std::log(64.0), std::log(1048576.0));
  std::uniform_real_distribution<double> share(0.0, 1.0);
  std::vector<Block> blocks;
  blocks.reserve(static_cast<std::size_t>(n));
  for (long i = 0; i < n; ++i) {
    const auto size = static_cast<uint64_t>(std::exp(log_size(rng)));
    char* p = static_cast<char*>(std::calloc(1, size));
    if (p == nullptr) ::_exit(2);
    std::memset(p, 1, static_cast<std::size_t>(static_cast<double>(size) * share(rng)));
    blocks.push_back(Block{reinterpret_cast<uintptr_t>(p), size});
  }
  const char* at = reinterpret_cast<const char*>(blocks.data());
  std::size_t left = blocks.size() * sizeof(Block);
  while (left > 0) {
    ssize_t w = ::write(fd, at, left);
    if (w <= 0) ::_exit(3);
    at += w;
    left -= static_cast<std::size_t>(w);
  }
  ::close(fd);
  for (;;) ::pause();
}

}  // namespace

int main(int argc, char** argv) {
  long samples = 65536, rounds = 21, seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    long* into = flag == "--samples"  ? &samples
                 : flag == "--rounds" ? &rounds
                 : flag == "--seed"   ? &seed
                                      : nullptr;
    if (into == nullptr) {
      std::fprintf(stderr, "usage: resident_bench [--samples N] [--rounds R] [--seed S]\n");
      return 2;
    }
    std::optional<long> v = bench::ParseLongIn(argv[i + 1], 1, 1 << 20);
    if (!v) {
      std::fprintf(stderr, "%s\n", bench::NotAnInteger(argv[i], argv[i + 1], 1, 1 << 20).c_str());
      return 2;
    }
    *into = *v;
  }
  int fds[2];
  if (::pipe(fds) != 0) return 1;
  const pid_t pid = ::fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    ::close(fds[0]);
    RunTarget(fds[1], samples, static_cast<uint64_t>(seed));
  }
  ::close(fds[1]);
  std::vector<Block> blocks(static_cast<std::size_t>(samples));
  char* into = reinterpret_cast<char*>(blocks.data());
  std::size_t want = blocks.size() * sizeof(Block), got = 0;
  while (got < want) {
    ssize_t r = ::read(fds[0], into + got, want - got);
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  ::close(fds[0]);
  int rc = 0;
  if (got != want) {
    std::fprintf(stderr, "resident_bench: the target sent %zu of %zu bytes\n", got, want);
    rc = 1;
  } else {
    namespace agent = memtrimd::agent;
    agent::AgentSites sites;
    sites.has_live = true;
    sites.stacks.resize(static_cast<std::size_t>((samples + 63) / 64));
    constexpr double kPeriod = 512.0 * 1024;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const double s = static_cast<double>(blocks[i].size);
      const auto weight = static_cast<uint64_t>(s / (1.0 - std::exp(-s / kPeriod)));
      sites.live.push_back(
          agent::LiveSample{static_cast<uint32_t>(i / 64), blocks[i].ptr, blocks[i].size, weight});
      sites.stacks[i / 64].values.live_bytes += weight;
    }
    sites.live_seen = sites.live_listed = sites.live.size();
    const std::string proc = "/proc/" + std::to_string(pid);
    auto pages = memtrimd::procfs::Pagemap::Open(proc);
    if (!pages.ok()) {
      std::fprintf(stderr, "resident_bench: %s\n", pages.status().message().c_str());
      rc = 1;
    }
    std::vector<double> pass_wall, pass_cpu, smaps_wall, smaps_cpu;
    uint64_t smaps_bytes = 0;
    for (long r = 0; r < rounds && rc == 0; ++r) {
      double w = Seconds(CLOCK_MONOTONIC), c = Seconds(CLOCK_THREAD_CPUTIME_ID);
      agent::EstimateResident(sites, *pages, agent::ResidentOptions{});
      pass_wall.push_back(Seconds(CLOCK_MONOTONIC) - w);
      pass_cpu.push_back(Seconds(CLOCK_THREAD_CPUTIME_ID) - c);
      if (!sites.resident.known) {
        std::fprintf(stderr, "resident_bench: %s\n", sites.resident.why.c_str());
        rc = 1;
        break;
      }
      w = Seconds(CLOCK_MONOTONIC);
      c = Seconds(CLOCK_THREAD_CPUTIME_ID);
      auto smaps = memtrimd::ReadSmallFile(proc + "/smaps", 256u << 20);
      smaps_wall.push_back(Seconds(CLOCK_MONOTONIC) - w);
      smaps_cpu.push_back(Seconds(CLOCK_THREAD_CPUTIME_ID) - c);
      if (!smaps.ok()) {
        rc = 1;
        break;
      }
      smaps_bytes = smaps->size();
    }
    if (rc == 0) {
      uint64_t resident = 0, live = 0;
      for (const agent::AgentStack& s : sites.stacks) {
        resident += s.values.resident_bytes;
        live += s.values.live_bytes;
      }
      const double pw = Median(pass_wall), pc = Median(pass_cpu);
      const double sw = Median(smaps_wall), sc = Median(smaps_cpu);
      std::printf(
          "| samples | pages read | pass wall ms | pass CPU ms | smaps wall ms | smaps CPU ms "
          "| pass / smaps (wall) | pass / smaps (CPU) | share of a 30 s interval | "
          "scaled | resident / live |\n");
      std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n");
      std::printf(
          "| %ld | %llu | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.4f %% | %s | %.2f |\n",
          samples, static_cast<unsigned long long>(sites.resident.pages_read), pw * 1e3, pc * 1e3,
          sw * 1e3, sc * 1e3, pw / sw, pc / sc, 100.0 * pw / 30.0,
          sites.resident.scaled ? "yes" : "no",
          static_cast<double>(resident) / static_cast<double>(live));
      std::printf("(smaps: %llu bytes; medians of %ld rounds)\n",
                  static_cast<unsigned long long>(smaps_bytes), rounds);
    }
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return rc;
}

// Fuzz target: /proc/<pid>/stat (procfs::ParseProcStat), the source of a
// target's identity (start time, field 22).
//
// Invariants: the fields it understood, written back with comm between
// the first '(' and the last ')' as the kernel does, parse to the same
// struct; StartTimeSeconds is finite and not before boot.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/procfs/proc_stat.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using memtrimd::procfs::ProcStat;

std::string Format(const ProcStat& s) {
  // pid_t values come from a truncated uint64: write them back unsigned.
  std::string out = std::to_string(static_cast<uint32_t>(s.pid)) + " (" + s.comm + ") ";
  out += s.state;
  out += " " + std::to_string(static_cast<uint32_t>(s.ppid));
  for (int field = 5; field <= 24; ++field) {
    uint64_t v = 0;
    if (field == 14) v = s.utime_ticks;
    if (field == 15) v = s.stime_ticks;
    if (field == 22) v = s.start_ticks;
    if (field == 23) v = s.vsize_bytes;
    if (field == 24) v = s.rss_pages;
    out += " " + std::to_string(v);
  }
  return out + "\n";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto stat = memtrimd::procfs::ParseProcStat(memtrimd::fuzz::AsText(data, size));
  if (!stat.ok()) return 0;
  const ProcStat& s = *stat;
  FUZZ_CHECK(s.comm.size() + 2 <= size);  // between the parentheses of the input
  auto again = memtrimd::procfs::ParseProcStat(Format(s));
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->pid == s.pid && again->comm == s.comm && again->state == s.state &&
             again->ppid == s.ppid && again->start_ticks == s.start_ticks &&
             again->utime_ticks == s.utime_ticks && again->stime_ticks == s.stime_ticks &&
             again->vsize_bytes == s.vsize_bytes && again->rss_pages == s.rss_pages);
  double t = memtrimd::procfs::StartTimeSeconds(s.start_ticks, 1700000000, 100);
  FUZZ_CHECK(std::isfinite(t) && t >= 1700000000);
  FUZZ_CHECK(memtrimd::procfs::StartTimeSeconds(s.start_ticks, 1700000000, 0) == 0);
  return 0;
}

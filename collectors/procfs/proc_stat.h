// /proc/<pid>/stat: only what identity needs (start time) and a few basics.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "collectors/common/status.h"

namespace memtrimd::procfs {

struct ProcStat {
  pid_t pid = 0;
  std::string comm;  // between the parentheses; may contain spaces and ')'
  char state = '?';
  pid_t ppid = 0;
  uint64_t start_ticks = 0;  // field 22: clock ticks after boot
  uint64_t utime_ticks = 0;  // fields 14 and 15
  uint64_t stime_ticks = 0;
  uint64_t vsize_bytes = 0;  // field 23
  uint64_t rss_pages = 0;    // field 24

  // Exited: a zombie ('Z', not yet reaped by its parent) or dead ('X'; 'x'
  // on kernels before 3.14). Its pid and start time stay until the parent
  // reaps it, possibly forever; its memory is gone already.
  bool Exited() const { return state == 'Z' || state == 'X' || state == 'x'; }
};

Result<ProcStat> ParseProcStat(std::string_view text);

// Seconds since the epoch of a start time in ticks, given btime from
// /proc/stat and the clock tick rate.
double StartTimeSeconds(uint64_t start_ticks, uint64_t boot_time_seconds, long ticks_per_second);

// "btime N" from /proc/stat.
Result<uint64_t> ParseBootTime(std::string_view proc_stat_text);

}  // namespace memtrimd::procfs

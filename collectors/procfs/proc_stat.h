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
  // Field 20: threads in the group. A leader that called pthread_exit stays
  // a zombie ('Z') while the others run: more than 1 then.
  uint32_t num_threads = 0;
  uint64_t start_ticks = 0;  // field 22: clock ticks after boot
  uint64_t utime_ticks = 0;  // fields 14 and 15
  uint64_t stime_ticks = 0;
  uint64_t vsize_bytes = 0;  // field 23
  uint64_t rss_pages = 0;    // field 24
  // Fields 26-28: where the program's text starts and ends and where its
  // stack began. exec sets them anew (and ASLR moves them); pid and start
  // time stay. 0 when memtrimd may not read the target's memory layout, or
  // the task has no memory (a zombie).
  uint64_t start_code = 0;
  uint64_t end_code = 0;
  uint64_t start_stack = 0;

  // Which program image the process runs: differs after an exec (a shell
  // entrypoint that execs java); 0 when unknown (not readable, or the task
  // is exiting and has no memory left).
  uint64_t ExecMark() const;

  // This task exited: a zombie ('Z', not yet reaped by its parent) or dead
  // ('X'; 'x' on kernels before 3.14). Its pid and start time stay until the
  // parent reaps it, possibly forever. For a process's leader that is not
  // the process's end: see LeaderOfLiveGroup.
  bool Exited() const { return state == 'Z' || state == 'X' || state == 'x'; }
  // A zombie leader whose other threads still run: the process is alive
  // (its memory too), only its main thread ended.
  bool LeaderOfLiveGroup() const { return state == 'Z' && num_threads > 1; }
};

Result<ProcStat> ParseProcStat(std::string_view text);

// Whether two exec marks say the process runs another program: both known
// and different.
bool ExecMarksDiffer(uint64_t a, uint64_t b);

// Seconds since the epoch of a start time in ticks, given btime from
// /proc/stat and the clock tick rate.
double StartTimeSeconds(uint64_t start_ticks, uint64_t boot_time_seconds, long ticks_per_second);

// "btime N" from /proc/stat.
Result<uint64_t> ParseBootTime(std::string_view proc_stat_text);

}  // namespace memtrimd::procfs

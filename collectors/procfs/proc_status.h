// /proc/<pid>/status: the cheap source, read every sample. Reading it does
// not take the target's mmap lock.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "collectors/common/status.h"

namespace memtrimd::procfs {

struct ProcStatus {
  std::string name;  // comm (Name: without the kernel's escapes)
  char state = '?';
  pid_t tgid = 0;
  pid_t nspid = 0;  // last field of NSpid: the pid in the innermost namespace
  uid_t euid = 0;
  gid_t egid = 0;
  // Bytes (the file says kB).
  uint64_t vm_rss = 0;
  uint64_t rss_anon = 0;
  uint64_t rss_file = 0;
  uint64_t rss_shmem = 0;
  uint64_t vm_swap = 0;
  uint64_t vm_hwm = 0;
  uint64_t vm_size = 0;
  uint32_t threads = 0;
  uint64_t sig_ignored = 0;  // SigIgn mask
  uint64_t sig_caught = 0;   // SigCgt mask
  bool has_memory = false;   // false for kernel threads and zombies (no Vm* lines)

  // The RSS every report, page and metric prints: one sum of the kernel's
  // three parts, so that all of them agree to the byte.
  uint64_t Rss() const { return rss_anon + rss_file + rss_shmem; }
};

// REQUIRES: `text` is the whole file. Fails when Name, Tgid or Threads is missing.
Result<ProcStatus> ParseProcStatus(std::string_view text);

}  // namespace memtrimd::procfs

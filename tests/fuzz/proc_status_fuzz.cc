// Fuzz target: /proc/<pid>/status (procfs::ParseProcStatus).
//
// Invariants: sizes are whole kB (the file counts in kB); a status without
// NSpid gets its Tgid; the fields it understood, written back in the
// kernel's layout (the name escaped as the kernel escapes it), parse to the
// same struct.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/procfs/proc_status.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using memtrimd::procfs::ProcStatus;

std::string Kb(uint64_t bytes) { return std::to_string(bytes >> 10) + " kB"; }

// The kernel's escaping of a task name in "Name:" (a backslash doubled, a
// line break as backslash-n), which the parser undoes.
std::string EscapeTaskName(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Format(const ProcStatus& s) {
  char masks[64];
  std::snprintf(masks, sizeof(masks), "SigIgn:\t%016llx\nSigCgt:\t%016llx\n",
                static_cast<unsigned long long>(s.sig_ignored),
                static_cast<unsigned long long>(s.sig_caught));
  // pid_t/uid_t come from a truncated uint64: write them back unsigned.
  std::string out = "Name:\t" + EscapeTaskName(s.name) + "\n";
  out += "State:\t" + std::string(1, s.state) + " (x)\n";
  out += "Tgid:\t" + std::to_string(static_cast<uint32_t>(s.tgid)) + "\n";
  out += "NSpid:\t1\t" + std::to_string(static_cast<uint32_t>(s.nspid)) + "\n";
  out += "Uid:\t0\t" + std::to_string(s.euid) + "\t0\t0\n";
  out += "Gid:\t0\t" + std::to_string(s.egid) + "\t0\t0\n";
  out += "VmSize:\t" + Kb(s.vm_size) + "\n";
  out += "VmHWM:\t" + Kb(s.vm_hwm) + "\n";
  if (s.has_memory) out += "VmRSS:\t" + Kb(s.vm_rss) + "\n";
  out += "RssAnon:\t" + Kb(s.rss_anon) + "\n";
  out += "RssFile:\t" + Kb(s.rss_file) + "\n";
  out += "RssShmem:\t" + Kb(s.rss_shmem) + "\n";
  out += "VmSwap:\t" + Kb(s.vm_swap) + "\n";
  out += "Threads:\t" + std::to_string(s.threads) + "\n";
  out += masks;
  return out;
}

bool Same(const ProcStatus& a, const ProcStatus& b) {
  return a.name == b.name && a.state == b.state && a.tgid == b.tgid && a.nspid == b.nspid &&
         a.euid == b.euid && a.egid == b.egid && a.vm_rss == b.vm_rss && a.rss_anon == b.rss_anon &&
         a.rss_file == b.rss_file && a.rss_shmem == b.rss_shmem && a.vm_swap == b.vm_swap &&
         a.vm_hwm == b.vm_hwm && a.vm_size == b.vm_size && a.threads == b.threads &&
         a.sig_ignored == b.sig_ignored && a.sig_caught == b.sig_caught &&
         a.has_memory == b.has_memory;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto status = memtrimd::procfs::ParseProcStatus(memtrimd::fuzz::AsText(data, size));
  if (!status.ok()) return 0;
  const ProcStatus& s = *status;
  for (uint64_t v :
       {s.vm_rss, s.rss_anon, s.rss_file, s.rss_shmem, s.vm_swap, s.vm_hwm, s.vm_size}) {
    FUZZ_CHECK(v % 1024 == 0);
  }
  FUZZ_CHECK(s.nspid != 0 || s.tgid == 0);
  FUZZ_CHECK(s.has_memory || s.vm_rss == 0);
  auto again = memtrimd::procfs::ParseProcStatus(Format(s));
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(Same(*again, s));
  return 0;
}

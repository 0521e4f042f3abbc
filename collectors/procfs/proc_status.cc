#include "collectors/procfs/proc_status.h"

#include "collectors/common/text.h"

namespace memtrimd::procfs {
namespace {

// "  123456 kB" -> bytes.
bool ParseKb(std::string_view v, uint64_t& out) {
  v = text::Trim(v);
  if (v.size() > 3 && v.substr(v.size() - 3) == " kB") v.remove_suffix(3);
  auto n = text::ParseUint(text::Trim(v));
  if (!n || *n > (UINT64_MAX >> 10)) return false;
  out = *n << 10;
  return true;
}

// Last whitespace-separated field, as a number.
bool ParseLastField(std::string_view v, uint64_t& out) {
  std::string_view last;
  for (std::string_view tok = text::NextToken(v); !tok.empty(); tok = text::NextToken(v)) {
    last = tok;
  }
  auto n = text::ParseUint(last);
  if (!n) return false;
  out = *n;
  return true;
}

// Second field (the effective id) of "Uid:\treal\teffective\tsaved\tfs".
bool ParseSecondField(std::string_view v, uint64_t& out) {
  text::NextToken(v);
  auto n = text::ParseUint(text::NextToken(v));
  if (!n) return false;
  out = *n;
  return true;
}

// The kernel shows a task's name in "Name:" with two characters escaped, so
// that the line stays one line (proc_task_name()): a backslash as two
// backslashes and a line break as backslash-n. A quote or a tab is shown as
// it is. The struct holds the name itself; left escaped, an exporter would
// escape the backslash a second time.
std::string UnescapeTaskName(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '\\' && i + 1 < v.size() && (v[i + 1] == '\\' || v[i + 1] == 'n')) {
      out += v[i + 1] == 'n' ? '\n' : '\\';
      ++i;
    } else {
      out += v[i];
    }
  }
  return out;
}

}  // namespace

Result<ProcStatus> ParseProcStatus(std::string_view text) {
  ProcStatus s;
  bool have_name = false, have_pid = false, have_threads = false;
  bool bad = false;
  std::string bad_key;
  text::ForEachLineIn(text, [&](std::string_view line) {
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    std::string_view key = line.substr(0, colon);
    std::string_view val = line.substr(colon + 1);
    uint64_t n = 0;
    bool ok = true;
    if (key == "Name") {
      // Name is tab-separated and may contain spaces; only strip the tab.
      while (!val.empty() && val.front() == '\t') val.remove_prefix(1);
      s.name = UnescapeTaskName(val);
      have_name = true;
    } else if (key == "State") {
      val = text::Trim(val);
      s.state = val.empty() ? '?' : val.front();
    } else if (key == "Tgid") {
      ok = ParseLastField(val, n);
      s.tgid = static_cast<pid_t>(n);
      have_pid = ok;
    } else if (key == "NSpid") {
      ok = ParseLastField(val, n);
      s.nspid = static_cast<pid_t>(n);
    } else if (key == "Uid") {
      ok = ParseSecondField(val, n);
      s.euid = static_cast<uid_t>(n);
    } else if (key == "Gid") {
      ok = ParseSecondField(val, n);
      s.egid = static_cast<gid_t>(n);
    } else if (key == "VmRSS") {
      ok = ParseKb(val, s.vm_rss);
      s.has_memory = true;
    } else if (key == "RssAnon") {
      ok = ParseKb(val, s.rss_anon);
    } else if (key == "RssFile") {
      ok = ParseKb(val, s.rss_file);
    } else if (key == "RssShmem") {
      ok = ParseKb(val, s.rss_shmem);
    } else if (key == "VmSwap") {
      ok = ParseKb(val, s.vm_swap);
    } else if (key == "VmHWM") {
      ok = ParseKb(val, s.vm_hwm);
    } else if (key == "VmSize") {
      ok = ParseKb(val, s.vm_size);
    } else if (key == "Threads") {
      ok = ParseLastField(val, n) && n <= UINT32_MAX;
      s.threads = static_cast<uint32_t>(n);
      have_threads = ok;
    } else if (key == "SigIgn") {
      auto m = text::ParseHex(text::Trim(val));
      ok = m.has_value();
      s.sig_ignored = m.value_or(0);
    } else if (key == "SigCgt") {
      auto m = text::ParseHex(text::Trim(val));
      ok = m.has_value();
      s.sig_caught = m.value_or(0);
    }
    if (!ok && !bad) {
      bad = true;
      bad_key = std::string(key);
    }
  });
  if (bad) return Status(ErrorCode::kParseError, "status: malformed " + bad_key + " line");
  if (!have_name || !have_pid || !have_threads) {
    return Status(ErrorCode::kParseError, "status: missing Name, Tgid or Threads");
  }
  if (s.nspid == 0) s.nspid = s.tgid;  // kernels before 4.1 have no NSpid
  return s;
}

}  // namespace memtrimd::procfs

#include "collectors/jvm/signal_facts.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>

#include "collectors/common/file_reader.h"
#include "collectors/common/private_socket.h"
#include "collectors/common/target_open.h"
#include "collectors/jvm/perf_file.h"
#include "collectors/jvm/perf_memory.h"
#include "collectors/procfs/proc_status.h"

namespace memtrimd::jvm {
namespace {

constexpr std::size_t kMaxOptionFileBytes = 1u << 20;
// An app image's /etc/passwd is a few KiB; a directory's user list held in
// one file could be larger, and then the answer is "unknown".
constexpr std::size_t kMaxPasswdBytes = 4u << 20;

// Reads an open file up to `cap` bytes; kTooLarge past it.
Result<std::string> ReadFd(int fd, const std::string& what, std::size_t cap) {
  std::string out;
  char buf[16384];
  for (;;) {
    ssize_t n = detail::ReadRetry(fd, buf, sizeof(buf));
    if (n < 0) return Status::FromErrno(errno, "read " + what);
    if (n == 0) return out;
    if (out.size() + static_cast<std::size_t>(n) > cap) {
      return Status(ErrorCode::kTooLarge,
                    what + " is larger than the cap of " + std::to_string(cap) + " bytes");
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace

// Symlinks inside the target's root resolve there too, where the kernel
// can (openat2). Never blocking: a FIFO or a device named as an option file
// opens at once (O_NONBLOCK) and is refused by the caller's regular-file
// check, so it cannot hold up the thread deciding on a signal.

namespace {

Result<std::string> ReadOptionFile(const Target& t, const std::string& path) {
  UniqueFd fd = OpenAsTarget(t, path);
  if (fd.get() < 0) return Status::FromErrno(errno, "open option file " + path);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Status::FromErrno(errno, "stat option file " + path);
  if (!S_ISREG(st.st_mode)) {
    return Status(ErrorCode::kParseError, "option file " + path + " is not a regular file");
  }
  return ReadFd(fd.get(), "option file " + path, kMaxOptionFileBytes);
}

std::vector<std::string> SplitNul(std::string_view raw) {
  std::vector<std::string> out;
  while (!raw.empty()) {
    std::size_t end = raw.find('\0');
    out.emplace_back(raw.substr(0, end));
    if (end == std::string_view::npos) break;
    raw.remove_prefix(end + 1);
  }
  return out;
}

std::optional<std::string> Env(std::string_view environ, std::string_view name) {
  std::optional<std::string_view> v = EnvValue(environ, name);
  if (!v) return std::nullopt;
  return std::string(*v);
}

}  // namespace

Result<PerfData> ReadOwnPerfData(const Target& t) {
  std::optional<PerfDataMapping> mapping;
  Status maps = ForEachLine(t.proc_dir + "/maps", 256u << 20, [&](std::string_view line) {
    if (!mapping) mapping = PerfDataMappingFromMapsLine(line, t.nspid);
  });
  if (!maps.ok()) return maps;
  if (!mapping) return Status(ErrorCode::kNotFound, "hsperfdata: the JVM maps no perf data file");
  // Opened in the JVM's root without following a symlink, owned by its
  // uid, and the very file it maps (ReadTargetPerfFile).
  PerfFileIdentity identity{mapping->dev_major, mapping->dev_minor, mapping->inode};
  return ReadTargetPerfFile(t, mapping->path, &identity);
}

SignalFacts ReadSignalFacts(const Target& t, const SignalRecord* record) {
  SignalFacts f;
  f.is_hotspot = t.runtime == Runtime::kJvm;
  f.signalled_before = record != nullptr && record->SignalledWithoutListener(t.Key());
  Result<std::string> status = ReadSmallFile(t.proc_dir + "/status");
  if (status.ok()) {
    Result<procfs::ProcStatus> st = procfs::ParseProcStatus(*status);
    if (st.ok()) {
      f.sig_caught = st->sig_caught;
      f.sig_ignored = st->sig_ignored;
    }
  }
  if (!f.is_hotspot || f.signalled_before) return f;

  Result<PerfData> perf = ReadOwnPerfData(t);
  if (!perf.ok() && perf.status().code() == ErrorCode::kNotFound) {
    // No file (a uid without a user name, -XX:+PerfDisableSharedMem): the
    // same verdict from the JVM's perf memory, where ptrace access allows.
    Result<PerfMemoryLocation> where = FindPerfMemory(t);
    if (where.ok()) perf = ReadPerfMemory(ProcessMemory(t.pid), *where);
  }
  if (perf.ok()) {
    f.perf_attach_supported = AttachSupportedFromPerfData(*perf);
    f.perf_vm_args = perf->String("java.rt.vmArgs").value_or("");
    if (f.perf_attach_supported) return f;
  }

  Result<std::vector<JvmOption>> options = ReadJvmOptions(t);
  if (!options.ok()) {
    f.options_error = options.status().message();
    return f;
  }
  f.options_known = true;
  f.options = std::move(options).value();
  return f;
}

Result<std::vector<JvmOption>> ReadJvmOptions(const Target& t) {
  Result<std::string> cmdline = ReadSmallFile(t.proc_dir + "/cmdline", 1u << 20);
  Result<std::string> environ = ReadSmallFile(t.proc_dir + "/environ", 1u << 20);
  if (!cmdline.ok() || !environ.ok()) return (!cmdline.ok() ? cmdline : environ).status();
  OptionSources src;
  src.argv = SplitNul(*cmdline);
  src.java_tool_options = Env(*environ, "JAVA_TOOL_OPTIONS");
  src.jdk_java_options = Env(*environ, "JDK_JAVA_OPTIONS");
  src.underscore_java_options = Env(*environ, "_JAVA_OPTIONS");
  OptionLimits limits;
  limits.max_file_bytes = kMaxOptionFileBytes;
  return ResolveJvmOptions(
      src, [&](const std::string& path) { return ReadOptionFile(t, path); }, limits);
}

PerfDataCauseFacts ReadPerfDataCauseFacts(const Target& t) {
  PerfDataCauseFacts f;
  f.uid = static_cast<uint32_t>(t.uid);
  // The JVM's own /etc/passwd, inside its root: the one its getpwuid reads
  // (through nsswitch "files", the only source in an app image).
  UniqueFd fd = OpenAsTarget(t, "/etc/passwd");
  struct stat st;
  if (fd.get() >= 0 && ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode)) {
    Result<std::string> passwd = ReadFd(fd.get(), "/etc/passwd", kMaxPasswdBytes);
    if (passwd.ok()) {
      bool complete = true;
      bool named = PasswdNameOf(*passwd, f.uid, &complete).has_value();
      if (named || complete) f.uid_named = named;
    }
  }
  Result<std::vector<JvmOption>> options = ReadJvmOptions(t);
  if (options.ok()) {
    f.options_known = true;
    f.options = std::move(options).value();
  }
  return f;
}

}  // namespace memtrimd::jvm

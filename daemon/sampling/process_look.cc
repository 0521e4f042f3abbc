#include "daemon/sampling/process_look.h"

#include "collectors/common/file_reader.h"
#include "collectors/procfs/cmdline.h"
#include "collectors/procfs/target_reader.h"

namespace memtrimd {
namespace {

// The joined command line; false when it cannot be read.
bool ReadCommandLine(const std::string& read_dir, ProcessFacts& facts) {
  Result<std::string> raw = ReadSmallFile(read_dir + "/cmdline", 1u << 20);
  if (!raw.ok()) return false;
  facts.cmdline = procfs::CmdlineToString(*raw);
  facts.cmdline_read = true;
  return true;
}

}  // namespace

std::atomic<std::size_t> ProcessLook::running_{0};

std::shared_ptr<ProcessLook> ProcessLook::Start(std::string proc_root, pid_t pid,
                                                std::string read_dir) {
  auto look = std::make_shared<ProcessLook>();
  Launch(look, kThreadName, running_,
         [proc_root = std::move(proc_root), pid, read_dir = std::move(read_dir)] {
           ProcessFacts facts;
           facts.target = procfs::ReadTarget(proc_root, pid);
           // World-readable: also for a process whose maps are shut to
           // memtrimd, which is counted when its command line is selected.
           ReadCommandLine(read_dir, facts);
           if (facts.target.ok()) facts.environ = ReadSmallFile(read_dir + "/environ", 1u << 20);
           return facts;
         });
  return look;
}

std::shared_ptr<ProcessLook> ProcessLook::StartCommandLine(std::string read_dir) {
  auto look = std::make_shared<ProcessLook>();
  Launch(look, kThreadName, running_, [read_dir = std::move(read_dir)] {
    ProcessFacts facts;
    ReadCommandLine(read_dir, facts);
    return facts;
  });
  return look;
}

}  // namespace memtrimd

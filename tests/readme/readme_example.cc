// readme_example: the README's example output, from a recorded target.
//
// The README shows what `memtrimd inspect` prints for a JVM. That text must
// be what the current build prints, so it is not written by hand: a real
// JVM's raw inputs were recorded once (tests/fixtures/readme/README.md says
// how), and this program samples them with memtrimd's own collectors and
// renders them with its own inspect code. The /proc files are read from the
// fixture as from /proc (ReadTarget and the file collectors take a proc
// root); the answers that come over sockets (the JVM's attach listener, the
// preloaded agent) are replayed from the files they were recorded to.
//
//   readme_example record PID DIR     record a live target (as root)
//   readme_example render DIR         print the inspect table of a recording
//   readme_example check README DIR   exit 1 when README's examples differ
//   readme_example update README DIR  rewrite README's examples
//
// README's examples sit between "<!-- example: NAME -->" and
// "<!-- /example -->" lines: NAME "inspect" is the whole table (as an
// indented block, with the command line above it), "equation" the RSS
// account's equation line from it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "collectors/agent/client/agent_client.h"
#include "collectors/agent/client/agent_collector.h"
#include "collectors/cgroup/cgroup_files.h"
#include "collectors/common/file_reader.h"
#include "collectors/glibc/arena_heap.h"
#include "collectors/glibc/glibc_heap_collector.h"
#include "collectors/glibc/heap_info.h"
#include "collectors/jvm/attach_client.h"
#include "collectors/jvm/jvm_collector.h"
#include "collectors/procfs/pagemap.h"
#include "collectors/procfs/smaps.h"
#include "collectors/procfs/target_reader.h"
#include "daemon/report/inspect.h"
#include "daemon/sampling/collector_set.h"

namespace memtrimd {
namespace {

namespace fs = std::filesystem;

// The diagnostic commands the jvm collector sends, and the agent's.
constexpr const char* kJcmds[] = {"VM.version",           "VM.flags",
                                  "VM.system_properties", "VM.native_memory summary scale=B",
                                  "GC.heap_info",         "System.native_heap_info"};
constexpr const char* kAgentCommands[] = {"jvm_buffers", "allocator", "malloc_info"};

std::string FileName(std::string_view command) {
  std::string name(command);
  for (char& c : name) {
    if (c == ' ' || c == '=') c = '_';
  }
  return name;
}

std::optional<std::string> Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Write(const fs::path& p, std::string_view text) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  return static_cast<bool>(out);
}

int Fail(const std::string& why) {
  std::fprintf(stderr, "readme_example: %s\n", why.c_str());
  return 1;
}

// meta.txt: key=value lines.
std::map<std::string, std::string> ReadMeta(const fs::path& dir) {
  std::map<std::string, std::string> meta;
  std::istringstream in(Slurp(dir / "meta.txt").value_or(""));
  for (std::string line; std::getline(in, line);) {
    auto eq = line.find('=');
    if (eq != std::string::npos) meta[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return meta;
}

// ---- record ------------------------------------------------------------

// Copies a file of /proc/<pid> (or below its root) into the fixture; false
// when it cannot be read.
bool CopyProcFile(const fs::path& from, const fs::path& to) {
  Result<std::string> text = ReadSmallFile(from.string(), 256u << 20);
  return text.ok() && Write(to, *text);
}

int Record(pid_t pid, const fs::path& dir) {
  Result<Target> t = procfs::ReadTarget("/proc", pid);
  if (!t.ok()) return Fail(t.status().message());
  const fs::path proc = "/proc/" + std::to_string(pid);
  const fs::path out = dir / "proc" / std::to_string(pid);
  fs::remove_all(dir);
  double smaps_seconds = 0;
  for (const char* f : {"status", "stat", "smaps", "maps", "cmdline", "environ", "cgroup"}) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!CopyProcFile(proc / f, out / f)) return Fail(std::string("cannot read ") + f);
    if (std::string_view(f) == "smaps") {
      smaps_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  }
  // The perf data file, where the hsperfdata collector looks for it.
  for (const auto& e : fs::directory_iterator(proc / "root/tmp")) {
    const std::string name = e.path().filename();
    if (name.rfind("hsperfdata_", 0) != 0) continue;
    fs::path file = e.path() / std::to_string(t->nspid);
    if (fs::exists(file)) CopyProcFile(file, out / "root/tmp" / name / std::to_string(t->nspid));
  }
  // The memory cgroup's files, from the target's group up to the mount root.
  Result<std::string> cg = ReadSmallFile((proc / "cgroup").string());
  Result<cgroup::ProcCgroup> pc = cg.ok() ? cgroup::ParseProcCgroup(*cg) : cg.status();
  if (!pc.ok()) return Fail("cgroup: " + pc.status().message());
  const fs::path mount = pc->v1_memory ? fs::path("sys/fs/cgroup/memory") : "sys/fs/cgroup";
  fs::path group = pc->v1_memory ? *pc->v1_memory : pc->unified.value_or("/");
  for (fs::path g = group.relative_path();; g = g.parent_path()) {
    for (const char* f : {"memory.usage_in_bytes", "memory.limit_in_bytes", "memory.stat",
                          "memory.oom_control", "memory.current", "memory.max", "memory.events"}) {
      fs::path from = proc / "root" / mount / g / f;
      if (fs::exists(from)) CopyProcFile(from, out / "root" / mount / g / f);
    }
    if (g.empty()) break;
  }
  // What the JVM answers over its attach socket: the status line, then the
  // output, as they came.
  for (const char* c : kJcmds) {
    Result<jvm::AttachResponse> r = jvm::ExecuteJcmd(*t, c);
    if (!r.ok()) return Fail(std::string(c) + ": " + r.status().message());
    Write(dir / "attach" / (FileName(c) + ".txt"), std::to_string(r->status) + "\n" + r->output);
  }
  // The heap headers of the arena heap candidates of the smaps recorded, and
  // for one inside a merged mapping what pagemap says of its pages, as the
  // glibc collector would read them.
  Result<std::vector<procfs::Mapping>> maps = procfs::ParseSmaps(Slurp(out / "smaps").value_or(""));
  if (!maps.ok()) return Fail("smaps: " + maps.status().message());
  Result<procfs::Pagemap> pagemap = procfs::Pagemap::Open(proc.string());
  if (!pagemap.ok()) return Fail(pagemap.status().message());
  std::string headers, pages;
  for (const glibc::ArenaHeap& h : glibc::FindHeapCandidates(*maps).heaps) {
    if (h.shape == glibc::HeapShape::kMerged) {
      Result<bool> present = pagemap->Present(h.start);
      Result<uint64_t> resident = pagemap->ResidentBytes(h.start, h.usable_bytes);
      if (!present.ok() || !resident.ok()) continue;
      pages += std::to_string(h.start) + " " + std::to_string(h.usable_bytes) + " " +
               (*present ? "1 " : "0 ") + std::to_string(*resident) + "\n";
      // As the collector: no read where glibc wrote no header.
      if (!*present) continue;
    }
    Result<glibc::HeapInfo> i = glibc::ReadHeapInfo(pid, h.start);
    if (!i.ok()) continue;
    headers += std::to_string(h.start) + " " + std::to_string(i->ar_ptr) + " " +
               std::to_string(i->prev) + " " + std::to_string(i->size) + " " +
               std::to_string(i->mprotect_size) + " " + std::to_string(i->pagesize) + "\n";
  }
  Write(dir / "heap_headers.txt", headers);
  Write(dir / "heap_pages.txt", pages);
  for (const char* c : kAgentCommands) {
    agent::AgentFailure failure = agent::AgentFailure::kNone;
    Result<std::string> r = agent::AgentCommand(*t, c, {}, &failure);
    if (!r.ok()) return Fail(std::string("agent ") + c + ": " + r.status().message());
    Write(dir / "agent" / (std::string(c) + ".txt"), *r);
  }
  const auto now = std::chrono::system_clock::now();
  std::string meta =
      "pid=" + std::to_string(pid) + "\n" + "now_unix_seconds=" +
      std::to_string(
          std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count()) +
      "\n" + "start_time_seconds=" +
      std::to_string(static_cast<int64_t>(ProcessStartTimeSeconds(t->start_ticks))) + "\n" +
      "smaps_read_seconds=" + std::to_string(smaps_seconds) + "\n";
  Write(dir / "meta.txt", meta);
  return 0;
}

// ---- replay ------------------------------------------------------------

// The recorded answers stand in for the sockets: the same collectors parse
// them as they parse a live JVM's and agent's.
jvm::JcmdExecutor ReplayJcmd(fs::path dir) {
  return [dir](const Target&, std::string_view command,
               const jvm::AttachOptions&) -> Result<jvm::AttachResponse> {
    std::optional<std::string> text = Slurp(dir / "attach" / (FileName(command) + ".txt"));
    if (!text) return Status(ErrorCode::kUnavailable, "not recorded: " + std::string(command));
    std::size_t nl = text->find('\n');
    jvm::AttachResponse r;
    r.status = std::stoi(text->substr(0, nl));
    r.output = nl == std::string::npos ? "" : text->substr(nl + 1);
    return r;
  };
}

agent::AgentCommander ReplayAgent(fs::path dir) {
  return [dir](const Target&, std::string_view command, const agent::AgentOptions&,
               agent::AgentFailure* failure) -> Result<std::string> {
    std::optional<std::string> text = Slurp(dir / "agent" / (std::string(command) + ".txt"));
    if (!text) {
      if (failure != nullptr) *failure = agent::AgentFailure::kUnreachable;
      return Status(ErrorCode::kUnavailable, "not recorded: " + std::string(command));
    }
    return *text;
  };
}

// The heap headers recorded; an address not recorded reads as unmapped.
glibc::HeapInfoReader ReplayHeaders(const fs::path& dir) {
  std::map<uint64_t, glibc::HeapInfo> headers;
  std::istringstream in(Slurp(dir / "heap_headers.txt").value_or(""));
  uint64_t at = 0;
  glibc::HeapInfo h;
  while (in >> at >> h.ar_ptr >> h.prev >> h.size >> h.mprotect_size >> h.pagesize) headers[at] = h;
  return [headers](pid_t, uint64_t address) -> Result<glibc::HeapInfo> {
    auto it = headers.find(address);
    if (it == headers.end()) return Status(ErrorCode::kNotFound, "not recorded");
    return it->second;
  };
}

// What pagemap said of the merged candidates' pages: whether the header page
// was resident, and how much of the heap.
class RecordedPages : public procfs::PageResidency {
 public:
  explicit RecordedPages(const fs::path& dir) {
    std::istringstream in(Slurp(dir / "heap_pages.txt").value_or(""));
    uint64_t start = 0, length = 0, resident = 0;
    int present = 0;
    while (in >> start >> length >> present >> resident) {
      present_[start] = present != 0;
      resident_[{start, length}] = resident;
    }
  }
  Result<bool> Present(uint64_t address) const override {
    auto it = present_.find(address);
    if (it == present_.end()) return Status(ErrorCode::kNotFound, "not recorded");
    return it->second;
  }
  Result<uint64_t> ResidentBytes(uint64_t start, uint64_t length) const override {
    auto it = resident_.find({start, length});
    if (it == resident_.end()) return Status(ErrorCode::kNotFound, "not recorded");
    return it->second;
  }

 private:
  std::map<uint64_t, bool> present_;
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> resident_;
};

// The inspect table of a recording, as `memtrimd inspect` renders it at the
// moment it was recorded.
Result<std::string> Render(const fs::path& dir) {
  std::map<std::string, std::string> meta = ReadMeta(dir);
  if (!meta.count("pid")) return Status(ErrorCode::kNotFound, "no meta.txt in " + dir.string());
  const pid_t pid = std::stoi(meta["pid"]);
  Result<Target> t = procfs::ReadTarget((dir / "proc").string(), pid);
  if (!t.ok()) return t.status();
  CollectorOptions options;
  std::vector<CollectorSlot> slots = BuildCollectors(options, {});
  for (CollectorSlot& s : slots) {
    const std::string_view name = s.decl->name;
    if (name == "jvm") {
      s.collector =
          std::make_shared<jvm::JvmAttachCollector>(jvm::AttachOptions{}, ReplayJcmd(dir));
    } else if (name == "glibc") {
      glibc::GlibcHeapOptions g;
      g.heap_size = options.glibc_heap_size;
      g.read_heap_info = ReplayHeaders(dir);
      g.open_pages = [dir](const std::string&) -> Result<std::unique_ptr<procfs::PageResidency>> {
        return std::unique_ptr<procfs::PageResidency>(new RecordedPages(dir));
      };
      s.collector = std::make_shared<glibc::GlibcHeapCollector>(g);
    } else if (name == "agent") {
      s.collector =
          std::make_shared<agent::AgentMallocCollector>(agent::AgentOptions{}, ReplayAgent(dir));
    }
  }
  TargetSnapshot ts;
  ts.target = *t;
  ts.start_time_seconds = std::stod(meta["start_time_seconds"]);
  SampleTarget(slots, true, nullptr, ts);
  // Times of the replay, not of the recording: the recording's moment.
  const auto at = std::chrono::system_clock::time_point(
      std::chrono::seconds(std::stoll(meta["now_unix_seconds"])));
  if (ts.sample.glibc) {
    ts.sample.glibc->read_at = at;
    ts.sample.glibc->read_seconds = std::stod(
        meta.count("smaps_read_seconds") ? meta["smaps_read_seconds"] : std::string("0.003"));
  }
  if (ts.sample.malloc) ts.sample.malloc->read_at = at;
  if (ts.sample.jvm) ts.sample.jvm->read_at = at;
  if (ts.sample.jvm_buffers) ts.sample.jvm_buffers->read_at = at;
  if (ts.sample.allocator) ts.sample.allocator->read_at = at;
  for (CollectorOutcome& o : ts.collectors) o.duration_seconds = 0;
  return RenderInspectTable(ts, at);
}

// ---- README ------------------------------------------------------------

struct Examples {
  std::string inspect;   // the indented block
  std::string equation;  // the indented equation line
};

Examples ExamplesOf(const std::string& table, pid_t pid) {
  Examples e;
  e.inspect = "    $ memtrimd inspect --pid " + std::to_string(pid) + "\n";
  std::istringstream in(table);
  for (std::string line; std::getline(in, line);) {
    e.inspect += line.empty() ? "\n" : "    " + line + "\n";
    std::size_t at = line.find("RSS ");
    if (e.equation.empty() && at != std::string::npos && line.find(" = ") != std::string::npos) {
      e.equation = "    " + line.substr(at) + "\n";
    }
  }
  return e;
}

// README's text with each example block replaced by `examples`; `found`
// counts the blocks; `differs` whether any changed.
std::string Replace(const std::string& readme, const Examples& examples, int* found,
                    bool* differs) {
  std::string out;
  std::istringstream in(readme);
  std::string line;
  *found = 0;
  *differs = false;
  while (std::getline(in, line)) {
    out += line + "\n";
    const std::string open = "<!-- example: ";
    if (line.rfind(open, 0) != 0) continue;
    std::string name = line.substr(open.size(), line.find(' ', open.size()) - open.size());
    std::string old;
    while (std::getline(in, line) && line != "<!-- /example -->") old += line + "\n";
    std::string now = "\n" + (name == "inspect" ? examples.inspect : examples.equation) + "\n";
    *differs |= old != now;
    ++*found;
    out += now + "<!-- /example -->\n";
  }
  return out;
}

int CheckOrUpdate(const fs::path& readme_path, const fs::path& dir, bool update) {
  std::optional<std::string> readme = Slurp(readme_path);
  if (!readme) return Fail("cannot read " + readme_path.string());
  Result<std::string> table = Render(dir);
  if (!table.ok()) return Fail(table.status().message());
  Examples e = ExamplesOf(*table, std::stoi(ReadMeta(dir)["pid"]));
  int found = 0;
  bool differs = false;
  std::string next = Replace(*readme, e, &found, &differs);
  if (found != 2) return Fail("README has " + std::to_string(found) + " example blocks, not 2");
  if (update) return Write(readme_path, next) ? 0 : Fail("cannot write " + readme_path.string());
  if (!differs) return 0;
  std::fprintf(stderr,
               "readme_example: README.md's examples are not what this build prints; it prints:\n"
               "%s%s\nrun tests/readme/update.sh to rewrite them\n",
               e.inspect.c_str(), e.equation.c_str());
  return 1;
}

}  // namespace
}  // namespace memtrimd

int main(int argc, char** argv) {
  using namespace memtrimd;
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "record" && argc == 4) return Record(std::stoi(argv[2]), argv[3]);
  if (mode == "render" && argc == 3) {
    Result<std::string> t = Render(argv[2]);
    if (!t.ok()) return Fail(t.status().message());
    std::fputs(t->c_str(), stdout);
    return 0;
  }
  if ((mode == "check" || mode == "update") && argc == 4) {
    return CheckOrUpdate(argv[2], argv[3], mode == "update");
  }
  std::fprintf(stderr,
               "usage: readme_example record PID DIR | render DIR | check README DIR | update "
               "README DIR\n");
  return 2;
}

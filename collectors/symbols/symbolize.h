// Raw instruction addresses of a target (an allocation's stack) turned into
// names outside the target: the mapping that holds each address, its file
// and offset there, the file's build id, and the function from the file's
// symbol tables. Nothing runs in the target and nothing is read from its
// memory: /proc/<pid>/maps and the files it maps are enough.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "collectors/common/status.h"
#include "collectors/elf/elf_symbols.h"
#include "collectors/procfs/maps.h"
#include "collectors/symbols/demangle.h"
#include "collectors/symbols/java_frames.h"

namespace memtrimd::symbols {

// Where the ELF facts of a mapped file come from (target_elf.h reads the
// target's files through its root; tests give files of their own).
class ElfSource {
 public:
  virtual ~ElfSource() = default;
  // The build id, loads and functions of the file `m` maps; an error when
  // it cannot be read (gone, not ELF, over the byte cap).
  virtual Result<std::shared_ptr<const elf::ElfFunctions>> Functions(
      const procfs::MapsEntry& m) = 0;
};

// What an address is.
enum class FrameKind : uint8_t {
  kFunction,  // a function of a mapped file's symbol tables
  kUnknown,   // in no mapping, a [special] one, or a file with no symbol covering it
  kAnon,      // anonymous memory: JIT-compiled code, the JVM's interpreter
  kJava,      // a Java method's frame, named by the JVM's agent (java_frames.h)
};

// Longest function name kept: longer ones are cut to this many bytes and
// end in kCutMarker. Mangled C++ names of ordinary code stay well under it;
// the cap is what bounds a profile's names whatever a target maps (a
// kilobytes-long name that every frame of a hostile stack lands in).
inline constexpr std::size_t kMaxFunctionNameBytes = 256;
inline constexpr std::string_view kCutMarker = "...[cut]";

struct Frame {
  uint64_t address = 0;
  FrameKind kind = FrameKind::kUnknown;
  // The function's name, or "[unknown]" / "[anon]" (the address says which
  // code it was): a C++ name demangled, parameters and all (demangle.h). A
  // view of Symbolization::names (each name stored once however many frames
  // lie in its function) or of a literal.
  std::string_view function = "[unknown]";
  // The symbol as the file has it (mangled), what pprof calls system_name;
  // `function` itself for a C name.
  std::string_view system_name = "[unknown]";
  // `function` without its parameter list (ShortFunctionName): what a site's
  // label shows.
  std::string_view short_name = "[unknown]";
  // Index into Symbolization::files of the file mapping; -1 for none.
  int file = -1;
  uint64_t file_offset = 0;  // of the address in that file
  uint64_t elf_address = 0;  // the address in the file's own (symbol) addresses; 0: unknown
  // A Java frame's source file ("" unknown; a view of Symbolization::names)
  // and line (0 unknown). Native frames have neither.
  std::string_view source_file;
  uint32_t line = 0;
};

// A mapping of a file at least one frame lies in, as pprof's Mapping wants
// it (a file's segments are separate mappings: one entry each).
struct MappedFile {
  std::string path;
  std::string build_id;  // "" when the file has none or could not be read
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;
  bool symbols = false;  // its functions were read (else every frame there is [unknown])
  // Why a frame in this file may have no function name, in a user's words
  // (FileNamesMissing): "" when the file's full symbol table was read.
  std::string names_missing;
};

struct Symbolization {
  std::vector<Frame> frames;  // one per address, in the order given
  std::vector<MappedFile> files;
  // The functions' names the frames view, each once, at most
  // kMaxFunctionNameBytes + the marker; shared by copies (never changed
  // after Symbolize). The ELF tables they come from are not kept: a
  // profile holds only what it names.
  std::shared_ptr<const std::deque<std::string>> names;

  // The heap bytes this holds (frames, files, names): what a memory budget
  // charges it with.
  std::size_t MemoryBytes() const;
};

// Why frames in a file may come out without function names: the reason it
// could not be read (`read_error`, non-empty), or what its symbol tables
// lack (`elf`: no table at all, or only the exported functions of .dynsym
// and why no debug file gave the rest, ElfFunctions::debug_file_missing);
// "" for a full symbol table.
std::string FileNamesMissing(const elf::ElfFunctions* elf, const std::string& read_error);

// `name` cut to kMaxFunctionNameBytes (at a UTF-8 character's start) with
// kCutMarker appended, or unchanged when short enough.
std::string CapFunctionName(std::string_view name);

// Pure over `maps` and `source`: each address to a frame. Each distinct
// file (device, inode) is asked of `source` once per call. The address is
// looked up as given; callers pass return addresses less one for every
// frame but the leaf, so that a call at the end of a function is named by
// its caller, not by what follows it. When `main_code` (the target's
// start_code, /proc/<pid>/stat field 26) lies in a file mapping, that
// mapping is files[0] whether or not a frame lies in it: a profile's first
// mapping is its program (pprof's "File:"). A Java frame (IsJavaFrame) is
// named from `java` (sorted by frame or not), else kUnknownJavaMethod; its
// name is cut as a function's is.
Symbolization Symbolize(std::span<const uint64_t> addresses,
                        std::span<const procfs::MapsEntry> maps, ElfSource& source,
                        uint64_t main_code = 0, std::span<const JavaFrameName> java = {});

}  // namespace memtrimd::symbols

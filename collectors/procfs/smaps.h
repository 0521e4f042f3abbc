// /proc/<pid>/smaps, one record per mapping. Reading this file takes the
// target's mmap lock for the whole walk, so the daemon reads it on its own,
// longer interval and never because of a scrape.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "collectors/common/status.h"

namespace memtrimd::procfs {

// What a mapping's path says it is.
enum class MappingKind : uint8_t {
  kAnonymous,  // no path, or an [anon:...] name
  kFile,       // a file path (including deleted files and memfd)
  kHeap,       // [heap]: the brk area, glibc's main arena
  kStack,      // [stack]
  kSpecial,    // [vdso], [vvar], [vsyscall], ...
};

enum Perm : uint8_t { kRead = 1, kWrite = 2, kExec = 4, kShared = 8 };

struct Mapping {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t inode = 0;
  uint8_t perms = 0;  // Perm bits
  MappingKind kind = MappingKind::kAnonymous;
  bool glibc_arena_name = false;  // "[anon: glibc: malloc arena]" (glibc 2.41+ decorate_maps)
  // Bytes.
  uint64_t rss = 0;
  uint64_t anonymous = 0;
  uint64_t swap = 0;
  uint64_t shared = 0;  // Shared_Clean + Shared_Dirty

  uint64_t size() const { return end - start; }
  bool IsAnonymous() const { return kind == MappingKind::kAnonymous && inode == 0; }
};

// Incremental parser: feed lines as a reader streams them. Pure: no I/O.
class SmapsParser {
 public:
  void Feed(std::string_view line);
  // The mappings seen so far, or the first error. Leaves the parser empty.
  // Every record ends with VmFlags (Linux 3.8+): when earlier records had it
  // and the last has not, the text was cut inside a record (kParseError).
  Result<std::vector<Mapping>> Finish();
  // Reuses the vector's capacity across reads.
  void Reset(std::vector<Mapping> storage);

 private:
  std::vector<Mapping> mappings_;
  Status error_;
  std::size_t line_no_ = 0;
  bool any_vmflags_ = false;   // some record had its VmFlags line
  bool last_vmflags_ = false;  // and the latest one has
};

// Whole-text convenience for fixtures and fuzzing.
Result<std::vector<Mapping>> ParseSmaps(std::string_view text);

}  // namespace memtrimd::procfs

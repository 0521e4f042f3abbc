// The ElfSource of a live target: each mapped file opened as the target
// sees it (inside its root, without blocking: OpenAsTarget), its ELF tables
// read with a byte cap, and the result kept in a cache shared by targets
// per (device, inode, build id), so a library every JVM maps is read once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <tuple>

#include "collectors/common/target.h"
#include "collectors/common/target_fs_ids.h"
#include "collectors/common/unique_fd.h"
#include "collectors/symbols/symbolize.h"

namespace memtrimd::symbols {

// The one SymbolCache's cap (the daemon and inspect make it, and every
// target's sites share it): a libjvm.so's functions take about 3 MiB.
inline constexpr std::size_t kSymbolCacheBytes = 24u << 20;

// Files' functions by (device, inode, build id) as maps and the file's note
// give them, least recently used dropped first beyond `max_bytes` (the
// tables' own size, ElfFunctions::MemoryBytes). Thread-safe.
class SymbolCache {
 public:
  explicit SymbolCache(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  struct Key {
    uint32_t dev_major = 0;
    uint32_t dev_minor = 0;
    uint64_t inode = 0;
    std::string build_id;
    bool operator<(const Key& o) const {
      return std::tie(dev_major, dev_minor, inode, build_id) <
             std::tie(o.dev_major, o.dev_minor, o.inode, o.build_id);
    }
  };

  std::shared_ptr<const elf::ElfFunctions> Get(const Key& key);
  // Keeps `elf` unless it alone is larger than the cap.
  void Put(const Key& key, std::shared_ptr<const elf::ElfFunctions> elf);
  std::size_t bytes() const;
  std::size_t entries() const;
  // The cap it holds itself to: what a memory budget charges it with.
  std::size_t max_bytes() const { return max_bytes_; }

 private:
  struct Entry {
    std::shared_ptr<const elf::ElfFunctions> elf;
    std::size_t bytes = 0;
    std::list<Key>::iterator lru;
  };
  mutable std::mutex mu_;
  std::size_t max_bytes_;
  std::size_t bytes_ = 0;
  std::map<Key, Entry> entries_;
  std::list<Key> lru_;  // most recently used first
};

struct TargetElfOptions {
  // Debug files by build id (<dir>/.build-id/xx/rest.debug, where Debian's
  // -dbgsym packages put them), looked up inside the target's root when a
  // file has no .symtab; "" not to look.
  std::string debug_dir = "/usr/lib/debug";
  // Bytes of headers, notes and tables read of one file (and again of its
  // debug file).
  std::size_t max_file_bytes = 16u << 20;
};

class TargetElfSource : public ElfSource {
 public:
  TargetElfSource(Target target, SymbolCache& cache, TargetElfOptions options = {})
      : target_(std::move(target)), cache_(cache), options_(std::move(options)) {}

  // Functions come only from the very object the target mapped (OpenMapped),
  // and a debug file only when the target could read it (ReadDebugFile).
  // The build id of the file opened is part of the cache key, and a mapping
  // of a deleted (replaced) file is not read at all (kNotFound).
  Result<std::shared_ptr<const elf::ElfFunctions>> Functions(const procfs::MapsEntry& m) override;

  // Opens now the files of the mappings that hold any of `addresses`, for
  // Functions to use later: /proc/<pid>/map_files waits while the target's
  // mmap lock is held (for good when the target holds it on a read no one
  // answers), so a caller that then holds what others wait for (the node's
  // one sites build at a time) opens them first, without it.
  void OpenAhead(std::span<const uint64_t> addresses, std::span<const procfs::MapsEntry> maps);

 private:
  // The mapping's file: through /proc/<pid>/map_files when memtrimd may
  // follow it, else by maps' name (as the target's ids where memtrimd can
  // take them) and only when it is a regular file of maps' device and
  // inode; kNotFound otherwise.
  Result<UniqueFd> OpenMapped(const procfs::MapsEntry& m);
  Result<elf::ElfFunctions> ReadDebugFile(const std::string& path);
  // The target's filesystem ids (read once from its status); nullptr when
  // they cannot be read.
  const FsIds* TargetIds();

  Target target_;
  SymbolCache& cache_;
  TargetElfOptions options_;
  bool ids_read_ = false;
  std::optional<FsIds> ids_;
  std::map<uint64_t, Result<UniqueFd>> ahead_;  // OpenAhead's, by mapping start
};

}  // namespace memtrimd::symbols

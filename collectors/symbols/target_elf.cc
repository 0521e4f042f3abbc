#include "collectors/symbols/target_elf.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <vector>

#include "collectors/common/file_reader.h"
#include "collectors/common/target_open.h"

namespace memtrimd::symbols {

std::shared_ptr<const elf::ElfFunctions> SymbolCache::Get(const Key& key) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.elf;
}

void SymbolCache::Put(const Key& key, std::shared_ptr<const elf::ElfFunctions> elf) {
  const std::size_t size = elf->MemoryBytes();
  std::lock_guard lock(mu_);
  if (size > max_bytes_ || entries_.contains(key)) return;
  while (bytes_ + size > max_bytes_ && !lru_.empty()) {
    auto victim = entries_.find(lru_.back());
    bytes_ -= victim->second.bytes;
    entries_.erase(victim);
    lru_.pop_back();
  }
  lru_.push_front(key);
  entries_.emplace(key, Entry{std::move(elf), size, lru_.begin()});
  bytes_ += size;
}

std::size_t SymbolCache::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

std::size_t SymbolCache::entries() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

namespace {

// The headers and notes a build id is in: a few KiB in any linked file.
constexpr std::size_t kIdentityBytes = 1u << 20;
constexpr int kReadFlags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;

Status NotTheMappedFile(const procfs::MapsEntry& m) {
  return Status(ErrorCode::kNotFound, m.path +
                                          " now names another file than the one mapped there "
                                          "(its device or inode differ from maps')");
}

// Reads nothing but a regular file (a FIFO or a device named like a mapping
// is never opened for reading).
Status CheckRegular(int fd, const std::string& path, struct stat& st) {
  if (::fstat(fd, &st) != 0) return Status::FromErrno(errno, "stat " + path);
  if (!S_ISREG(st.st_mode)) return Status(ErrorCode::kNotFound, path + " is not a regular file");
  return Status::Ok();
}

// The file an O_PATH descriptor holds, opened for reading (through
// /proc/self/fd: the same object, with the caller's permissions now).
Result<UniqueFd> ReopenForReading(const UniqueFd& path_fd, const std::string& path) {
  UniqueFd fd(::open(("/proc/self/fd/" + std::to_string(path_fd.get())).c_str(), kReadFlags));
  if (fd.get() < 0) return Status::FromErrno(errno, "open " + path);
  return fd;
}

}  // namespace

void TargetElfSource::OpenAhead(std::span<const uint64_t> addresses,
                                std::span<const procfs::MapsEntry> maps) {
  std::vector<uint64_t> sorted(addresses.begin(), addresses.end());
  std::sort(sorted.begin(), sorted.end());
  for (const procfs::MapsEntry& m : maps) {
    if (!m.IsFile() || m.deleted || ahead_.count(m.start) > 0) continue;
    auto first = std::lower_bound(sorted.begin(), sorted.end(), m.start);
    if (first != sorted.end() && *first < m.end) ahead_.emplace(m.start, OpenMapped(m));
  }
}

Result<UniqueFd> TargetElfSource::OpenMapped(const procfs::MapsEntry& m) {
  if (auto it = ahead_.find(m.start); it != ahead_.end()) {
    Result<UniqueFd> fd = std::move(it->second);
    ahead_.erase(it);
    return fd;
  }
  // The mapping's own file: /proc/<pid>/map_files/<start>-<end> opens what
  // the kernel holds for the mapping, whatever its name names now (a file
  // renamed over, a bind mount, a symlink planted at a name maps prints).
  // Following it needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE.
  char range[48];
  std::snprintf(range, sizeof(range), "/map_files/%" PRIx64 "-%" PRIx64, m.start, m.end);
  // As a path first: a device the target mapped (a hostile one answers
  // addresses inside it) is never opened, only a regular file is reopened
  // for reading.
  struct stat st {};
  if (UniqueFd link(::open((target_.proc_dir + range).c_str(), O_PATH | O_CLOEXEC));
      link.get() >= 0) {
    if (Status ok = CheckRegular(link.get(), m.path, st); !ok.ok()) return ok;
    return ReopenForReading(link, m.path);
  }
  // Else by the name, with the target's own permissions where memtrimd can
  // take them, as a path only, and read only when it is the very object
  // mapped: the device and inode maps gives (the overlay's own on an
  // overlayfs since Linux 6.8, as stat through the overlay gives them; a
  // kernel that shows the layer's refuses here, and only map_files names
  // such a file).
  std::optional<ScopedFsIds> as_target;
  if (const FsIds* ids = TargetIds(); ids != nullptr) {
    as_target.emplace(*ids);
    if (!as_target->status().ok()) as_target.reset();
  }
  UniqueFd path = OpenAsTarget(target_, m.path, /*path_only=*/true);
  if (path.get() < 0) return Status::FromErrno(errno, "open " + m.path);
  if (Status ok = CheckRegular(path.get(), m.path, st); !ok.ok()) return ok;
  if (st.st_dev != makedev(m.dev_major, m.dev_minor) || st.st_ino != m.inode) {
    return NotTheMappedFile(m);
  }
  return ReopenForReading(path, m.path);
}

const FsIds* TargetElfSource::TargetIds() {
  if (!ids_read_) {
    ids_read_ = true;
    Result<std::string> text = ReadSmallFile(target_.proc_dir + "/status");
    Result<FsIds> ids = text.ok() ? ParseFsIds(*text) : Result<FsIds>(text.status());
    if (ids.ok()) ids_ = std::move(ids).value();
  }
  return ids_ ? &*ids_ : nullptr;
}

Result<elf::ElfFunctions> TargetElfSource::ReadDebugFile(const std::string& path) {
  // Nothing ties a debug file to the mapping but its build id, which a
  // target can give its own file: it is read only as the target could read
  // it, so a name planted in its root leads to no file it could not open.
  const FsIds* ids = TargetIds();
  if (ids == nullptr) return Status(ErrorCode::kNotFound, "the target's ids are unknown");
  ScopedFsIds as_target(*ids);
  if (!as_target.status().ok()) return as_target.status();
  UniqueFd fd = OpenAsTarget(target_, path);
  if (fd.get() < 0) return Status::FromErrno(errno, "open " + path);
  struct stat st {};
  if (Status ok = CheckRegular(fd.get(), path, st); !ok.ok()) return ok;
  return elf::ReadElfFunctionsOfFile(fd.get(), path, true, options_.max_file_bytes);
}

Result<std::shared_ptr<const elf::ElfFunctions>> TargetElfSource::Functions(
    const procfs::MapsEntry& m) {
  if (!m.IsFile()) return Status(ErrorCode::kNotFound, "no file is mapped there");
  if (m.deleted) {
    return Status(ErrorCode::kNotFound, m.path + " was deleted since it was mapped");
  }
  Result<UniqueFd> fd = OpenMapped(m);
  if (!fd.ok()) return fd.status();
  Result<elf::ElfFunctions> identity =
      elf::ReadElfFunctionsOfFile(fd->get(), m.path, false, kIdentityBytes);
  if (!identity.ok()) return identity.status();
  SymbolCache::Key key{m.dev_major, m.dev_minor, m.inode, identity->build_id};
  if (auto hit = cache_.Get(key)) return hit;

  Result<elf::ElfFunctions> elf =
      elf::ReadElfFunctionsOfFile(fd->get(), m.path, true, options_.max_file_bytes);
  if (!elf.ok()) return elf.status();
  // A stripped file keeps .dynsym only (the exported functions): its debug
  // file, when installed, has them all. Only a debug file of the same build
  // id counts; its loads are the binary's own, so only its functions are
  // taken.
  if (elf->source != elf::ElfFunctions::Source::kSymtab && elf->build_id.size() > 2 &&
      !options_.debug_dir.empty()) {
    const std::string debug = options_.debug_dir + "/.build-id/" + elf->build_id.substr(0, 2) +
                              "/" + elf->build_id.substr(2) + ".debug";
    Result<elf::ElfFunctions> dbg = ReadDebugFile(debug);
    if (dbg.ok() && dbg->build_id == elf->build_id &&
        dbg->source == elf::ElfFunctions::Source::kSymtab && !dbg->functions.empty()) {
      elf->functions = std::move(dbg->functions);
      elf->names = std::move(dbg->names);
      elf->source = elf::ElfFunctions::Source::kSymtab;
      elf->from_debug_file = true;
    } else if (!dbg.ok()) {
      // Said with the profile's sites (symbols::FileNamesMissing): the
      // user's next step is installing that file, or reading it as the
      // target (a node agent cannot).
      elf->debug_file_missing = dbg.status().message();
    } else {
      elf->debug_file_missing = debug + " is not this build's, or has no symbol table";
    }
  }
  auto shared = std::make_shared<const elf::ElfFunctions>(std::move(elf).value());
  cache_.Put(key, shared);
  return shared;
}

}  // namespace memtrimd::symbols

#include "collectors/symbols/target_elf.h"

#include <cerrno>

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

Result<elf::ElfFunctions> ReadAsTarget(const Target& t, const std::string& path, bool with_symbols,
                                       std::size_t max_bytes) {
  UniqueFd fd = OpenAsTarget(t, path);
  if (fd.get() < 0) return Status::FromErrno(errno, "open " + path);
  return elf::ReadElfFunctionsOfFile(fd.get(), path, with_symbols, max_bytes);
}

}  // namespace

Result<std::shared_ptr<const elf::ElfFunctions>> TargetElfSource::Functions(
    const procfs::MapsEntry& m) {
  if (!m.IsFile()) return Status(ErrorCode::kNotFound, "no file is mapped there");
  if (m.deleted) {
    return Status(ErrorCode::kNotFound, m.path + " was deleted since it was mapped");
  }
  Result<elf::ElfFunctions> identity = ReadAsTarget(target_, m.path, false, kIdentityBytes);
  if (!identity.ok()) return identity.status();
  SymbolCache::Key key{m.dev_major, m.dev_minor, m.inode, identity->build_id};
  if (auto hit = cache_.Get(key)) return hit;

  Result<elf::ElfFunctions> elf = ReadAsTarget(target_, m.path, true, options_.max_file_bytes);
  if (!elf.ok()) return elf.status();
  // A stripped file keeps .dynsym only (the exported functions): its debug
  // file, when installed, has them all. Only a debug file of the same build
  // id counts; its loads are the binary's own, so only its functions are
  // taken.
  if (elf->source != elf::ElfFunctions::Source::kSymtab && elf->build_id.size() > 2 &&
      !options_.debug_dir.empty()) {
    const std::string debug = options_.debug_dir + "/.build-id/" + elf->build_id.substr(0, 2) +
                              "/" + elf->build_id.substr(2) + ".debug";
    Result<elf::ElfFunctions> dbg = ReadAsTarget(target_, debug, true, options_.max_file_bytes);
    if (dbg.ok() && dbg->build_id == elf->build_id &&
        dbg->source == elf::ElfFunctions::Source::kSymtab && !dbg->functions.empty()) {
      elf->functions = std::move(dbg->functions);
      elf->names = std::move(dbg->names);
      elf->source = elf::ElfFunctions::Source::kSymtab;
      elf->from_debug_file = true;
    }
  }
  auto shared = std::make_shared<const elf::ElfFunctions>(std::move(elf).value());
  cache_.Put(key, shared);
  return shared;
}

}  // namespace memtrimd::symbols

#include "collectors/symbols/symbolize.h"

#include <map>
#include <tuple>

namespace memtrimd::symbols {
namespace {

// One file's answer within a call, by its identity in maps.
struct FileKey {
  uint32_t major;
  uint32_t minor;
  uint64_t inode;
  std::string path;
  bool operator<(const FileKey& o) const {
    return std::tie(major, minor, inode, path) < std::tie(o.major, o.minor, o.inode, o.path);
  }
};

struct FileAnswer {
  std::shared_ptr<const elf::ElfFunctions> elf;  // null: not readable
};

}  // namespace

Symbolization Symbolize(std::span<const uint64_t> addresses,
                        std::span<const procfs::MapsEntry> maps, ElfSource& source) {
  Symbolization out;
  out.frames.reserve(addresses.size());
  std::map<FileKey, FileAnswer> seen;
  std::map<uint64_t, int> mapping_index;  // mapping start -> files index
  for (uint64_t address : addresses) {
    Frame f;
    f.address = address;
    f.function = "[unknown]";
    const procfs::MapsEntry* m = procfs::FindMapping(maps, address);
    if (m != nullptr && !m->IsFile() && m->inode == 0 &&
        (m->path.empty() || m->path.starts_with("[anon:"))) {
      f.kind = FrameKind::kAnon;
      f.function = "[anon]";
    }
    if (m == nullptr || !m->IsFile()) {
      out.frames.push_back(std::move(f));
      continue;
    }
    FileKey key{m->dev_major, m->dev_minor, m->inode, m->path};
    auto [it, fresh] = seen.try_emplace(key);
    FileAnswer& answer = it->second;
    if (fresh) {
      Result<std::shared_ptr<const elf::ElfFunctions>> elf = source.Functions(*m);
      if (elf.ok()) answer.elf = std::move(elf).value();
    }
    // One entry per mapping (pprof's Mapping is an address range): a file's
    // segments are mapped apart, so one file may be two entries.
    auto [slot, first] = mapping_index.try_emplace(m->start, static_cast<int>(out.files.size()));
    if (first) {
      MappedFile file;
      file.path = m->path;
      file.start = m->start;
      file.end = m->end;
      file.offset = m->offset;
      if (answer.elf) {
        file.build_id = answer.elf->build_id;
        file.symbols = answer.elf->source != elf::ElfFunctions::Source::kNone;
      }
      out.files.push_back(std::move(file));
    }
    f.file = slot->second;
    f.file_offset = address - m->start + m->offset;
    if (answer.elf) {
      std::optional<uint64_t> vaddr = answer.elf->VaddrOfOffset(f.file_offset);
      if (vaddr) {
        f.elf_address = *vaddr;
        if (const elf::ElfFunction* fn = answer.elf->Find(*vaddr)) {
          f.kind = FrameKind::kFunction;
          f.function = std::string(answer.elf->name(*fn));
        }
      }
    }
    out.frames.push_back(std::move(f));
  }
  return out;
}

}  // namespace memtrimd::symbols

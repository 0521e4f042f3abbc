#include "collectors/symbols/symbolize.h"

#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

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
  std::string error;                             // why not, when null
};

}  // namespace

std::string CapFunctionName(std::string_view name) {
  if (name.size() <= kMaxFunctionNameBytes) return std::string(name);
  std::size_t cut = kMaxFunctionNameBytes;
  // Not inside a UTF-8 sequence: back off over continuation bytes.
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
  std::string out(name.substr(0, cut));
  out += kCutMarker;
  return out;
}

std::string FileNamesMissing(const elf::ElfFunctions* elf, const std::string& read_error) {
  if (elf == nullptr) return "not read: " + (read_error.empty() ? "unknown error" : read_error);
  switch (elf->source) {
    case elf::ElfFunctions::Source::kSymtab:
      return "";
    case elf::ElfFunctions::Source::kNone:
      return "it has no symbol table";
    case elf::ElfFunctions::Source::kDynsym:
      break;
  }
  // The usual case of a packaged program: its debug file (a -dbgsym
  // package) has every function, found by build id.
  std::string out = "stripped: only the functions it exports have names";
  if (!elf->debug_file_missing.empty()) {
    out += "; its debug file (build id " + elf->build_id + "): " + elf->debug_file_missing;
  } else if (!elf->build_id.empty()) {
    out += "; no debug file was read for its build id " + elf->build_id;
  }
  return out;
}

std::size_t Symbolization::MemoryBytes() const {
  std::size_t n = frames.capacity() * sizeof(Frame) + files.capacity() * sizeof(MappedFile);
  for (const MappedFile& f : files) {
    n += f.path.capacity() + f.build_id.capacity() + f.names_missing.capacity();
  }
  if (names) {
    n += sizeof(*names);
    for (const std::string& s : *names) n += sizeof(std::string) + s.capacity();
  }
  return n;
}

namespace {

// The names of one symbol: each string stored once in `names`.
struct Names {
  std::string_view function;
  std::string_view system_name;
  std::string_view short_name;
};

Names NamesOf(std::string_view symbol, std::deque<std::string>& names) {
  Names out;
  out.system_name = names.emplace_back(CapFunctionName(symbol));
  const std::string demangled = Demangle(symbol);
  out.function =
      demangled == symbol ? out.system_name : names.emplace_back(CapFunctionName(demangled));
  const std::string brief = ShortFunctionName(demangled);
  out.short_name = brief == demangled
                       ? out.function
                       : std::string_view(names.emplace_back(CapFunctionName(brief)));
  return out;
}

}  // namespace

Symbolization Symbolize(std::span<const uint64_t> addresses,
                        std::span<const procfs::MapsEntry> maps, ElfSource& source,
                        uint64_t main_code, std::span<const JavaFrameName> java) {
  Symbolization out;
  out.frames.reserve(addresses.size());
  std::map<FileKey, FileAnswer> seen;
  std::map<uint64_t, int> mapping_index;  // mapping start -> files index
  auto names = std::make_shared<std::deque<std::string>>();
  // A function's names by where it lies in its file's string table: stored
  // once however many addresses lie in the function.
  std::map<std::pair<const char*, std::size_t>, Names> interned;
  // The file a file mapping maps (asked of `source` once) and its entry in
  // out.files (one per mapping: pprof's Mapping is an address range, and a
  // file's segments are mapped apart, so one file may be two entries).
  auto file_of = [&](const procfs::MapsEntry& m) -> std::pair<int, const FileAnswer*> {
    FileKey key{m.dev_major, m.dev_minor, m.inode, m.path};
    auto [it, fresh] = seen.try_emplace(key);
    FileAnswer& answer = it->second;
    if (fresh) {
      Result<std::shared_ptr<const elf::ElfFunctions>> elf = source.Functions(m);
      if (elf.ok()) {
        answer.elf = std::move(elf).value();
      } else {
        answer.error = elf.status().message();
      }
    }
    auto [slot, first] = mapping_index.try_emplace(m.start, static_cast<int>(out.files.size()));
    if (first) {
      MappedFile file;
      file.path = m.path;
      file.start = m.start;
      file.end = m.end;
      file.offset = m.offset;
      if (answer.elf) {
        file.build_id = answer.elf->build_id;
        file.symbols = answer.elf->source != elf::ElfFunctions::Source::kNone;
      }
      file.names_missing = FileNamesMissing(answer.elf.get(), answer.error);
      out.files.push_back(std::move(file));
    }
    return {slot->second, &answer};
  };
  if (main_code != 0) {
    const procfs::MapsEntry* m = procfs::FindMapping(maps, main_code);
    if (m != nullptr && m->IsFile()) file_of(*m);
  }
  // Java frames by their word; each name and file stored once.
  std::unordered_map<uint64_t, const JavaFrameName*> java_of;
  for (const JavaFrameName& j : java) java_of.try_emplace(j.frame, &j);
  std::unordered_map<std::string, std::string_view> java_interned;
  auto intern = [&](std::string_view s) -> std::string_view {
    auto [it, added] = java_interned.try_emplace(std::string(s));
    if (added) it->second = names->emplace_back(CapFunctionName(s));
    return it->second;
  };
  for (uint64_t address : addresses) {
    Frame f;
    f.address = address;
    if (IsJavaFrame(address)) {
      f.kind = FrameKind::kJava;
      auto it = java_of.find(address);
      const JavaFrameName* j = it != java_of.end() ? it->second : nullptr;
      f.function = f.system_name = f.short_name =
          intern(j != nullptr ? std::string_view(j->name) : kUnknownJavaMethod);
      if (j != nullptr && !j->file.empty()) f.source_file = intern(j->file);
      f.line = j != nullptr ? j->line : 0;
      out.frames.push_back(std::move(f));
      continue;
    }
    const procfs::MapsEntry* m = procfs::FindMapping(maps, address);
    if (m != nullptr && !m->IsFile() && m->inode == 0 &&
        (m->path.empty() || m->path.starts_with("[anon:"))) {
      f.kind = FrameKind::kAnon;
      f.function = f.system_name = f.short_name = "[anon]";
    }
    if (m == nullptr || !m->IsFile()) {
      out.frames.push_back(std::move(f));
      continue;
    }
    const auto [index, answer] = file_of(*m);
    f.file = index;
    f.file_offset = address - m->start + m->offset;
    if (answer->elf) {
      std::optional<uint64_t> vaddr = answer->elf->VaddrOfOffset(f.file_offset);
      if (vaddr) {
        f.elf_address = *vaddr;
        if (const elf::ElfFunction* fn = answer->elf->Find(*vaddr)) {
          f.kind = FrameKind::kFunction;
          const std::string_view name = answer->elf->name(*fn);
          auto [at, added] = interned.try_emplace({name.data(), name.size()});
          if (added) at->second = NamesOf(name, *names);
          f.function = at->second.function;
          f.system_name = at->second.system_name;
          f.short_name = at->second.short_name;
        }
      }
    }
    out.frames.push_back(std::move(f));
  }
  out.names = std::move(names);
  return out;
}

}  // namespace memtrimd::symbols

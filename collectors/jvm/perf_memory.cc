#include "collectors/jvm/perf_memory.h"

#include <fcntl.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "collectors/common/access.h"
#include "collectors/common/file_reader.h"
#include "collectors/common/target_open.h"
#include "collectors/common/text.h"
#include "collectors/common/unique_fd.h"
#include "collectors/elf/elf_symbols.h"

namespace memtrimd::jvm {
namespace {

constexpr uint64_t kMaxStride = 4096;
constexpr std::size_t kMaxName = 64;
// The prologue (hsperfdata.h): its size, and where `used` is.
constexpr uint64_t kPrologueSize = 32;
// How much of libjvm.so is compared with what the JVM maps: the ELF and
// program headers and, in JDK 17 and 25, .dynsym and .dynstr.
constexpr std::size_t kCompareBytes = 64 * 1024;

Status Bad(const std::string& what) {
  return Status(ErrorCode::kParseError, "perf memory: " + what);
}

uint64_t Le64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

Result<uint64_t> ReadU64(const RemoteMemory& m, uint64_t address) {
  char b[8];
  if (Status st = m.Read(address, sizeof b, b); !st.ok()) return st;
  return Le64(b);
}

// A NUL-terminated name at `address`, compared on at most kMaxName bytes;
// read a byte at a time past the first chunk's end is not needed: names in
// the table are short literals, and a longer one is not the one looked for.
Result<std::string> ReadName(const RemoteMemory& m, uint64_t address, std::size_t want) {
  const std::size_t len = std::min(kMaxName, want + 1);
  std::string out(len, '\0');
  if (Status st = m.Read(address, len, out.data()); !st.ok()) {
    // The name may end closer to the end of its mapping than `len`: the
    // exact length is all that has to be readable.
    out.assign(want + 1, '\0');
    if (Status again = m.Read(address, want + 1, out.data()); !again.ok()) return again;
  }
  std::size_t nul = out.find('\0');
  return out.substr(0, nul == std::string::npos ? out.size() : nul);
}

}  // namespace

std::optional<LibjvmMapping> LibjvmFromMapsLine(std::string_view line) {
  std::string_view fields[5];
  for (std::string_view& f : fields) {
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    std::size_t sp = line.find(' ');
    if (sp == std::string_view::npos) return std::nullopt;
    f = line.substr(0, sp);
    line.remove_prefix(sp);
  }
  while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  constexpr std::string_view kName = "/libjvm.so";
  if (line.size() < kName.size() || line.substr(line.size() - kName.size()) != kName) {
    return std::nullopt;
  }
  std::optional<uint64_t> offset = text::ParseHex(fields[2]);
  std::size_t dash = fields[0].find('-');
  if (!offset || *offset != 0 || dash == std::string_view::npos) return std::nullopt;
  std::optional<uint64_t> start = text::ParseHex(fields[0].substr(0, dash));
  std::optional<uint64_t> end = text::ParseHex(fields[0].substr(dash + 1));
  if (!start || !end || *end <= *start) return std::nullopt;
  return LibjvmMapping{*start, *end, std::string(line)};
}

std::optional<uint64_t> LoadBias(std::string_view head, uint64_t start) {
  if (head.size() < 64 ||
      head.substr(0, 4) !=
          "\x7f"
          "ELF" ||
      head[4] != 2 || head[5] != 1) {
    return std::nullopt;
  }
  const uint64_t phoff = Le64(head.data() + 32);
  const auto phentsize =
      static_cast<uint16_t>(static_cast<uint8_t>(head[54]) | (static_cast<uint8_t>(head[55]) << 8));
  const auto phnum =
      static_cast<uint16_t>(static_cast<uint8_t>(head[56]) | (static_cast<uint8_t>(head[57]) << 8));
  if (phentsize < 56) return std::nullopt;
  for (uint64_t i = 0; i < phnum; ++i) {
    const uint64_t at = phoff + i * phentsize;
    if (at > head.size() || head.size() - at < 56) return std::nullopt;
    const char* ph = head.data() + at;
    const uint32_t type = static_cast<uint32_t>(Le64(ph) & 0xffffffffu);
    if (type != 1 /* PT_LOAD */ || Le64(ph + 8) != 0) continue;
    const uint64_t vaddr = Le64(ph + 16);
    if (vaddr > start) return std::nullopt;
    return start - vaddr;
  }
  return std::nullopt;
}

Status MemoryImage::Read(uint64_t address, std::size_t len, char* out) const {
  if (address < base_ || address - base_ > bytes_.size() ||
      len > bytes_.size() - (address - base_)) {
    return Status(ErrorCode::kUnavailable, "perf memory: read outside the image");
  }
  std::memcpy(out, bytes_.data() + (address - base_), len);
  return Status::Ok();
}

Status ProcessMemory::Read(uint64_t address, std::size_t len, char* out) const {
  iovec local{out, len};
  iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(address)), len};
  ssize_t got = ::process_vm_readv(pid_, &local, 1, &remote, 1, 0);
  if (got < 0) {
    const int err = errno;
    if (err == EPERM) {
      return Status(ErrorCode::kPermissionDenied,
                    "perf memory: process_vm_readv: " + NeedsCapability(Capability::kSysPtrace),
                    Cause::kNeedsCapability);
    }
    return Status::FromErrno(err, "perf memory: process_vm_readv");
  }
  if (static_cast<std::size_t>(got) != len) {
    return Status(ErrorCode::kUnavailable, "perf memory: process_vm_readv: short read");
  }
  return Status::Ok();
}

Result<std::vector<std::optional<uint64_t>>> FindStaticFields(
    const RemoteMemory& m, const VmStructsExports& e, std::string_view type,
    std::span<const std::string_view> fields) {
  Result<uint64_t> table = ReadU64(m, e.table);
  Result<uint64_t> stride = ReadU64(m, e.stride);
  Result<uint64_t> type_at = ReadU64(m, e.type_name);
  Result<uint64_t> field_at = ReadU64(m, e.field_name);
  Result<uint64_t> address_at = ReadU64(m, e.address);
  for (const Result<uint64_t>* r : {&table, &stride, &type_at, &field_at, &address_at}) {
    if (!r->ok()) return r->status();
  }
  if (*table == 0) return Bad("gHotSpotVMStructs is null");
  // An entry must hold the three 8-byte words it is read at (and a stride
  // under 8 would make stride - 8 wrap around).
  if (*stride < 8 || *stride > kMaxStride || *type_at > *stride - 8 || *field_at > *stride - 8 ||
      *address_at > *stride - 8) {
    return Bad("the VMStructs entry layout is not one an entry could have");
  }
  std::vector<std::optional<uint64_t>> out(fields.size());
  // A type name is a string literal: every entry of one type points at the
  // same bytes, so each pointer is compared once.
  std::map<uint64_t, bool> is_type;
  std::string entry(static_cast<std::size_t>(*stride), '\0');
  for (std::size_t i = 0; i < kMaxVmStructsEntries; ++i) {
    const uint64_t at = *table + i * *stride;
    if (at < *table) return Bad("the VMStructs table wraps around");
    if (Status st = m.Read(at, entry.size(), entry.data()); !st.ok()) return st;
    const uint64_t type_name = Le64(entry.data() + *type_at);
    if (type_name == 0) return out;  // the table's end
    auto known = is_type.find(type_name);
    if (known == is_type.end()) {
      Result<std::string> name = ReadName(m, type_name, type.size());
      if (!name.ok()) return name.status();
      known = is_type.emplace(type_name, *name == type).first;
    }
    if (!known->second) continue;
    const uint64_t field_name = Le64(entry.data() + *field_at);
    if (field_name == 0) continue;
    for (std::size_t f = 0; f < fields.size(); ++f) {
      if (out[f]) continue;
      Result<std::string> name = ReadName(m, field_name, fields[f].size());
      if (!name.ok()) return name.status();
      if (*name == fields[f]) out[f] = Le64(entry.data() + *address_at);
    }
  }
  return Bad("the VMStructs table does not end within " + std::to_string(kMaxVmStructsEntries) +
             " entries");
}

Result<PerfMemoryLocation> LocatePerfMemory(const RemoteMemory& m, const VmStructsExports& e) {
  constexpr std::string_view kFields[] = {"_prologue", "_capacity"};
  Result<std::vector<std::optional<uint64_t>>> at = FindStaticFields(m, e, "PerfMemory", kFields);
  if (!at.ok()) return at.status();
  if (!(*at)[0] || !(*at)[1]) {
    return Status(ErrorCode::kNotFound, "perf memory: libjvm.so's VMStructs lists no PerfMemory");
  }
  Result<uint64_t> start = ReadU64(m, *(*at)[0]);
  if (!start.ok()) return start.status();
  Result<uint64_t> capacity = ReadU64(m, *(*at)[1]);
  if (!capacity.ok()) return capacity.status();
  if (*start == 0 || *capacity < kPrologueSize) {
    return Status(ErrorCode::kNotFound,
                  "perf memory: the JVM has none (-XX:-UsePerfData, or it is still starting)",
                  Cause::kStarting);
  }
  return PerfMemoryLocation{*start, *capacity};
}

Result<PerfData> ReadPerfMemory(const RemoteMemory& m, const PerfMemoryLocation& where) {
  if (where.capacity < kPrologueSize) return Bad("smaller than its prologue");
  // The prologue's `used` bounds the entries; read only that much.
  char prologue[kPrologueSize];
  if (Status st = m.Read(where.start, sizeof prologue, prologue); !st.ok()) return st;
  uint64_t used = static_cast<uint32_t>(Le64(prologue + 8) & 0xffffffffu);
  used = std::clamp<uint64_t>(used, kPrologueSize, std::min(where.capacity, kMaxPerfMemoryBytes));
  std::string bytes(static_cast<std::size_t>(used), '\0');
  if (Status st = m.Read(where.start, bytes.size(), bytes.data()); !st.ok()) return st;
  return ParsePerfData(bytes);
}

Result<PerfMemoryLocation> FindPerfMemory(const Target& t) {
  std::optional<LibjvmMapping> lib;
  Status maps = ForEachLine(t.proc_dir + "/maps", 256u << 20, [&](std::string_view line) {
    if (!lib) lib = LibjvmFromMapsLine(line);
  });
  if (!maps.ok()) return maps;
  if (!lib) return Status(ErrorCode::kNotFound, "perf memory: the JVM maps no libjvm.so");
  // The file as the JVM sees it; its first bytes must be the ones the JVM
  // has mapped (so that its exports are this libjvm.so's). Device and inode
  // are not compared: on overlayfs maps shows the layer's, stat the overlay's.
  UniqueFd fd = OpenAsTarget(t, lib->path);
  if (fd.get() < 0) return Status::FromErrno(errno, "perf memory: open " + lib->path);
  const std::size_t head_len =
      static_cast<std::size_t>(std::min<uint64_t>(kCompareBytes, lib->end - lib->start));
  std::string file_head(head_len, '\0');
  std::size_t done = 0;
  while (done < head_len) {
    ssize_t got =
        ::pread(fd.get(), file_head.data() + done, head_len - done, static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    done += static_cast<std::size_t>(got);
  }
  file_head.resize(done);
  ProcessMemory memory(t.pid);
  std::string mapped_head(file_head.size(), '\0');
  if (Status st = memory.Read(lib->start, mapped_head.size(), mapped_head.data()); !st.ok()) {
    return st;
  }
  if (file_head.empty() || mapped_head != file_head) {
    return Status(ErrorCode::kNotFound,
                  "perf memory: " + lib->path + " is not the libjvm.so the JVM has mapped");
  }
  std::optional<uint64_t> bias = LoadBias(mapped_head, lib->start);
  if (!bias) return Bad(lib->path + ": no PT_LOAD segment at file offset 0");
  Result<std::vector<std::optional<uint64_t>>> values =
      elf::ExportedSymbolValuesOfFile(fd.get(), lib->path, kVmStructsExports);
  if (!values.ok()) return values.status();
  for (const std::optional<uint64_t>& v : *values) {
    if (!v) {
      return Status(ErrorCode::kNotFound,
                    "perf memory: " + lib->path + " does not export the VMStructs table");
    }
  }
  VmStructsExports e{*bias + *(*values)[0], *bias + *(*values)[1], *bias + *(*values)[2],
                     *bias + *(*values)[3], *bias + *(*values)[4]};
  return LocatePerfMemory(memory, e);
}

}  // namespace memtrimd::jvm

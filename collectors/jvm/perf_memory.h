// The JVM's perf counters read from its memory, for a JVM that has them but
// no hsperfdata file: a uid without a user name (HotSpot names the file's
// directory after the user) or -XX:+PerfDisableSharedMem. The counters are
// the same bytes the file would hold (a prologue and entries, see
// hsperfdata.h), in anonymous memory. They are found where the JVM's
// serviceability agent finds them: PerfMemory::_prologue and
// PerfMemory::_capacity in the VMStructs table that libjvm.so exports
// (gHotSpotVMStructs and the entry layout beside it). Reading another
// process's memory (process_vm_readv) needs ptrace access: the JVM's uid or
// CAP_SYS_PTRACE. Nothing is written and nothing in the JVM waits.
//
// Not the attach socket: the JDK's `jcmd <pid> PerfCounter.print` is
// answered by jcmd itself from the hsperfdata file; the JVM has no such
// diagnostic command ("Unknown diagnostic command" on 17 and 25).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/status.h"
#include "collectors/common/target.h"
#include "collectors/jvm/hsperfdata.h"

namespace memtrimd::jvm {

// Bytes of a process's memory at an address.
class RemoteMemory {
 public:
  virtual ~RemoteMemory() = default;
  // Fills out[0, len) with the bytes at `address`; an error when any of
  // them cannot be read.
  virtual Status Read(uint64_t address, std::size_t len, char* out) const = 0;
};

// process_vm_readv of `pid`.
class ProcessMemory : public RemoteMemory {
 public:
  explicit ProcessMemory(pid_t pid) : pid_(pid) {}
  Status Read(uint64_t address, std::size_t len, char* out) const override;

 private:
  pid_t pid_;
};

// Bytes already in memory, placed at `base` (tests, the fuzz target).
class MemoryImage : public RemoteMemory {
 public:
  MemoryImage(uint64_t base, std::string_view bytes) : base_(base), bytes_(bytes) {}
  Status Read(uint64_t address, std::size_t len, char* out) const override;

 private:
  uint64_t base_;
  std::string_view bytes_;
};

// The libjvm.so exports the walk needs, in this order.
inline constexpr std::string_view kVmStructsExports[] = {
    "gHotSpotVMStructs", "gHotSpotVMStructEntryArrayStride", "gHotSpotVMStructEntryTypeNameOffset",
    "gHotSpotVMStructEntryFieldNameOffset", "gHotSpotVMStructEntryAddressOffset"};

// Where those exports are in the JVM's memory (load address + st_value).
struct VmStructsExports {
  uint64_t table = 0;       // &gHotSpotVMStructs (a pointer to the table)
  uint64_t stride = 0;      // &gHotSpotVMStructEntryArrayStride
  uint64_t type_name = 0;   // &...TypeNameOffset
  uint64_t field_name = 0;  // &...FieldNameOffset
  uint64_t address = 0;     // &...AddressOffset
};

// Pure over `memory`: the address of each static field `type`::`fields[i]`
// in the VMStructs table (nullopt for one the table does not list). Reads
// the layout, then entries until the one whose type name is null, at most
// kMaxVmStructsEntries; names are compared on at most 64 bytes. kParseError
// when the layout is not one an entry could have (a stride over 4096, an
// offset past it), or the table does not end.
inline constexpr std::size_t kMaxVmStructsEntries = 100000;
Result<std::vector<std::optional<uint64_t>>> FindStaticFields(
    const RemoteMemory& memory, const VmStructsExports& exports, std::string_view type,
    std::span<const std::string_view> fields);

// The perf memory: where its prologue is and how large it is.
struct PerfMemoryLocation {
  uint64_t start = 0;
  uint64_t capacity = 0;
};

// Pure over `memory`: PerfMemory::_prologue and _capacity read through the
// table. kNotFound when the table lists neither or the JVM has no perf
// memory (-XX:-UsePerfData, or not yet created).
Result<PerfMemoryLocation> LocatePerfMemory(const RemoteMemory& memory,
                                            const VmStructsExports& exports);

// Pure over `memory`: the counters at `where` (at most 4 MiB), parsed as
// the file would be (ParsePerfData).
inline constexpr uint64_t kMaxPerfMemoryBytes = 4u << 20;
Result<PerfData> ReadPerfMemory(const RemoteMemory& memory, const PerfMemoryLocation& where);

// Pure: a /proc/<pid>/maps line of ".../libjvm.so" mapped from file
// offset 0 ("start-end perms offset dev inode path"); nullopt for any other.
struct LibjvmMapping {
  uint64_t start = 0;
  uint64_t end = 0;
  std::string path;
};
std::optional<LibjvmMapping> LibjvmFromMapsLine(std::string_view line);

// Pure: the load bias of an ELF object from its first bytes as mapped at
// `start` (the ELF and program headers): start minus the p_vaddr of its
// PT_LOAD segment at file offset 0; nullopt when the bytes do not say.
std::optional<uint64_t> LoadBias(std::string_view head, uint64_t start);

// The JVM's libjvm.so in its /proc/<pid>/maps, its exports from the file
// (through /proc/<pid>/root, checked to be the mapped file: device and
// inode), then LocatePerfMemory through process_vm_readv.
Result<PerfMemoryLocation> FindPerfMemory(const Target& target);

}  // namespace memtrimd::jvm

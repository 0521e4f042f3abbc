// The walk to a JVM's perf memory (perf_memory.h) over memory images: a
// VMStructs table laid out as libjvm.so lays it out, pointing at the bytes
// of recorded hsperfdata files, which must read back as the file parses;
// tables that are not what the exports say; a real maps line of libjvm.so;
// and the load bias of this test program against the dynamic linker's.
// The same walk against real JVMs: tests/integration/nameless_jvm_test.cc.

#include "collectors/jvm/perf_memory.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <link.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "collectors/common/file_reader.h"
#include "collectors/elf/elf_symbols.h"
#include "collectors/jvm/jvm_text.h"
#include "tests/unit/fixtures.h"

namespace memtrimd::jvm {
namespace {

constexpr uint64_t kBase = 0x7f0000001000;

void Put64(std::string& b, std::size_t at, uint64_t v) {
  if (b.size() < at + 8) b.resize(at + 8, '\0');
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

// One entry: type and field names, and the static field's address.
struct Entry {
  std::string type;
  std::string field;
  bool has_address = true;
};

// An image of: the five exported globals at kBase, a table of `entries`
// (VMStructEntry as HotSpot's: typeName, fieldName, typeString, isStatic,
// offset, address; 48 bytes), the names, the PerfMemory statics, and the
// perf data bytes. Layout values can be overridden to make it wrong.
struct Image {
  std::string bytes;
  VmStructsExports exports;
};

Image Build(const std::vector<Entry>& entries, std::string_view perf, bool end = true,
            uint64_t stride = 48, uint64_t prologue_value = 1) {
  Image img;
  std::string& b = img.bytes;
  const uint64_t table = kBase + 0x100;
  const uint64_t statics = kBase + 0x8000;  // _prologue, _capacity, other fields
  const uint64_t names = kBase + 0x9000;
  const uint64_t perf_at = kBase + 0x10000;
  img.exports = {kBase, kBase + 8, kBase + 16, kBase + 24, kBase + 32};
  Put64(b, 0, table);
  Put64(b, 8, stride);
  Put64(b, 16, 0);   // typeName
  Put64(b, 24, 8);   // fieldName
  Put64(b, 32, 40);  // address
  std::size_t name_at = names - kBase;
  auto name = [&](const std::string& s) {
    uint64_t where = kBase + name_at;
    if (b.size() < name_at + s.size() + 1) b.resize(name_at + s.size() + 1, '\0');
    std::memcpy(b.data() + name_at, s.c_str(), s.size() + 1);
    name_at += s.size() + 1;
    return where;
  };
  std::size_t n = 0;
  for (const Entry& e : entries) {
    const std::size_t at = static_cast<std::size_t>(table - kBase + n * stride);
    Put64(b, at, name(e.type));
    Put64(b, at + 8, name(e.field));
    uint64_t address = 0;
    if (e.has_address) {
      address = e.field == "_prologue"   ? statics
                : e.field == "_capacity" ? statics + 8
                                         : statics + 16 + 8 * n;
    }
    Put64(b, at + 40, address);
    ++n;
  }
  if (end) Put64(b, static_cast<std::size_t>(table - kBase + n * stride), 0);
  Put64(b, statics - kBase, prologue_value == 0 ? 0 : perf_at);
  Put64(b, statics - kBase + 8, perf.size());
  b.resize(perf_at - kBase, '\0');
  b.append(perf);
  return img;
}

const std::vector<Entry> kJdkLike = {
    {"Universe", "_collectedHeap"}, {"PerfMemory", "_start"},         {"PerfMemory", "_end"},
    {"PerfMemory", "_top"},         {"PerfMemory", "_capacity"},      {"PerfMemory", "_prologue"},
    {"PerfMemory", "_initialized"}, {"Threads", "_number_of_threads"}};

TEST(PerfMemory, RecordedCountersReadBackAsTheFileParses) {
  for (const char* jdk : {"17", "25"}) {
    const std::string file = test::ReadFixture(std::string("jvm/") + jdk + "/hsperfdata_g1.bin");
    Image img = Build(kJdkLike, file);
    MemoryImage m(kBase, img.bytes);
    Result<PerfMemoryLocation> where = LocatePerfMemory(m, img.exports);
    ASSERT_TRUE(where.ok()) << where.status().message();
    EXPECT_EQ(where->start, kBase + 0x10000);
    EXPECT_EQ(where->capacity, file.size());
    Result<PerfData> read = ReadPerfMemory(m, *where);
    ASSERT_TRUE(read.ok()) << read.status().message();
    Result<PerfData> parsed = ParsePerfData(file);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(read->entries, parsed->entries) << jdk;
    EXPECT_GT(read->entries.size(), 60u);  // the counters memtrimd reads (ParsePerfData)
  }
}

// Perf memory read from JVMs running as a uid without a user name (no
// file): the same format as the file, and its heap is GC.heap_info's, read
// right before over the attach socket.
TEST(PerfMemory, RecordedFromJvmsWithoutAFile) {
  for (const char* jdk : {"17", "25"}) {
    const std::string dir = std::string("jvm/") + jdk + "/";
    Result<PerfData> perf = ParsePerfData(test::ReadFixture(dir + "perf_memory_nameless_g1.bin"));
    ASSERT_TRUE(perf.ok()) << jdk << ": " << perf.status().message();
    Result<HeapInfo> info =
        ParseGcHeapInfo(test::ReadFixture(dir + "gc_heap_info_nameless_g1.txt"));
    ASSERT_TRUE(info.ok()) << info.status().message();
    std::optional<PerfHeap> heap = HeapFromPerfData(*perf);
    ASSERT_TRUE(heap.has_value());
    EXPECT_NEAR(static_cast<double>(heap->committed_bytes),
                static_cast<double>(info->committed_bytes), 64)
        << jdk;
    EXPECT_EQ(AttachSupportedFromPerfData(*perf), std::optional<bool>(true)) << jdk;
    // What the agent's "finished starting" check reads.
    EXPECT_GT(perf->Long("sun.rt.createVmEndTime").value_or(0), 0) << jdk;
    std::optional<PerfGc> gc = GcFromPerfData(*perf);
    ASSERT_TRUE(gc.has_value());
    ASSERT_FALSE(gc->collectors.empty());
    EXPECT_EQ(gc->collectors[0].name, "G1 young collection pauses") << jdk;
  }
}

TEST(PerfMemory, OnlyTheNamedTypesStaticsAreTaken) {
  const std::string file = test::ReadFixture("jvm/25/hsperfdata_g1.bin");
  // A look-alike type and the right field names under another type come
  // first: neither is PerfMemory's.
  std::vector<Entry> entries = {{"PerfMemoryX", "_prologue"},
                                {"Other", "_capacity"},
                                {"PerfMemor", "_prologue"},
                                {"PerfMemory", "_prologue_"}};
  Image img = Build(entries, file);
  MemoryImage m(kBase, img.bytes);
  constexpr std::string_view kFields[] = {"_prologue", "_capacity"};
  Result<std::vector<std::optional<uint64_t>>> at =
      FindStaticFields(m, img.exports, "PerfMemory", kFields);
  ASSERT_TRUE(at.ok()) << at.status().message();
  EXPECT_FALSE((*at)[0].has_value());
  EXPECT_FALSE((*at)[1].has_value());
  Result<PerfMemoryLocation> where = LocatePerfMemory(m, img.exports);
  EXPECT_EQ(where.status().code(), ErrorCode::kNotFound);
}

TEST(PerfMemory, AJvmWithoutPerfMemorySaysSo) {
  // -XX:-UsePerfData: the statics are there, the prologue pointer is null.
  Image img = Build(kJdkLike, test::ReadFixture("jvm/17/hsperfdata_g1.bin"), true, 48, 0);
  MemoryImage m(kBase, img.bytes);
  Result<PerfMemoryLocation> where = LocatePerfMemory(m, img.exports);
  ASSERT_FALSE(where.ok());
  EXPECT_EQ(where.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(where.status().message().find("-XX:-UsePerfData"), std::string::npos);
}

TEST(PerfMemory, TablesThatAreNotWhatTheExportsSayAreRefused) {
  const std::string file = test::ReadFixture("jvm/17/hsperfdata_g1.bin");
  for (uint64_t stride : {uint64_t{0}, uint64_t{40}, uint64_t{8192}}) {
    Image img = Build(kJdkLike, file);
    Put64(img.bytes, 8, stride);  // 40: the address field (at 40) no longer fits
    MemoryImage m(kBase, img.bytes);
    EXPECT_EQ(LocatePerfMemory(m, img.exports).status().code(), ErrorCode::kParseError) << stride;
  }
  // A table without its end runs into memory that cannot be read.
  Image open = Build({{"Universe", "_collectedHeap"}}, "", false);
  open.bytes.resize(0x100 + 48);
  MemoryImage m(kBase, open.bytes);
  EXPECT_FALSE(LocatePerfMemory(m, open.exports).ok());
  // Perf memory whose prologue says more than it holds: read up to the
  // capacity, and the parser refuses the cut.
  Image big = Build(kJdkLike, file.substr(0, 64));
  MemoryImage mb(kBase, big.bytes);
  Result<PerfMemoryLocation> where = LocatePerfMemory(mb, big.exports);
  ASSERT_TRUE(where.ok()) << where.status().message();
  EXPECT_FALSE(ReadPerfMemory(mb, *where).ok());
}

TEST(PerfMemory, LibjvmMappingFromARealMapsLine) {
  // /proc/<pid>/maps of a JDK 25 JVM (temurin-25).
  auto m = LibjvmFromMapsLine(
      "7f054ba00000-7f054bce3000 r--p 00000000 fe:00 318543                     "
      "/usr/lib/jvm/temurin-25-jdk-amd64/lib/server/libjvm.so");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->start, 0x7f054ba00000u);
  EXPECT_EQ(m->end, 0x7f054bce3000u);
  EXPECT_EQ(m->path, "/usr/lib/jvm/temurin-25-jdk-amd64/lib/server/libjvm.so");
  // Its other segments, and another library, are not the one wanted.
  EXPECT_FALSE(
      LibjvmFromMapsLine("7f054bce3000-7f054cd6f000 r-xp 002e3000 fe:00 318543     "
                         "/usr/lib/jvm/temurin-25-jdk-amd64/lib/server/libjvm.so"));
  EXPECT_FALSE(
      LibjvmFromMapsLine("7f054ba00000-7f054bce3000 r--p 00000000 fe:00 1 "
                         "/usr/lib/jvm/x/lib/server/libjvm.so.bak"));
  EXPECT_FALSE(LibjvmFromMapsLine("7f054ba00000-7f054bce3000 r--p 00000000 fe:00 1"));
  EXPECT_FALSE(LibjvmFromMapsLine("zz-7f054bce3000 r--p 00000000 fe:00 1 /libjvm.so"));
}

int FindSelf(struct dl_phdr_info* info, size_t, void* data) {
  // The first object is the program itself.
  *static_cast<uint64_t*>(data) = info->dlpi_addr;
  return 1;
}

TEST(PerfMemory, LoadBiasOfThisProgramIsTheDynamicLinkers) {
  // The bytes this program has mapped at file offset 0, and the bias the
  // dynamic linker applied to it.
  std::optional<uint64_t> start;
  Status st = ForEachLine("/proc/self/maps", 64u << 20, [&](std::string_view line) {
    if (start || line.find(" 00000000 ") == std::string_view::npos) return;
    std::size_t slash = line.find('/');
    if (slash == std::string_view::npos) return;
    char self[4096];
    ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return;
    if (line.substr(slash) == std::string_view(self, static_cast<std::size_t>(n))) {
      start = std::stoull(std::string(line.substr(0, line.find('-'))), nullptr, 16);
    }
  });
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(start.has_value());
  std::string head(4096, '\0');
  ASSERT_TRUE(ProcessMemory(::getpid()).Read(*start, head.size(), head.data()).ok());
  uint64_t linker = 0;
  dl_iterate_phdr(FindSelf, &linker);
  EXPECT_EQ(LoadBias(head, *start), std::optional<uint64_t>(linker));
  EXPECT_FALSE(LoadBias(head.substr(0, 63), *start).has_value());
  EXPECT_FALSE(LoadBias(std::string(4096, 'x'), *start).has_value());
}

struct Libc {
  std::string path;
  uint64_t bias = 0;
};

int FindLibc(struct dl_phdr_info* info, size_t, void* data) {
  std::string_view name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  if (name.find("/libc.so") == std::string_view::npos) return 0;
  auto* libc = static_cast<Libc*>(data);
  libc->path = std::string(name);
  libc->bias = info->dlpi_addr;
  return 1;
}

// The values FindPerfMemory adds to libjvm.so's load bias, read the same
// way from the C library this test runs on: each is where the dynamic
// linker put the symbol.
TEST(PerfMemory, ExportedSymbolValuesAreWhereTheDynamicLinkerPutThem) {
  Libc libc;
  dl_iterate_phdr(FindLibc, &libc);
  if (libc.path.empty()) GTEST_SKIP() << "no libc.so in this process";
  int fd = ::open(libc.path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << libc.path;
  constexpr std::string_view kNames[] = {"getpid", "not_a_symbol_anywhere", "environ"};
  auto values = elf::ExportedSymbolValuesOfFile(fd, libc.path, kNames);
  ::close(fd);
  ASSERT_TRUE(values.ok()) << values.status().message();
  ASSERT_EQ(values->size(), 3u);
  ASSERT_TRUE((*values)[0].has_value());
  EXPECT_EQ(libc.bias + *(*values)[0], reinterpret_cast<uintptr_t>(dlsym(RTLD_DEFAULT, "getpid")));
  EXPECT_FALSE((*values)[1].has_value());
  EXPECT_TRUE((*values)[2].has_value());  // an OBJECT symbol
}

}  // namespace
}  // namespace memtrimd::jvm

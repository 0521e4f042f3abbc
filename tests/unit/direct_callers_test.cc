// DirectCallersOf and the page's "Who holds the direct memory": stacks
// through DirectByteBuffer.<init> or Unsafe.allocateMemory are direct
// memory, those also through Util.getTemporaryDirectBuffer the temporary
// buffer cache (JDK 17 allocates it through allocateDirect, JDK 25 through
// Unsafe.allocateMemory itself), each by its first method outside the JDK.
// The profile is built in code: the rule over frames is under test.
#include "daemon/analysis/direct_callers.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "daemon/report/section_direct_callers.h"

namespace memtrimd {
namespace {

using agent::AgentSites;
using agent::AgentStack;
using procfs::MapsEntry;

constexpr uint64_t kMiB = 1u << 20;
constexpr uint64_t kJvm = 0x7f0000000000;

// libjvm.so's os::malloc, at its own base.
class JvmSource : public symbols::ElfSource {
 public:
  Result<std::shared_ptr<const elf::ElfFunctions>> Functions(const MapsEntry&) override {
    auto f = std::make_shared<elf::ElfFunctions>();
    f->source = elf::ElfFunctions::Source::kSymtab;
    f->loads.push_back({0, 0, 0x100000});
    elf::ElfFunction fn;
    fn.value = 0x1000;
    fn.size = 0x100;
    fn.name_size = 10;
    f->names = "os::malloc";
    f->functions.push_back(fn);
    return std::shared_ptr<const elf::ElfFunctions>(f);
  }
};

// Java frames: one word each (bit 63 set), named below.
enum Word : uint64_t {
  kAllocate = 0x8001000000001000,  // jdk.internal.misc.Unsafe.allocateMemory
  kInit = 0x8002000000001000,      // java.nio.DirectByteBuffer.<init>
  kAllocateDirect = 0x8003000000001000,
  kTemporary = 0x8004000000001000,  // sun.nio.ch.Util.getTemporaryDirectBuffer
  kRead = 0x8005000000001000,       // sun.nio.ch.IOUtil.read
  kReader = 0x8006000000001000,     // com.acme.Reader.load
  kLog = 0x8007000000001000,        // com.acme.Log.append
  kPool = 0x8008000000001000,       // com.acme.Pool.grow
  kPoolOtherLine = 0x8008001000001000,
  kDeflater = 0x8009000000001000,  // java.util.zip.Deflater.<init>
  kZip = 0x800a000000001000,       // com.acme.Zip.open
};

AgentStack Stack(uint64_t live_bytes, std::vector<uint64_t> java) {
  AgentStack s;
  s.values.live_bytes = live_bytes;
  s.values.live_samples = live_bytes > 0 ? 1 : 0;
  s.values.alloc_bytes = live_bytes + 1;
  s.pcs = {kJvm + 0x1010};
  s.pcs.insert(s.pcs.end(), java.begin(), java.end());
  return s;
}

agent::SiteProfile Profile() {
  AgentSites raw;
  raw.stacks = {
      // JDK 17: the cache's buffer through ByteBuffer.allocateDirect.
      Stack(16 * kMiB, {kAllocate, kInit, kAllocateDirect, kTemporary, kRead, kReader}),
      // JDK 25: through Unsafe.allocateMemory itself.
      Stack(4 * kMiB, {kAllocate, kTemporary, kRead, kLog}),
      // Direct buffers of one method from two lines.
      Stack(32 * kMiB, {kAllocate, kInit, kAllocateDirect, kPool}),
      Stack(8 * kMiB, {kAllocate, kInit, kAllocateDirect, kPoolOtherLine}),
      // Not direct memory; and direct memory no longer live.
      Stack(64 * kMiB, {kDeflater, kZip}),
      Stack(0, {kAllocate, kInit, kAllocateDirect, kZip}),
  };
  raw.java = {{kAllocate, "jdk.internal.misc.Unsafe.allocateMemory", "Unsafe.java", 1},
              {kInit, "java.nio.DirectByteBuffer.<init>", "DirectByteBuffer.java", 2},
              {kAllocateDirect, "java.nio.ByteBuffer.allocateDirect", "ByteBuffer.java", 3},
              {kTemporary, "sun.nio.ch.Util.getTemporaryDirectBuffer", "Util.java", 4},
              {kRead, "sun.nio.ch.IOUtil.read", "IOUtil.java", 5},
              {kReader, "com.acme.Reader.load", "Reader.java", 6},
              {kLog, "com.acme.Log.append", "Log.java", 7},
              {kPool, "com.acme.Pool.grow", "Pool.java", 8},
              {kPoolOtherLine, "com.acme.Pool.grow", "Pool.java", 9},
              {kDeflater, "java.util.zip.Deflater.<init>", "Deflater.java", 10},
              {kZip, "com.acme.Zip.open", "Zip.java", 11}};
  MapsEntry m;
  m.start = kJvm;
  m.end = kJvm + 0x100000;
  m.dev_major = 8;
  m.inode = 2;
  m.executable = true;
  m.path = "/usr/lib/jvm/java-17/lib/server/libjvm.so";
  std::vector<MapsEntry> maps = {m};
  JvmSource source;
  return agent::BuildSiteProfile(raw, maps, source, 64, 0, std::chrono::system_clock::time_point{});
}

TEST(DirectCallers, TheTemporaryCacheFirstThenDirectBuffersEachByItsAppMethod) {
  const std::vector<DirectCaller> c = DirectCallersOf(Profile());
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].kind, DirectKind::kTemporaryCache);
  EXPECT_EQ(c[0].method, "com.acme.Reader.load");
  EXPECT_EQ(c[0].live_bytes, 16 * kMiB);
  EXPECT_EQ(c[1].kind, DirectKind::kTemporaryCache);
  EXPECT_EQ(c[1].method, "com.acme.Log.append");
  EXPECT_EQ(c[1].live_bytes, 4 * kMiB);
  EXPECT_EQ(c[2].kind, DirectKind::kDirectBuffer);
  EXPECT_EQ(c[2].method, "com.acme.Pool.grow");
  EXPECT_EQ(c[2].live_bytes, 40 * kMiB);
  EXPECT_EQ(c[2].stacks, 2u);
}

TEST(DirectCallers, ThePageListsThemForAJvmOnly) {
  TargetSample s;
  s.sites = std::make_shared<const agent::SiteProfile>(Profile());
  std::string out;
  report::DirectCallersHtml(out, s);
  EXPECT_EQ(out, "");  // not a JVM
  s.jvm.emplace();
  report::DirectCallersHtml(out, s);
  EXPECT_NE(
      out.find("<tr data-kind=\"temporary_buffer_cache\" data-method=\"com.acme.Reader.load\" "
               "data-live-bytes=\"16777216\">"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find("<tr data-kind=\"direct_buffers\" data-method=\"com.acme.Pool.grow\" "
                     "data-live-bytes=\"41943040\">"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("com.acme.Zip.open"), std::string::npos) << out;
}

TEST(DirectCallers, WithoutJavaFramesThePageSaysWhy) {
  TargetSample s;
  agent::SiteProfile p;
  p.java_counted = true;
  p.java_frames = false;
  s.sites = std::make_shared<const agent::SiteProfile>(std::move(p));
  s.jvm.emplace();
  std::string out;
  report::DirectCallersHtml(out, s);
  EXPECT_NE(out.find("data-callers=\"0\""), std::string::npos) << out;
  EXPECT_NE(out.find("walks no Java frames"), std::string::npos) << out;
}

}  // namespace
}  // namespace memtrimd

// BuildSiteProfile's nmt_tracked: a site whose stacks reach malloc from
// libjvm.so (past glibc's wrappers and the dynamic linker) is the JVM's own
// os::malloc, which NMT counts; anything else (zlib, JIT code, a program's
// own code) is memory NMT does not see. The maps and the files' functions
// are built in code: the rule over frames is under test, not ELF reading
// (symbols_test.cc reads real files).
#include "collectors/agent/client/site_profile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>

namespace memtrimd::agent {
namespace {

using elf::ElfFunction;
using elf::ElfFunctions;
using procfs::MapsEntry;

constexpr uint64_t kMiB = 1u << 20;

// Each file mapped at its own base, text at file offset 0 (vaddr = offset).
constexpr uint64_t kProg = 0x400000;
constexpr uint64_t kJvm = 0x7f0000000000;
constexpr uint64_t kLibc = 0x7f1000000000;
constexpr uint64_t kLoader = 0x7f2000000000;
constexpr uint64_t kZlib = 0x7f3000000000;
constexpr uint64_t kJit = 0x7e0000000000;  // anonymous: the JVM's code cache

MapsEntry Mapping(uint64_t start, uint64_t inode, std::string path) {
  MapsEntry m;
  m.start = start;
  m.end = start + 0x100000;
  m.dev_major = 8;
  m.inode = inode;
  m.executable = true;
  m.path = std::move(path);
  return m;
}

std::vector<MapsEntry> Maps() {
  MapsEntry jit;
  jit.start = kJit;
  jit.end = kJit + 0x100000;
  jit.executable = true;
  return {Mapping(kProg, 1, "/app/prog"),
          jit,
          Mapping(kJvm, 2, "/usr/lib/jvm/java-17/lib/server/libjvm.so"),
          Mapping(kLibc, 3, "/usr/lib/x86_64-linux-gnu/libc.so.6"),
          Mapping(kLoader, 4, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"),
          Mapping(kZlib, 5, "/usr/lib/x86_64-linux-gnu/libz.so.1.2.13")};
}

// Functions of 0x100 bytes each at 0x1000, 0x2000, ... in the order given.
std::shared_ptr<const ElfFunctions> Functions(std::vector<std::string> names) {
  auto f = std::make_shared<ElfFunctions>();
  f->source = ElfFunctions::Source::kSymtab;
  f->loads.push_back({0, 0, 0x100000});
  for (std::size_t i = 0; i < names.size(); ++i) {
    ElfFunction fn;
    fn.value = 0x1000 * (i + 1);
    fn.size = 0x100;
    fn.name_offset = static_cast<uint32_t>(f->names.size());
    fn.name_size = static_cast<uint32_t>(names[i].size());
    f->names += names[i];
    f->functions.push_back(fn);
  }
  return f;
}

// A return address inside the i-th function (from 0) of the file at `base`.
uint64_t In(uint64_t base, int i) { return base + 0x1000 * (i + 1) + 0x10; }

class InCodeSource : public symbols::ElfSource {
 public:
  Result<std::shared_ptr<const ElfFunctions>> Functions(const MapsEntry& m) override {
    auto it = files_.find(m.inode);
    if (it == files_.end()) return Status(ErrorCode::kNotFound, "no such file");
    return it->second;
  }
  std::map<uint64_t, std::shared_ptr<const ElfFunctions>> files_ = {
      {1, agent::Functions(
              {"main", "hold_200", "_ZNSt6vectorIiSaIiEE9push_backERKi",
               "_ZN3app5cache3putERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEm"})},
      {2, agent::Functions({"os::malloc", "Unsafe_AllocateMemory0", "SymbolTable::add",
                            "Java_java_util_zip_Inflater_init"})},
      {3, agent::Functions({"strdup", "__libc_calloc_wrapper", "posix_memalign_helper"})},
      {4, agent::Functions({"_dl_allocate_tls"})},
      {5, agent::Functions({"zcalloc", "inflateInit2_"})},
  };
};

AgentStack Stack(uint64_t live_bytes, std::vector<uint64_t> pcs) {
  AgentStack s;
  s.values.live_bytes = live_bytes;
  s.values.live_samples = 1;
  s.pcs = std::move(pcs);
  return s;
}

const NamedSite* Find(const SiteProfile& p, const std::string& name) {
  for (const NamedSite& s : p.sites) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// The profile of `raw` against Maps(), its files' functions from `source`.
SiteProfile BuildFrom(const AgentSites& raw, symbols::ElfSource& source, uint64_t main_code = 0) {
  std::vector<MapsEntry> maps = Maps();
  return BuildSiteProfile(raw, maps, source, 64, 0, std::chrono::system_clock::time_point{},
                          main_code);
}

SiteProfile Build(std::vector<AgentStack> stacks, uint64_t main_code = 0) {
  AgentSites raw;
  raw.stacks = std::move(stacks);
  InCodeSource source;
  return BuildFrom(raw, source, main_code);
}

TEST(SiteProfileNmt, StacksFromLibjvmAreNmtsOthersAreNot) {
  SiteProfile p = Build({
      // Unsafe.allocateMemory from JIT code: os::malloc called malloc.
      Stack(64 * kMiB, {In(kJvm, 0), In(kJvm, 1), kJit + 0x40}),
      // The JVM through a libc function (strdup) and the loader: still the JVM's.
      Stack(8 * kMiB, {In(kLibc, 0), In(kLoader, 0), In(kJvm, 2)}),
      // zlib's allocator under Inflater.init: the JVM's code is further out.
      Stack(32 * kMiB, {In(kZlib, 0), In(kZlib, 1), In(kJvm, 3)}),
      // A program's own code, and JIT code calling malloc directly.
      Stack(16 * kMiB, {In(kProg, 1), In(kProg, 0)}),
      Stack(4 * kMiB, {kJit + 0x80}),
      // An address in no mapping.
      Stack(2 * kMiB, {0x10}),
  });
  ASSERT_EQ(p.sites.size(), 6u);
  auto tracked = [&](const std::string& name) {
    const NamedSite* s = Find(p, name);
    EXPECT_NE(s, nullptr) << name;
    return s != nullptr && s->nmt_tracked;
  };
  EXPECT_TRUE(tracked("os::malloc < Unsafe_AllocateMemory0 < [java]"));
  EXPECT_TRUE(tracked("strdup < _dl_allocate_tls < SymbolTable::add"));
  EXPECT_FALSE(tracked("zcalloc < inflateInit2_ < Java_java_util_zip_Inflater_init"));
  EXPECT_FALSE(tracked("hold_200 < main"));
  EXPECT_FALSE(tracked("[java]"));
  EXPECT_FALSE(tracked("[unknown]"));
  // Sorted by live bytes, each keeping its flag.
  EXPECT_EQ(p.sites.front().name, "os::malloc < Unsafe_AllocateMemory0 < [java]");
  EXPECT_TRUE(p.sites.front().nmt_tracked);
}

// A target's answer is its own: a stack of 256 addresses (the parser's
// cap; the agent walks 32) keeps 64, so a profile's frames stay bounded.
TEST(SiteProfileNmt, ADeepStackIsCutAt64Frames) {
  std::vector<uint64_t> deep;
  for (uint64_t i = 0; i < 256; ++i) deep.push_back(0x100000 + i * 16);
  SiteProfile p = Build({Stack(kMiB, deep)});
  ASSERT_EQ(p.stacks.size(), 1u);
  EXPECT_EQ(p.stacks[0].addresses.size(), 64u);
  EXPECT_EQ(p.addresses.size(), 64u);
  EXPECT_EQ(p.total.live_bytes, kMiB);
}

TEST(SiteProfileNmt, ASiteIsNmtsOnlyWhenAllItsStacksAre) {
  // Three libc frames name both stacks alike; the fourth, the caller that
  // matters, is libjvm's in one and zlib's in the other.
  const std::vector<uint64_t> libc = {In(kLibc, 0), In(kLibc, 1), In(kLibc, 2)};
  std::vector<uint64_t> from_jvm = libc, from_zlib = libc;
  from_jvm.push_back(In(kJvm, 0));
  from_zlib.push_back(In(kZlib, 1));
  SiteProfile p = Build({Stack(10 * kMiB, from_jvm), Stack(5 * kMiB, from_zlib),
                         Stack(1 * kMiB, {In(kLibc, 0), In(kLibc, 2), In(kJvm, 1)})});
  const NamedSite* mixed = Find(p, "strdup < __libc_calloc_wrapper < posix_memalign_helper");
  ASSERT_NE(mixed, nullptr);
  EXPECT_EQ(mixed->stacks, 2u);
  EXPECT_EQ(mixed->values.live_bytes, 15 * kMiB);
  EXPECT_FALSE(mixed->nmt_tracked);
  const NamedSite* jvm = Find(p, "strdup < posix_memalign_helper < Unsafe_AllocateMemory0");
  ASSERT_NE(jvm, nullptr);
  EXPECT_TRUE(jvm->nmt_tracked);
}

TEST(SiteProfileNmt, OnlyAFileNamedLibjvmCounts) {
  // A stack of libc frames alone (nothing past them) is not the JVM's.
  SiteProfile only_libc = Build({Stack(kMiB, {In(kLibc, 0)})});
  ASSERT_EQ(only_libc.sites.size(), 1u);
  EXPECT_FALSE(only_libc.sites[0].nmt_tracked);
  // libjvm.so by its file name, wherever the JDK keeps it.
  SiteProfile p;
  p.addresses = {0x1000, 0x2000};
  p.symbols.frames.resize(2);
  p.symbols.frames[0].file = 0;
  p.symbols.frames[1].file = 1;
  p.symbols.files.resize(2);
  p.symbols.files[0].path = "/opt/java/openjdk/lib/server/libjvm.so";
  p.symbols.files[1].path = "/opt/app/libjvm.so.backup";
  const std::vector<uint64_t> first = {0x1000}, second = {0x2000};
  EXPECT_TRUE(NmtTrackedStack(first, p));
  EXPECT_FALSE(NmtTrackedStack(second, p));
  EXPECT_FALSE(NmtTrackedStack({}, p));
}

// C++ functions are named as their source names them, without parameters
// (a label stays short); the frames keep the whole demangled name and the
// symbol for the profile.
TEST(SiteProfileNames, CxxFunctionsAreDemangledWithoutParameters) {
  SiteProfile p = Build({Stack(kMiB, {In(kProg, 2), In(kProg, 3), In(kProg, 0)})});
  ASSERT_EQ(p.sites.size(), 1u);
  EXPECT_EQ(p.sites[0].name,
            "std::vector<int, std::allocator<int> >::push_back < app::cache::put < main");
  const auto frame = [&](uint64_t pc) {
    auto it = std::lower_bound(p.addresses.begin(), p.addresses.end(), pc - 1);
    return p.symbols.frames.at(static_cast<std::size_t>(it - p.addresses.begin()));
  };
  const symbols::Frame put = frame(In(kProg, 3));
  EXPECT_EQ(put.function,
            "app::cache::put(std::__cxx11::basic_string<char, std::char_traits<char>, "
            "std::allocator<char> > const&, unsigned long)");
  EXPECT_EQ(put.system_name,
            "_ZN3app5cache3putERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEm");
  EXPECT_EQ(put.short_name, "app::cache::put");
  // A C name is one string for all three.
  const symbols::Frame main = frame(In(kProg, 0));
  EXPECT_EQ(main.function, "main");
  EXPECT_EQ(main.system_name.data(), main.function.data());
  EXPECT_EQ(main.short_name.data(), main.function.data());
}

// The program's own mapping leads the files (pprof's "File:") when its
// start_code is given, even when no frame lies in it; else the files are
// in the order frames met them.
TEST(SiteProfileNames, TheProgramsMappingComesFirst) {
  const std::vector<AgentStack> stacks = {Stack(kMiB, {In(kZlib, 0), In(kJvm, 3)})};
  SiteProfile without = Build(stacks);
  ASSERT_EQ(without.symbols.files.size(), 2u);
  EXPECT_EQ(without.symbols.files[0].path, "/usr/lib/jvm/java-17/lib/server/libjvm.so");
  SiteProfile with = Build(stacks, kProg + 0x1000);
  ASSERT_EQ(with.symbols.files.size(), 3u);
  EXPECT_EQ(with.symbols.files[0].path, "/app/prog");
  EXPECT_EQ(with.sites.at(0).name, without.sites.at(0).name);
  // Frames point at their own files still.
  for (const symbols::Frame& f : with.symbols.frames) {
    ASSERT_GE(f.file, 1);
    EXPECT_NE(with.symbols.files[static_cast<std::size_t>(f.file)].path, "/app/prog");
  }
  // A start_code in no file mapping (anonymous, or none) changes nothing.
  EXPECT_EQ(Build(stacks, kJit + 0x10).symbols.files.size(), 2u);
  EXPECT_EQ(Build(stacks, 0x10).symbols.files.size(), 2u);
}

// Java frames (version 7): a stack with them is named by its innermost
// frame and its first Java frame outside the JDK; the anonymous frame the
// unwinder stopped in is left out; the words are looked up as sent (no
// return address less one), and a word the agent did not name is an
// unknown method.
TEST(SiteProfileNames, JavaFramesNameTheSiteByTheApplicationsMethod) {
  const uint64_t init = 0xfffe000000001000;      // Deflater.init, no bci
  const uint64_t ctor = 0x800f000000002000;      // Deflater.<init>
  const uint64_t app_a = 0x8008000000003000;     // com.acme.A.hold
  const uint64_t app_b = 0x8008000000004000;     // com.acme.B.hold
  const uint64_t jdk_only = 0x8001000000005000;  // java.lang.Thread.run
  const uint64_t stale = 0x8002000000006000;     // not named by the agent
  AgentSites raw;
  raw.stacks = {Stack(64 * kMiB, {In(kZlib, 1), In(kJvm, 3), kJit + 0x40, init, ctor, app_a}),
                Stack(32 * kMiB, {In(kZlib, 1), In(kJvm, 3), kJit + 0x40, init, ctor, app_b}),
                Stack(8 * kMiB, {In(kJvm, 0), jdk_only}), Stack(4 * kMiB, {In(kJvm, 0), stale})};
  raw.java = {{init, "java.util.zip.Deflater.init", "Deflater.java", 0},
              {ctor, "java.util.zip.Deflater.<init>", "Deflater.java", 201},
              {app_a, "com.acme.A.hold", "A.java", 12},
              {app_b, "com.acme.B.hold", "B.java", 40},
              {jdk_only, "java.lang.Thread.run", "Thread.java", 833}};
  InCodeSource source;
  SiteProfile p = BuildFrom(raw, source);
  ASSERT_EQ(p.sites.size(), 4u);
  EXPECT_EQ(p.sites[0].name, "inflateInit2_ < com.acme.A.hold");
  EXPECT_EQ(p.sites[1].name, "inflateInit2_ < com.acme.B.hold");
  EXPECT_EQ(p.sites[2].name, "os::malloc < java.lang.Thread.run");
  EXPECT_EQ(p.sites[3].name, "os::malloc < [java: unknown method]");
  EXPECT_FALSE(p.sites[0].nmt_tracked);
  EXPECT_TRUE(p.sites[2].nmt_tracked);
  // The stack: native frames, then the Java words as sent, without the
  // JIT frame between.
  const SiteStack& a = p.stacks[0];
  ASSERT_EQ(a.addresses.size(), 5u);
  EXPECT_EQ(a.addresses[2], init);
  EXPECT_EQ(a.addresses[4], app_a);
  auto frame = [&](uint64_t w) -> const symbols::Frame& {
    auto it = std::lower_bound(p.addresses.begin(), p.addresses.end(), w);
    return p.symbols.frames[static_cast<std::size_t>(it - p.addresses.begin())];
  };
  EXPECT_EQ(frame(ctor).kind, symbols::FrameKind::kJava);
  EXPECT_EQ(frame(ctor).function, "java.util.zip.Deflater.<init>");
  EXPECT_EQ(frame(ctor).source_file, "Deflater.java");
  EXPECT_EQ(frame(ctor).line, 201u);
  EXPECT_EQ(frame(stale).function, "[java: unknown method]");
  EXPECT_EQ(frame(stale).source_file, "");
}

// A frame in no function of its file stands for it by the file's name;
// the profile lists each such file once, with the live bytes of the sites
// that show it and why it gave no name: a file stripped to its exported
// functions (no debug file read), a file with no table at all, a file
// memtrimd could not read. Files whose frames were all named are not listed,
// nor frames below the site's name.
TEST(SiteProfileNames, FilesWithoutFunctionNamesAreListedWithTheirReason) {
  class Source : public InCodeSource {
   public:
    Source() {
      auto stripped = std::make_shared<ElfFunctions>(*agent::Functions({"inflateInit2_"}));
      stripped->source = ElfFunctions::Source::kDynsym;
      stripped->build_id = "ab12cd";
      files_[5] = stripped;
      auto bare = std::make_shared<ElfFunctions>();
      bare->loads.push_back({0, 0, 0x100000});
      files_[4] = bare;  // the loader stands in for a file with no table
      files_.erase(1);   // the program: not readable
    }
  };
  AgentSites raw;
  const uint64_t zlib_static = kZlib + 0x9010;  // in no exported function
  raw.stacks = {Stack(8 * kMiB, {zlib_static, In(kZlib, 0), In(kJvm, 3)}),
                Stack(4 * kMiB, {zlib_static, zlib_static, In(kJvm, 0)}),
                Stack(2 * kMiB, {kProg + 0x5010, In(kJvm, 0)}),
                Stack(1 * kMiB, {kLoader + 0x20, In(kJvm, 0)}),
                // Named by three functions before the unreadable program.
                Stack(kMiB / 2, {In(kJvm, 0), In(kJvm, 1), In(kJvm, 2), kProg + 0x10})};
  Source source;
  SiteProfile p = BuildFrom(raw, source);

  ASSERT_EQ(p.unnamed_files.size(), 3u);
  EXPECT_EQ(p.unnamed_files[0].path, "/usr/lib/x86_64-linux-gnu/libz.so.1.2.13");
  EXPECT_EQ(p.unnamed_files[0].live_bytes, 12 * kMiB);  // each stack once
  EXPECT_EQ(p.unnamed_files[0].why,
            "stripped: only the functions it exports have names; no debug file was read for "
            "its build id ab12cd");
  EXPECT_EQ(p.unnamed_files[1].path, "/app/prog");
  EXPECT_EQ(p.unnamed_files[1].live_bytes, 2 * kMiB);
  EXPECT_EQ(p.unnamed_files[1].why, "not read: no such file");
  EXPECT_EQ(p.unnamed_files[2].path, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2");
  EXPECT_EQ(p.unnamed_files[2].why, "it has no symbol table");
  ASSERT_NE(Find(p, "libz.so.1.2.13 < inflateInit2_ < Java_java_util_zip_Inflater_init"), nullptr);
  EXPECT_GT(p.MemoryBytes(), Build({}).MemoryBytes());
}

TEST(SiteProfileNames, AFullSymbolTableListsNoFile) {
  // A frame between functions of a file whose whole table was read: no
  // reason to give beyond the table itself.
  SiteProfile p = Build({Stack(kMiB, {kZlib + 0x9010, In(kJvm, 0)})});
  EXPECT_TRUE(p.unnamed_files.empty());
  EXPECT_EQ(symbols::FileNamesMissing(nullptr, ""), "not read: unknown error");
  ElfFunctions looked;
  looked.source = ElfFunctions::Source::kDynsym;
  looked.build_id = "ab12";
  looked.debug_file_missing = "taking the target's uid 1000 and gid 1000 needs CAP_SETUID";
  EXPECT_EQ(symbols::FileNamesMissing(&looked, ""),
            "stripped: only the functions it exports have names; its debug file (build id "
            "ab12): taking the target's uid 1000 and gid 1000 needs CAP_SETUID");
}

}  // namespace
}  // namespace memtrimd::agent

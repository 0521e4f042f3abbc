// Parsers of the JVM's answers (collectors/jvm/): NMT summary, VM.version,
// VM.flags, VM.system_properties, GC.heap_info, System.trim_native_heap,
// System.native_heap_info (malloc_info XML), hsperfdata, and the sources of
// JVM options (@argfiles, option variables, options and flags files), against
// the answers recorded from OpenJDK 17.0.15 and Temurin 25 in fixtures/jvm/ and
// against hand-made edge cases.
#include <gtest/gtest.h>

#include "tests/unit/fixtures.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "collectors/jvm/attach_protocol.h"
#include "collectors/jvm/hsperfdata.h"
#include "collectors/jvm/jvm_options.h"
#include "collectors/jvm/jvm_text.h"
#include "collectors/jvm/malloc_info.h"
#include "collectors/jvm/nmt_summary.h"

namespace memtrimd::jvm {
namespace {

constexpr uint64_t KiB = 1024;
constexpr uint64_t MiB = 1024 * KiB;
constexpr uint64_t GiB = 1024 * MiB;

const char* const kJdks[] = {"17", "25"};
const char* const kGcs[] = {"g1", "serial", "parallel", "shenandoah", "z"};

std::string ReadFixture(const std::string& rel) { return test::ReadFixture("jvm/" + rel); }

// expected.txt: "key=value" lines written by record.sh.
std::map<std::string, std::string> Expected(const std::string& jdk) {
  std::map<std::string, std::string> out;
  std::istringstream in(ReadFixture(jdk + "/expected.txt"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::size_t eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

uint64_t ExpectedU64(const std::string& jdk, const std::string& key) {
  auto e = Expected(jdk);
  EXPECT_TRUE(e.count(key)) << key;
  return std::strtoull(e[key].c_str(), nullptr, 0);
}

// --- NMT -----------------------------------------------------------------------------

// What the test reads itself from NMT text: category header lines
// "-<spaces>Name (reserved=N[KB], committed=M[KB])", values in the file's unit.
struct RefCategory {
  std::string name;
  uint64_t reserved = 0;
  uint64_t committed = 0;
};

std::vector<RefCategory> ReferenceCategories(const std::string& text) {
  std::vector<RefCategory> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '-') continue;
    std::size_t open = line.find(" (reserved=");
    if (open == std::string::npos) continue;
    RefCategory c;
    std::size_t b = line.find_first_not_of(" -");
    c.name = line.substr(b, open - b);
    c.reserved = std::strtoull(line.c_str() + open + 11, nullptr, 10);
    c.committed = std::strtoull(line.c_str() + line.find("committed=") + 10, nullptr, 10);
    out.push_back(c);
  }
  return out;
}

TEST(NmtSummaryTest, ScaleBCategoriesMatchReferenceAndAddUpToTotal) {
  for (const char* jdk : kJdks) {
    SCOPED_TRACE(jdk);
    std::string text = ReadFixture(std::string(jdk) + "/nmt_summary_scale_b.txt");
    auto r = ParseNmtSummary(text);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(r->enabled);
    std::vector<RefCategory> ref = ReferenceCategories(text);
    ASSERT_EQ(r->categories.size(), ref.size());
    EXPECT_EQ(r->categories.size(), ExpectedU64(jdk, "nmt_categories"));
    uint64_t reserved = 0, committed = 0, malloc_sum = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      EXPECT_EQ(r->categories[i].name, ref[i].name);  // printed order kept
      EXPECT_EQ(r->categories[i].reserved, ref[i].reserved) << ref[i].name;
      EXPECT_EQ(r->categories[i].committed, ref[i].committed) << ref[i].name;
      EXPECT_LE(r->categories[i].committed, r->categories[i].reserved) << ref[i].name;
      reserved += r->categories[i].reserved;
      committed += r->categories[i].committed;
      malloc_sum += r->categories[i].malloc_bytes.value_or(0);
    }
    // With scale=B the Total line is exactly the sum of the categories (true
    // on 17.0.15 and 25).
    EXPECT_EQ(r->total_reserved, reserved);
    EXPECT_EQ(r->total_committed, committed);
    // Total malloc is larger than the sum of the categories' malloc= (it
    // also counts the arenas and NMT's own overhead).
    ASSERT_TRUE(r->total_malloc_bytes.has_value());
    EXPECT_GE(*r->total_malloc_bytes, malloc_sum);
    ASSERT_TRUE(r->total_mmap_committed.has_value());
    EXPECT_LE(*r->total_mmap_committed, r->total_committed);
    EXPECT_EQ(r->categories.front().name, "Java Heap");
  }
}

TEST(NmtSummaryTest, JavaHeapReservedEqualsXmx) {
  for (const char* jdk : kJdks) {
    SCOPED_TRACE(jdk);
    uint64_t xmx = ExpectedU64(jdk, "xmx_bytes");
    for (const char* file : {"/nmt_summary_scale_b.txt", "/nmt_summary_kb.txt"}) {
      auto r = ParseNmtSummary(ReadFixture(std::string(jdk) + file));
      ASSERT_TRUE(r.ok()) << file;
      const NmtCategory* heap = r->Find("Java Heap");
      ASSERT_NE(heap, nullptr) << file;
      EXPECT_EQ(heap->reserved, xmx) << file;
      EXPECT_EQ(heap->mmap_reserved, xmx) << file;
      EXPECT_FALSE(heap->malloc_bytes.has_value()) << file;
    }
  }
}

TEST(NmtSummaryTest, FindOtherHoldsTheDirectBuffers) {
  for (const char* jdk : kJdks) {
    SCOPED_TRACE(jdk);
    auto r = ParseNmtSummary(ReadFixture(std::string(jdk) + "/nmt_summary_scale_b.txt"));
    ASSERT_TRUE(r.ok());
    const NmtCategory* other = r->Find("Other");
    ASSERT_NE(other, nullptr);
    // Idle keeps 4 direct buffers of 256 KiB plus 16 smaller ones.
    ASSERT_TRUE(other->malloc_bytes.has_value());
    EXPECT_GE(*other->malloc_bytes, 4 * 256 * KiB);
    EXPECT_EQ(*other->malloc_bytes, other->committed);
    ASSERT_TRUE(other->malloc_count.has_value());
    EXPECT_GE(*other->malloc_count, 4u);
    EXPECT_FALSE(other->mmap_committed.has_value());
    EXPECT_EQ(r->Find("other"), nullptr);  // names are exact
    EXPECT_EQ(r->Find("No Such Category"), nullptr);
    // A name with spaces.
    EXPECT_NE(r->Find("Native Memory Tracking"), nullptr);
  }
}

TEST(NmtSummaryTest, DetailLinesGoToTheRightFields) {
  for (const char* jdk : kJdks) {
    SCOPED_TRACE(jdk);
    auto r = ParseNmtSummary(ReadFixture(std::string(jdk) + "/nmt_summary_scale_b.txt"));
    ASSERT_TRUE(r.ok());
    // Class: the "(mmap: ...)" line, not the metaspace "(    reserved=...)"
    // detail lines below it (the class space reservation is 1 GiB).
    const NmtCategory* cls = r->Find("Class");
    ASSERT_NE(cls, nullptr);
    EXPECT_EQ(cls->mmap_reserved, GiB);
    ASSERT_TRUE(cls->malloc_bytes.has_value());
    EXPECT_EQ(cls->reserved, *cls->malloc_bytes + *cls->mmap_reserved);
    // Thread: malloc and arena, stacks are not "mmap:" (thread #/threads #).
    const NmtCategory* thread = r->Find("Thread");
    ASSERT_NE(thread, nullptr);
    EXPECT_TRUE(thread->malloc_bytes.has_value());
    EXPECT_TRUE(thread->arena_bytes.has_value());
    EXPECT_FALSE(thread->mmap_reserved.has_value());
    // Symbol: malloc + arena = committed.
    const NmtCategory* symbol = r->Find("Symbol");
    ASSERT_NE(symbol, nullptr);
    EXPECT_EQ(symbol->committed,
              symbol->malloc_bytes.value_or(0) + symbol->arena_bytes.value_or(0));
  }
  // 25 only: GCCardSet; "Shared class space (..., readonly=0)".
  auto r25 = ParseNmtSummary(ReadFixture("25/nmt_summary_scale_b.txt"));
  ASSERT_TRUE(r25.ok());
  EXPECT_NE(r25->Find("GCCardSet"), nullptr);
  const NmtCategory* cds = r25->Find("Shared class space");
  ASSERT_NE(cds, nullptr);
  EXPECT_TRUE(cds->mmap_committed.has_value());
  auto r17 = ParseNmtSummary(ReadFixture("17/nmt_summary_scale_b.txt"));
  ASSERT_TRUE(r17.ok());
  EXPECT_EQ(r17->Find("GCCardSet"), nullptr);
}

TEST(NmtSummaryTest, KbScaleIsConvertedToBytes) {
  for (const char* jdk : kJdks) {
    SCOPED_TRACE(jdk);
    std::string text = ReadFixture(std::string(jdk) + "/nmt_summary_kb.txt");
    auto r = ParseNmtSummary(text);
    ASSERT_TRUE(r.ok()) << r.status().message();
    std::vector<RefCategory> ref = ReferenceCategories(text);
    ASSERT_EQ(r->categories.size(), ref.size());
    uint64_t committed = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      EXPECT_EQ(r->categories[i].name, ref[i].name);
      EXPECT_EQ(r->categories[i].reserved, ref[i].reserved * KiB);
      EXPECT_EQ(r->categories[i].committed, ref[i].committed * KiB);
      committed += r->categories[i].committed;
    }
    EXPECT_EQ(r->total_committed % KiB, 0u);
    // Rounded per category, and categories under 1 KB are omitted: the total
    // is within a few KiB of the sum, not equal.
    EXPECT_GE(r->total_committed + 64 * KiB, committed);
    EXPECT_LE(r->total_committed, committed + 64 * KiB);
  }
}

TEST(NmtSummaryTest, NotEnabledIsOkAndDisabled) {
  for (const char* jdk : kJdks) {
    auto r = ParseNmtSummary(ReadFixture(std::string(jdk) + "/nmt_off.txt"));
    ASSERT_TRUE(r.ok()) << jdk;
    EXPECT_FALSE(r->enabled);
    EXPECT_TRUE(r->categories.empty());
  }
}

TEST(NmtSummaryTest, GarbageIsAParseError) {
  for (std::string bad :
       {std::string(), std::string("hello world\n"), std::string("Native Memory Tracking:\n\n"),
        ReadFixture("17/native_heap_info_error.txt"), ReadFixture("17/vm_flags.txt"),
        std::string("Native Memory Tracking:\nTotal: reserved=abc, committed=1\n"),
        std::string("Native Memory Tracking:\nTotal: reserved=1, committed=1\n"
                    "-  Java Heap (reserved=x, committed=1)\n"),
        std::string("\0\1\2\3", 4)}) {
    auto r = ParseNmtSummary(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kParseError) << bad;
  }
}

TEST(NmtSummaryTest, MbAndGbSuffixesAndBothLayouts) {
  // JDK 17 style (trailing spaces, lone " " separator, "thread #").
  const char* k17 =
      "\nNative Memory Tracking:\n\nTotal: reserved=2GB, committed=3MB\n"
      "       malloc: 1MB #10\n       mmap:   reserved=2GB, committed=2MB\n\n"
      "-                    Thread (reserved=1GB, committed=1MB)\n"
      "                            (thread #24)\n"
      "                            (stack: reserved=1GB, committed=1MB)\n"
      "                            (malloc=12KB #148) (peak=47KB #152) \n"
      "                            (arena=26KB #46) (peak=91KB #44)\n \n"
      "-                     Other (reserved=1GB, committed=2MB)\n"
      "                            (malloc=2MB #7) (at peak) \n \n";
  auto r = ParseNmtSummary(k17);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->total_reserved, 2 * GiB);
  EXPECT_EQ(r->total_committed, 3 * MiB);
  EXPECT_EQ(r->total_malloc_bytes, MiB);
  EXPECT_EQ(r->total_mmap_committed, 2 * MiB);
  ASSERT_EQ(r->categories.size(), 2u);
  EXPECT_EQ(r->categories[0].name, "Thread");
  EXPECT_EQ(r->categories[0].malloc_bytes, 12 * KiB);
  EXPECT_EQ(r->categories[0].malloc_count, 148u);
  EXPECT_EQ(r->categories[0].arena_bytes, 26 * KiB);
  EXPECT_EQ(r->categories[1].malloc_bytes, 2 * MiB);

  // JDK 25 style (tag=, peak=, "threads #").
  const char* k25 =
      "Native Memory Tracking:\nTotal: reserved=100, committed=60\n"
      "       malloc: 40 #7127, peak=41 #7129\n"
      "       mmap:   reserved=60, committed=20\n"
      "-      Java Heap (reserved=50, committed=10)\n"
      "                 (mmap: reserved=50, committed=10, at peak)\n"
      "-         Thread (reserved=50, committed=50)\n"
      "                 (threads #23)\n"
      "                 (stack: reserved=10, committed=10, peak=10)\n"
      "                 (malloc=40 tag=Thread #139) (peak=61504 #143)\n";
  auto r25 = ParseNmtSummary(k25);
  ASSERT_TRUE(r25.ok()) << r25.status().message();
  EXPECT_EQ(r25->total_malloc_bytes, 40u);
  ASSERT_NE(r25->Find("Java Heap"), nullptr);
  EXPECT_EQ(r25->Find("Java Heap")->mmap_committed, 10u);
  EXPECT_EQ(r25->Find("Thread")->malloc_bytes, 40u);
  EXPECT_EQ(r25->Find("Thread")->malloc_count, 139u);
}

// --- VM.version ----------------------------------------------------------------------

TEST(JvmVersionTest, RecordedVmVersion) {
  struct Case {
    const char* jdk;
    int feature, interim, update;
  } cases[] = {{"17", 17, 0, 15}, {"25", 25, 0, 3}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.jdk);
    auto v = ParseVmVersion(ReadFixture(std::string(c.jdk) + "/vm_version.txt"));
    ASSERT_TRUE(v.ok()) << v.status().message();
    EXPECT_EQ(v->vm_name, "OpenJDK 64-Bit Server VM");
    EXPECT_EQ(v->full, Expected(c.jdk)["vm_version"]);
    EXPECT_EQ(v->feature, c.feature);
    EXPECT_EQ(v->interim, c.interim);
    EXPECT_EQ(v->update, c.update);
  }
}

TEST(JvmVersionTest, VersionStrings) {
  struct Case {
    const char* s;
    int feature, interim, update;
  } cases[] = {
      {"17.0.15+6-Debian-1deb12u1", 17, 0, 15},
      {"25+36-LTS", 25, 0, 0},
      {"21.0.1+12", 21, 0, 1},
      {"1.8.0_392-b08", 8, 0, 392},
      {"25.0.3+9-LTS", 25, 0, 3},
      {"8.0_392", 8, 0, 392},
      {"11.0.2", 11, 0, 2},
      {"22-ea+5", 22, 0, 0},
      {"17.0.10.1+1", 17, 0, 10},
  };
  for (const Case& c : cases) {
    auto v = ParseVersionString(c.s);
    ASSERT_TRUE(v.ok()) << c.s;
    EXPECT_EQ(v->full, c.s);
    EXPECT_EQ(v->feature, c.feature) << c.s;
    EXPECT_EQ(v->interim, c.interim) << c.s;
    EXPECT_EQ(v->update, c.update) << c.s;
  }
  for (const char* bad : {"", "abc", "+36", "-ea", "99999999999999999999.0.0"}) {
    EXPECT_FALSE(ParseVersionString(bad).ok()) << bad;
  }
}

TEST(JvmVersionTest, Jdk8PrintsTheHotSpotVersionFirst) {
  // JDK 8's VM.version: HotSpot's own version, then the JDK version.
  auto v = ParseVmVersion("Java HotSpot(TM) 64-Bit Server VM version 25.392-b08\nJDK 8.0_392\n");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->vm_name, "Java HotSpot(TM) 64-Bit Server VM");
  EXPECT_EQ(v->full, "25.392-b08");
  EXPECT_EQ(v->feature, 8);
  EXPECT_EQ(v->update, 392);
  // The first " version" followed by a blank (space, tab or CR) ends the
  // name (fuzz regressions: a tab or CR there used to be skipped).
  auto tab = ParseVmVersion("Odd VM version\t17.0.1 version 9\n");
  ASSERT_TRUE(tab.ok());
  EXPECT_EQ(tab->vm_name, "Odd VM");
  EXPECT_EQ(tab->full, "17.0.1");
  auto cr = ParseVmVersion("Odd VM version\r version 17.0.1\nJDK 17.0.1\n");
  ASSERT_TRUE(cr.ok());
  EXPECT_EQ(cr->vm_name, "Odd VM");
  EXPECT_EQ(cr->full, "version");
  EXPECT_FALSE(ParseVmVersion("").ok());
  EXPECT_FALSE(ParseVmVersion(ReadFixture("17/native_heap_info_error.txt")).ok());
}

// --- VM.flags ------------------------------------------------------------------------

TEST(JvmFlagsTest, RecordedFlags) {
  for (const char* jdk : kJdks) {
    SCOPED_TRACE(jdk);
    std::string text = ReadFixture(std::string(jdk) + "/vm_flags.txt");
    auto f = ParseVmFlags(text);
    ASSERT_TRUE(f.ok()) << f.status().message();
    std::size_t tokens = 0;
    for (std::size_t at = text.find("-XX:"); at != std::string::npos;
         at = text.find("-XX:", at + 1))
      ++tokens;
    EXPECT_EQ(f->size(), tokens);
    EXPECT_EQ(f->at("MaxHeapSize"), std::to_string(ExpectedU64(jdk, "xmx_bytes")));
    EXPECT_EQ(f->at("NativeMemoryTracking"), "summary");
    EXPECT_EQ(f->at("UseG1GC"), "true");
    EXPECT_EQ(f->at("THPStackMitigation"), "false");
    // VM.flags lists only flags set on the command line or by ergonomics:
    // MaxDirectMemorySize is absent unless given.
    EXPECT_EQ(f->count("MaxDirectMemorySize"), 0u);
    EXPECT_EQ(f->count("TrimNativeHeapInterval"), 0u);

    auto d = ParseVmFlags(ReadFixture(std::string(jdk) + "/vm_flags_direct.txt"));
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->at("MaxDirectMemorySize"),
              std::to_string(ExpectedU64(jdk, "max_direct_memory_bytes")));
    EXPECT_EQ(d->count("NativeMemoryTracking"), 0u);  // off is the default
  }
}

TEST(JvmFlagsTest, SyntheticAndGarbage) {
  auto f = ParseVmFlags("-XX:+A -XX:-B\n-XX:C=1 -XX:D= junk -XX: -XX:+\r\n");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->at("A"), "true");
  EXPECT_EQ(f->at("B"), "false");
  EXPECT_EQ(f->at("C"), "1");
  EXPECT_EQ(f->at("D"), "");
  EXPECT_EQ(f->size(), 4u);
  // '\r' is a blank like space and tab (fuzz regressions): "-XX:+\r\r" and
  // "-XX:\r=false" name no flag, and "C=1\r\r" is C=1.
  EXPECT_FALSE(ParseVmFlags("-XX:+\r\r").ok());
  EXPECT_FALSE(ParseVmFlags("-XX:\r=false").ok());
  auto crlf = ParseVmFlags("-XX:C=1\r\r\n");
  ASSERT_TRUE(crlf.ok());
  EXPECT_EQ(crlf->at("C"), "1");
  EXPECT_FALSE(ParseVmFlags("").ok());
  EXPECT_FALSE(ParseVmFlags(ReadFixture("17/native_heap_info_error.txt")).ok());
}

// --- VM.system_properties -----------------------------------------------------------------

TEST(JvmPropertiesTest, RecordedProperties) {
  for (const char* jdk : kJdks) {
    SCOPED_TRACE(jdk);
    std::string text = ReadFixture(std::string(jdk) + "/vm_system_properties.txt");
    auto p = ParseSystemProperties(text);
    ASSERT_TRUE(p.ok());
    std::size_t lines = 0;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line[0] != '#') ++lines;
    }
    EXPECT_EQ(p->size(), lines);  // no continuation lines here; "#..." date skipped
    EXPECT_EQ(p->at("java.specification.version"), jdk);
    EXPECT_EQ(p->at("path.separator"), ":");
    EXPECT_EQ(p->at("line.separator"), "\n");
    EXPECT_EQ(p->at("java.vendor.url").substr(0, 8), "https://");
    EXPECT_EQ(p->at("sun.java.command"), "Idle --ready-file main.ready");
    EXPECT_EQ(p->at("java.vm.version"), Expected(jdk)["vm_version"]);
    EXPECT_EQ(p->count("jdk.nio.maxCachedBufferSize"), 0u);
  }
}

TEST(JvmPropertiesTest, EscapesAndMaxCachedBufferSize) {
  for (const char* jdk : kJdks) {
    SCOPED_TRACE(jdk);
    auto p = ParseSystemProperties(ReadFixture(std::string(jdk) + "/vm_system_properties_nio.txt"));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->at("jdk.nio.maxCachedBufferSize"), Expected(jdk)["max_cached_buffer_size"]);
    // Stored as "a\=b\:c \#not-a-comment \!bang \\back\ttab \u00E9\u20AC\uD83D\uDE00".
    EXPECT_EQ(p->at("memtrimd.fixture.escapes"),
              "a=b:c #not-a-comment !bang \\back\ttab \xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
    EXPECT_EQ(p->at("memtrimd.fixture.leading"), "  two spaces");  // "\  two spaces"
    EXPECT_EQ(p->at("memtrimd.fixture.key with:colon"), "x");      // key "...key\ with\:colon"
  }
}

TEST(JvmPropertiesTest, PropertiesFileSyntax) {
  auto p = ParseSystemProperties(
      "# comment\n"
      "  ! also a comment\n"
      "\n"
      "a=1\r\n"
      "b : 2\r"
      "c 3\n"
      "d\n"
      "long = first \\\n"
      "        second\\\n"
      "# not a comment\n"
      "e=\\u0041\\u00e9\\uZZZZ\\uD800x\\q\n"
      "f=tail\\");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->at("a"), "1");
  EXPECT_EQ(p->at("b"), "2");
  EXPECT_EQ(p->at("c"), "3");
  EXPECT_EQ(p->at("d"), "");
  EXPECT_EQ(p->at("long"), "first second# not a comment");
  EXPECT_EQ(p->at("e"), "A\xC3\xA9\\uZZZZ\xEF\xBF\xBDxq");  // bad \u kept, lone surrogate -> U+FFFD
  EXPECT_EQ(p->at("f"), "tail");
  EXPECT_EQ(p->size(), 7u);
  auto empty = ParseSystemProperties("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

// --- GC.heap_info ----------------------------------------------------------------------

TEST(GcHeapInfoTest, EveryRecordedCollector) {
  for (const char* jdk : kJdks) {
    uint64_t xmx = ExpectedU64(jdk, "xmx_bytes");
    for (const char* gc : kGcs) {
      SCOPED_TRACE(std::string(jdk) + " " + gc);
      auto h = ParseGcHeapInfo(ReadFixture(std::string(jdk) + "/gc_heap_info_" + gc + ".txt"));
      ASSERT_TRUE(h.ok()) << h.status().message();
      EXPECT_GT(h->used_bytes, 16 * MiB);  // Idle keeps 16 MiB reachable
      EXPECT_LE(h->used_bytes, h->committed_bytes);
      EXPECT_LE(h->committed_bytes, xmx);
      EXPECT_GT(h->committed_bytes, 0u);
      if (std::string(gc) == "z") {
        // ZGC prints used/capacity/max capacity only (in M), no range.
        EXPECT_FALSE(h->reserved_bytes.has_value());
        EXPECT_FALSE(h->start.has_value());
        EXPECT_EQ(h->committed_bytes % MiB, 0u);
        continue;
      }
      ASSERT_TRUE(h->reserved_bytes.has_value());
      EXPECT_EQ(*h->reserved_bytes, xmx);
      ASSERT_TRUE(h->start && h->end);
      EXPECT_EQ(*h->end - *h->start, xmx);
    }
  }
}

TEST(GcHeapInfoTest, G1RangeAndTotals) {
  for (const char* jdk : kJdks) {
    SCOPED_TRACE(jdk);
    std::string text = ReadFixture(std::string(jdk) + "/gc_heap_info_g1.txt");
    auto h = ParseGcHeapInfo(text);
    ASSERT_TRUE(h.ok());
    std::string range = Expected(jdk)["g1_heap_range"];
    std::size_t dash = range.find('-');
    ASSERT_NE(dash, std::string::npos);
    EXPECT_EQ(h->start, std::strtoull(range.substr(0, dash).c_str(), nullptr, 16));
    EXPECT_EQ(h->end, std::strtoull(range.substr(dash + 1).c_str(), nullptr, 16));
    // used: the number after "used " on the heap line, in K.
    std::size_t at = text.find(", used ");
    ASSERT_NE(at, std::string::npos);
    EXPECT_EQ(h->used_bytes, std::strtoull(text.c_str() + at + 7, nullptr, 10) * KiB);
    EXPECT_EQ(h->committed_bytes, ExpectedU64(jdk, "xmx_bytes"));
  }
}

TEST(GcHeapInfoTest, GenerationalCommittedCountsBothSurvivors) {
  // Serial/Parallel print the young generation's "total" without the
  // to-space; committed comes from the [low, high, boundary) addresses.
  auto h = ParseGcHeapInfo(
      "DefNew     total 19648K, used 3318K [0x00000000fc000000, 0x00000000fd550000, "
      "0x00000000fd550000)\n"
      " eden space 17472K,  10% used [0x00000000fc000000, 0x00000000fc1df550, "
      "0x00000000fd110000)\n"
      "Tenured    total 43712K, used 16526K [0x00000000fd550000, 0x00000000ff000000, "
      "0x0000000100000000)\n");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->committed_bytes, 0xfd550000u - 0xfc000000u + (0xff000000u - 0xfd550000u));
  EXPECT_EQ(h->used_bytes, (3318 + 16526) * KiB);
  EXPECT_EQ(h->reserved_bytes, 64 * MiB);
  EXPECT_EQ(h->start, 0xfc000000u);
  EXPECT_EQ(h->end, 0x100000000u);
}

TEST(GcHeapInfoTest, SyntheticLayoutsAndErrors) {
  auto g1 = ParseGcHeapInfo(
      "garbage-first heap   total reserved 2097152K, committed 1048576K, used 12345K "
      "[0x0000000080000000, 0x0000000100000000)\n");
  ASSERT_TRUE(g1.ok());
  EXPECT_EQ(g1->reserved_bytes, 2 * GiB);
  EXPECT_EQ(g1->committed_bytes, GiB);
  EXPECT_EQ(g1->used_bytes, 12345 * KiB);

  auto z = ParseGcHeapInfo(" ZHeap           used 36M, capacity 64M, max capacity 64M\n");
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(z->used_bytes, 36 * MiB);
  EXPECT_EQ(z->committed_bytes, 64 * MiB);

  for (const char* bad :
       {"", "garbage", " Metaspace       used 896K, committed 1088K, reserved 1114112K\n",
        "java.lang.IllegalArgumentException: Unknown diagnostic command\n",
        "garbage-first heap   total 65536K, used 35958K\n",  // no addresses
        "garbage-first heap   total 65536K, used 35958K [0x100, 0x10)\n",
        " ZHeap used lots, capacity 64M\n"}) {
    auto r = ParseGcHeapInfo(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kParseError) << bad;
  }
}

// --- System.trim_native_heap -------------------------------------------------------------

TEST(TrimOutputTest, RecordedTrims) {
  for (const char* jdk : kJdks) {
    SCOPED_TRACE(jdk);
    auto t = ParseTrimOutput(ReadFixture(std::string(jdk) + "/trim_native_heap.txt"));
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_EQ(t->outcome, TrimReport::Outcome::kTrimmed);
    ASSERT_TRUE(t->rss_swap_before && t->rss_swap_after && t->delta);
    EXPECT_GT(*t->rss_swap_before, 32 * MiB);
    int64_t diff =
        static_cast<int64_t>(*t->rss_swap_after) - static_cast<int64_t>(*t->rss_swap_before);
    EXPECT_LE(std::llabs(*t->delta - diff), static_cast<long long>(MiB));
  }
}

TEST(TrimOutputTest, DocumentedFormats) {
  using O = TrimReport::Outcome;
  auto plus = ParseTrimOutput(ReadFixture("documented/trim_current_plus_delta.txt"));
  ASSERT_TRUE(plus.ok());
  EXPECT_EQ(plus->outcome, O::kTrimmed);
  EXPECT_EQ(plus->rss_swap_before, 95 * MiB);
  EXPECT_EQ(plus->rss_swap_after, 95 * MiB);
  EXPECT_EQ(plus->delta, 8 * 1024);  // the printed delta, finer than before/after

  auto gk = ParseTrimOutput(ReadFixture("documented/trim_current_g_k_mix.txt"));
  ASSERT_TRUE(gk.ok());
  EXPECT_EQ(gk->rss_swap_before, 101 * GiB);
  EXPECT_EQ(gk->rss_swap_after, 101 * GiB);
  EXPECT_EQ(gk->delta, -51200 * 1024);

  auto nd = ParseTrimOutput(ReadFixture("documented/trim_current_no_details.txt"));
  ASSERT_TRUE(nd.ok());
  EXPECT_EQ(nd->outcome, O::kNoDetails);
  EXPECT_FALSE(nd->rss_swap_before.has_value());
  EXPECT_FALSE(nd->delta.has_value());

  auto mid = ParseTrimOutput(ReadFixture("documented/trim_20_to_21.0.0.txt"));
  ASSERT_TRUE(mid.ok());
  EXPECT_EQ(mid->outcome, O::kTrimmed);
  EXPECT_EQ(mid->rss_swap_before, 311 * MiB);
  EXPECT_EQ(mid->rss_swap_after, 304 * MiB);
  EXPECT_EQ(mid->delta, -7 * static_cast<int64_t>(MiB));

  auto mid_nd = ParseTrimOutput(ReadFixture("documented/trim_20_to_21.0.0_no_details.txt"));
  ASSERT_TRUE(mid_nd.ok());
  EXPECT_EQ(mid_nd->outcome, O::kNoDetails);

  auto old = ParseTrimOutput(ReadFixture("documented/trim_17.0.2_to_17.0.8.txt"));
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->outcome, O::kTrimmed);
  EXPECT_EQ(old->rss_swap_before, (318460 + 2048) * KiB);  // RSS + swap
  EXPECT_EQ(old->rss_swap_after, (311792 + 1024) * KiB);
  EXPECT_EQ(old->delta, -(6668 + 1024) * 1024);

  auto old_nd = ParseTrimOutput(ReadFixture("documented/trim_17.0.2_to_17.0.8_no_details.txt"));
  ASSERT_TRUE(old_nd.ok());
  EXPECT_EQ(old_nd->outcome, O::kNoDetails);

  auto musl = ParseTrimOutput(ReadFixture("documented/trim_musl.txt"));
  ASSERT_TRUE(musl.ok());
  EXPECT_EQ(musl->outcome, O::kNotAvailable);
}

TEST(TrimOutputTest, Garbage) {
  for (const char* bad : {"", "garbage\n", "Trim native heap: RSS+Swap: lots->less (-1K)\n",
                          "Trim native heap: something new\n", "Attempting trim...\n",
                          "java.lang.IllegalArgumentException: Unknown diagnostic command\n",
                          "Done. RSS+Swap reduction: 311M-304M\n"}) {
    auto r = ParseTrimOutput(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kParseError) << bad;
  }
}

TEST(TrimOutputTest, ParseJvmSize) {
  EXPECT_EQ(ParseJvmSize("123"), 123u);
  EXPECT_EQ(ParseJvmSize("512B"), 512u);
  EXPECT_EQ(ParseJvmSize("6420K"), 6420 * KiB);
  EXPECT_EQ(ParseJvmSize("6420k"), 6420 * KiB);
  EXPECT_EQ(ParseJvmSize("311M"), 311 * MiB);
  EXPECT_EQ(ParseJvmSize("2G"), 2 * GiB);
  EXPECT_EQ(ParseJvmSize("1KB"), KiB);
  EXPECT_EQ(ParseJvmSize(" 7M "), 7 * MiB);
  for (const char* bad :
       {"", "K", "B", "-1K", "12X", "1.5M", "18446744073709551615K", "99999999999999999999"}) {
    EXPECT_FALSE(ParseJvmSize(bad).has_value()) << bad;
  }
}

// --- System.native_heap_info (malloc_info) ----------------------------------------------------

TEST(MallocInfoTest, RecordedJdk25) {
  for (const char* file : {"25/native_heap_info.txt", "25/native_heap_info_after_trim.txt"}) {
    SCOPED_TRACE(file);
    auto m = ParseMallocInfo(ReadFixture(file));
    ASSERT_TRUE(m.ok()) << m.status().message();
    ASSERT_EQ(m->arenas.size(), ExpectedU64("25", "malloc_heaps"));
    uint64_t rest = 0, fast = 0, current = 0, max = 0, aspace = 0;
    for (std::size_t i = 0; i < m->arenas.size(); ++i) {
      const MallocArena& a = m->arenas[i];
      EXPECT_EQ(a.nr, static_cast<int>(i));
      EXPECT_EQ(a.subheaps.has_value(), i != 0);  // main arena has no subheaps
      EXPECT_GT(a.system_current, 0u);
      EXPECT_LE(a.rest_bytes, a.system_current);
      EXPECT_LE(a.bin_pages_bytes, a.rest_bytes);
      rest += a.rest_bytes;
      fast += a.fast_bytes;
      current += a.system_current;
      max += a.system_max;
      aspace += a.aspace_total;
    }
    // The summary block is the sum over arenas.
    EXPECT_EQ(m->total_rest_bytes, rest);
    EXPECT_EQ(m->total_fast_bytes, fast);
    EXPECT_EQ(m->system_current, current);
    EXPECT_EQ(m->system_max, max);
    EXPECT_EQ(m->aspace_total, aspace);
    EXPECT_GT(m->total_mmap_count, 0u);
    EXPECT_GT(m->total_mmap_bytes, 0u);
  }
  // Idle drops 48 direct buffers of 8-100 KiB before recording: page-sized
  // free chunks somewhere.
  auto before = ParseMallocInfo(ReadFixture("25/native_heap_info.txt"));
  ASSERT_TRUE(before.ok());
  uint64_t free_pages = 0;
  for (const MallocArena& a : before->arenas) free_pages += a.bin_pages_bytes;
  EXPECT_GT(free_pages, 64 * KiB);
}

TEST(MallocInfoTest, Jdk17HasNoNativeHeapInfo) {
  auto m = ParseMallocInfo(ReadFixture("17/native_heap_info_error.txt"));
  EXPECT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kParseError);
}

// Whole pages in free chunks: nothing from chunks under a page + 48 bytes,
// each larger chunk less a page and 32 bytes on average, and an entry that
// spans the limit less its smallest chunk.
TEST(MallocInfoTest, BinPagesBytes) {
  auto m = ParseMallocInfo(
      "<malloc version=\"1\">\n"
      "<heap nr=\"0\">\n<sizes>\n"
      "  <size from=\"33\" to=\"48\" total=\"384\" count=\"8\"/>\n"              // fast: 0
      "  <size from=\"3585\" to=\"4095\" total=\"7680\" count=\"2\"/>\n"         // below a page: 0
      "  <size from=\"4096\" to=\"4600\" total=\"8696\" count=\"2\"/>\n"         // 4600-4128
      "  <size from=\"52513\" to=\"52513\" total=\"52513\" count=\"1\"/>\n"      // 52513-4128
      "  <unsorted from=\"1009\" to=\"98353\" total=\"200000\" count=\"5\"/>\n"  // see below
      "</sizes>\n"
      "<total type=\"fast\" count=\"8\" size=\"384\"/>\n"
      "<total type=\"rest\" count=\"10\" size=\"300000\"/>\n"
      "<system type=\"current\" size=\"1000000\"/>\n<system type=\"max\" size=\"2000000\"/>\n"
      "<aspace type=\"total\" size=\"1000000\"/>\n<aspace type=\"mprotect\" size=\"1000000\"/>\n"
      "</heap>\n"
      "<heap nr='1'>\n<sizes>\n</sizes>\n"
      "<total size='5' count='1' type='rest'/>\n"  // glibc 2.43: no "fast" total
      "<aspace type='subheaps' size='2'/>\n"
      "</heap>\n"
      "<total type=\"fast\" count=\"8\" size=\"384\"/>\n"
      "<total type=\"rest\" count=\"11\" size=\"300005\"/>\n"
      "<total type=\"mmap\" count=\"3\" size=\"3145728\"/>\n"
      "<system type=\"current\" size=\"1000000\"/>\n<system type=\"max\" size=\"2000000\"/>\n"
      "<aspace type=\"total\" size=\"1000000\"/>\n<aspace type=\"mprotect\" size=\"1000000\"/>\n"
      "</malloc>\n");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->arenas.size(), 2u);
  EXPECT_EQ(m->arenas[0].bin_pages_bytes, 472u + 48385u + (200000u - 1009u - 4 * 4128u));
  EXPECT_EQ(m->arenas[0].fast_bytes, 384u);
  EXPECT_EQ(m->arenas[0].rest_bytes, 300000u);
  EXPECT_EQ(m->arenas[0].system_max, 2000000u);
  EXPECT_FALSE(m->arenas[0].subheaps.has_value());
  EXPECT_EQ(m->arenas[1].nr, 1);
  EXPECT_EQ(m->arenas[1].fast_bytes, 0u);
  EXPECT_EQ(m->arenas[1].rest_bytes, 5u);
  EXPECT_EQ(m->arenas[1].subheaps, 2u);
  EXPECT_EQ(m->total_mmap_count, 3u);
  EXPECT_EQ(m->total_mmap_bytes, 3 * MiB);
  EXPECT_EQ(m->total_rest_bytes, 300005u);
}

TEST(MallocInfoTest, Errors) {
  std::string full = ReadFixture("25/native_heap_info.txt");
  for (std::string bad : {std::string(), std::string("<heap nr=\"0\"></heap>"),
                          std::string("garbage"), full.substr(0, full.size() / 2),
                          std::string("<malloc version=\"1\"><heap nr=\"x\"></heap></malloc>"),
                          std::string("<malloc version=\"1\"><heap nr=\"0\"><size from=\"1\"/>"
                                      "</heap></malloc>"),
                          std::string("<malloc version=\"1\"><total type=\"rest\"/></malloc>")}) {
    auto m = ParseMallocInfo(bad);
    EXPECT_FALSE(m.ok()) << bad.substr(0, 80);
    EXPECT_EQ(m.status().code(), ErrorCode::kParseError);
  }
  auto empty = ParseMallocInfo("<malloc version=\"1\">\n</malloc>\n");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->arenas.empty());
}

// --- hsperfdata ----------------------------------------------------------------------

TEST(PerfDataTest, RecordedFilesParse) {
  for (const char* jdk : kJdks) {
    for (const char* gc : kGcs) {
      SCOPED_TRACE(std::string(jdk) + " " + gc);
      std::string bytes = ReadFixture(std::string(jdk) + "/hsperfdata_" + gc + ".bin");
      EXPECT_EQ(bytes.size(), 32 * KiB);
      auto p = ParsePerfData(bytes);
      ASSERT_TRUE(p.ok()) << p.status().message();
      EXPECT_EQ(p->major, 2);
      EXPECT_EQ(p->minor, 0);
      EXPECT_TRUE(p->accessible);
      // Only the counters memtrimd reads are kept (20 to 67 of 133 to 214).
      EXPECT_GE(p->entries.size(), 20u);
      EXPECT_LE(p->entries.size(), 70u);
      auto begin = p->Long("sun.rt.createVmBeginTime");
      ASSERT_TRUE(begin.has_value());
      EXPECT_GT(*begin, 1'500'000'000'000);  // ms since the epoch
      EXPECT_EQ(p->String("sun.rt.jvmCapabilities").value_or("").size(), 64u);
      EXPECT_TRUE(p->String("sun.gc.lastCause").has_value());
      EXPECT_FALSE(p->Long("sun.gc.lastCause").has_value());  // a string, not a long
      EXPECT_EQ(p->entries.count("sun.rt.javaCommand"), 0u);  // in the file, not read
      EXPECT_EQ(p->entries.count("java.property.java.version"), 0u);
      EXPECT_FALSE(p->Long("no.such.counter").has_value());
    }
  }
}

TEST(PerfDataTest, HeapAgreesWithGcHeapInfo) {
  // Recorded right after GC.heap_info of the same JVM. committed agrees
  // (G1 on 17 pads each space counter by 8 bytes); used is a GC-time or
  // sampled figure and lags the live value by what was allocated since.
  for (const char* jdk : kJdks) {
    uint64_t xmx = ExpectedU64(jdk, "xmx_bytes");
    for (const char* gc : kGcs) {
      SCOPED_TRACE(std::string(jdk) + " " + gc);
      auto p = ParsePerfData(ReadFixture(std::string(jdk) + "/hsperfdata_" + gc + ".bin"));
      ASSERT_TRUE(p.ok());
      auto heap = HeapFromPerfData(*p);
      ASSERT_TRUE(heap.has_value());
      auto info = ParseGcHeapInfo(ReadFixture(std::string(jdk) + "/gc_heap_info_" + gc + ".txt"));
      ASSERT_TRUE(info.ok());
      EXPECT_GE(heap->committed_bytes, info->committed_bytes);
      EXPECT_LE(heap->committed_bytes, info->committed_bytes + 64);
      EXPECT_GE(heap->max_bytes, xmx);
      EXPECT_LE(heap->max_bytes, xmx + 64);
      EXPECT_LE(heap->used_bytes, heap->committed_bytes);
      int64_t used_diff =
          static_cast<int64_t>(heap->used_bytes) - static_cast<int64_t>(info->used_bytes);
      EXPECT_LE(std::llabs(used_diff), static_cast<long long>(8 * MiB)) << used_diff;
    }
  }
}

TEST(PerfDataTest, HeapAbsentWithoutGenerationCounters) {
  PerfData empty;
  EXPECT_FALSE(HeapFromPerfData(empty).has_value());
  PerfData some;
  some.entries["sun.gc.generation.0.capacity"] = int64_t{100};
  some.entries["sun.gc.generation.0.maxCapacity"] = int64_t{200};
  some.entries["sun.gc.generation.0.space.0.used"] = int64_t{10};
  some.entries["sun.gc.generation.0.space.1.used"] = int64_t{-5};  // torn: ignored
  some.entries["sun.gc.generation.1.capacity"] = int64_t{300};
  some.entries["sun.gc.generation.1.maxCapacity"] = int64_t{400};
  some.entries["sun.gc.generation.1.space.0.used"] = int64_t{20};
  some.entries["sun.gc.generation.1.space.0.capacity"] = int64_t{999};  // not a generation total
  some.entries["sun.gc.generation.x.capacity"] = int64_t{999};
  some.entries["sun.gc.generation.0.name"] = std::string("new");
  auto h = HeapFromPerfData(some);
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->committed_bytes, 400u);
  EXPECT_EQ(h->used_bytes, 30u);
  EXPECT_EQ(h->max_bytes, 600u);  // Serial/Parallel: generations split the heap
  some.entries["sun.gc.generation.0.name"] = std::string("young");
  EXPECT_EQ(HeapFromPerfData(some)->max_bytes, 400u);  // G1/ZGC: each may take it all
}

// Builds a small valid hsperfdata image: one long and one string entry.
std::string MakePerf() {
  std::string b(32, '\0');
  auto put32 = [&b](std::size_t at, int32_t v) {
    for (int i = 0; i < 4; ++i)
      b[at + i] = static_cast<char>((static_cast<uint32_t>(v) >> (8 * i)) & 0xff);
  };
  auto put64 = [&b](std::size_t at, int64_t v) {
    for (int i = 0; i < 8; ++i)
      b[at + i] = static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
  };
  b[0] = '\xCA';
  b[1] = '\xFE';
  b[2] = '\xC0';
  b[3] = '\xC0';
  b[4] = 1;  // little-endian
  b[5] = 2;
  b[6] = 0;
  b[7] = 1;
  // Entry 1 at 32: header 20, name "a.long\0" at 20 (7 bytes, pad to 32), data at 32.
  std::size_t e1 = b.size();
  b.resize(e1 + 40, '\0');
  put32(e1 + 0, 40);
  put32(e1 + 4, 20);
  put32(e1 + 8, 0);
  b[e1 + 12] = 'J';
  b[e1 + 14] = 1;
  put32(e1 + 16, 32);
  std::memcpy(&b[e1 + 20], "a.long", 6);
  put64(e1 + 32, 0x0102030405060708);
  // Entry 2 at 72: name "b.str\0" at 20, 8 data bytes at 28.
  std::size_t e2 = b.size();
  b.resize(e2 + 36, '\0');
  put32(e2 + 0, 36);
  put32(e2 + 4, 20);
  put32(e2 + 8, 8);
  b[e2 + 12] = 'B';
  b[e2 + 14] = 5;
  put32(e2 + 16, 28);
  std::memcpy(&b[e2 + 20], "b.str", 5);
  std::memcpy(&b[e2 + 28], "hi", 2);
  put32(8, static_cast<int32_t>(b.size()));  // used
  put32(24, 32);                             // entry_offset
  put32(28, 2);                              // num_entries
  return b;
}

void Put32(std::string& b, std::size_t at, int32_t v) {
  for (int i = 0; i < 4; ++i)
    b[at + i] = static_cast<char>((static_cast<uint32_t>(v) >> (8 * i)) & 0xff);
}

TEST(PerfDataTest, SyntheticImage) {
  // Checked whole, kept only by name: memtrimd reads neither of these two
  // (perf_data_bounds_test reads values of the names it keeps).
  auto p = ParsePerfData(MakePerf());
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE(p->entries.empty());
}

TEST(PerfDataTest, RobustAgainstBadInput) {
  const std::string good = MakePerf();
  const std::string real = ReadFixture("25/hsperfdata_g1.bin");
  auto expect_error = [](const std::string& bytes, const char* what) {
    auto r = ParsePerfData(bytes);
    EXPECT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.status().code(), ErrorCode::kParseError) << what;
  };
  expect_error("", "empty");
  expect_error(good.substr(0, 31), "shorter than the prologue");
  expect_error(real.substr(0, 1000), "truncated real file");
  expect_error(good.substr(0, good.size() - 1), "truncated synthetic file");
  {
    std::string b = good;
    b[0] = '\xC0';
    expect_error(b, "wrong magic");
  }
  {
    std::string b = real;
    b[4] = 0;
    expect_error(b, "big-endian flag");
  }
  {
    std::string b = good;
    Put32(b, 24, 0x7fffffff);
    expect_error(b, "entry_offset far outside");
  }
  {
    std::string b = good;
    Put32(b, 24, -8);
    expect_error(b, "negative entry_offset");
  }
  {
    std::string b = good;
    Put32(b, 24, 4);
    expect_error(b, "entry_offset inside the prologue");
  }
  {
    std::string b = real;
    Put32(b, 28, 0x7fffffff);
    expect_error(b, "num_entries huge");
  }
  {
    std::string b = good;
    Put32(b, 28, 3);
    expect_error(b, "num_entries one too many");
  }
  {
    std::string b = good;
    Put32(b, 32, 0);
    expect_error(b, "entry_length 0 (would loop forever)");
  }
  {
    std::string b = good;
    Put32(b, 32, 0x7ffffff0);
    expect_error(b, "entry_length past the end");
  }
  {
    std::string b = good;
    Put32(b, 36, 40);
    expect_error(b, "name_offset at the end of the entry");
  }
  {
    std::string b = good;
    Put32(b, 36, -1);
    expect_error(b, "negative name_offset");
  }
  {
    std::string b = good;
    Put32(b, 48, 36);
    expect_error(b, "long value crossing the entry end");
  }
  {
    std::string b = good;
    Put32(b, 72 + 8, 1000);
    expect_error(b, "vector_length past the entry");
  }
  {
    std::string b = good;
    Put32(b, 72 + 8, -1);
    b[72 + 12] = 'B';
    expect_error(b, "negative vector_length");
  }
  {
    std::string b = good;
    std::memset(&b[72 + 20], 'x', 16);  // name runs to the end of the entry
    expect_error(b, "name without NUL");
  }
  {
    std::string b = good;
    Put32(b, 8, 8);
    expect_error(b, "used smaller than the prologue");
  }
  {
    std::string b = good;
    Put32(b, 8, 0x7fffffff);
    expect_error(b, "used larger than the file");
  }
  // Every truncation and a byte flip at every position of the first 512
  // bytes of a real file: an error or a value, never a crash.
  for (std::size_t n = 0; n < real.size(); n += 97) (void)ParsePerfData(real.substr(0, n));
  for (std::size_t i = 0; i < 512; ++i) {
    std::string b = real;
    b[i] = static_cast<char>(b[i] ^ 0xA5);
    (void)ParsePerfData(b);
    b[i] = '\xff';
    (void)ParsePerfData(b);
  }
}

// --- attach verdict in hsperfdata, and where the JVM maps that file ------------------

TEST(PerfDataTest, AttachVerdictOfRecordedJvms) {
  for (const char* jdk : kJdks) {
    SCOPED_TRACE(jdk);
    // The GC fixtures' JVMs were attached to by jcmd; the options fixture's
    // JVM had attach disabled by an @argfile (options/record.sh).
    auto on = ParsePerfData(ReadFixture(std::string(jdk) + "/hsperfdata_g1.bin"));
    ASSERT_TRUE(on.ok()) << on.status().message();
    EXPECT_EQ(AttachSupportedFromPerfData(*on), true);
    const std::string off_bytes =
        ReadFixture("options/hsperfdata_attach_disabled_" + std::string(jdk) + ".bin");
    auto off = ParsePerfData(off_bytes);
    ASSERT_TRUE(off.ok()) << off.status().message();
    EXPECT_EQ(AttachSupportedFromPerfData(*off), false);
    // java.rt.vmArgs, which memtrimd does not keep, shows how it was set.
    EXPECT_NE(off_bytes.find("-XX:+DisableAttachMechanism"), std::string::npos);
  }
  PerfData none;
  EXPECT_FALSE(AttachSupportedFromPerfData(none).has_value());
  none.entries["sun.rt.jvmCapabilities"] = std::string("x1");
  EXPECT_FALSE(AttachSupportedFromPerfData(none).has_value());
  none.entries["sun.rt.jvmCapabilities"] = int64_t{1};
  EXPECT_FALSE(AttachSupportedFromPerfData(none).has_value());
}

TEST(PerfDataTest, MappingFromMapsLines) {
  // A line of a JDK 17 JVM's /proc/<pid>/maps (pid 22484).
  auto m = PerfDataMappingFromMapsLine(
      "7f30036f8000-7f3003700000 rw-s 00000000 fe:00 10960916                   "
      "/tmp/hsperfdata_root/22484",
      22484);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->path, "/tmp/hsperfdata_root/22484");
  EXPECT_EQ(m->dev_major, 0xfeu);
  EXPECT_EQ(m->dev_minor, 0u);
  EXPECT_EQ(m->inode, 10960916u);
  // Another pid, a private mapping, a removed file, another directory: no.
  const std::string line = "7f30036f8000-7f3003700000 rw-s 00000000 fe:00 10960916 ";
  EXPECT_FALSE(PerfDataMappingFromMapsLine(line + "/tmp/hsperfdata_root/22484", 2248));
  EXPECT_FALSE(PerfDataMappingFromMapsLine(
      "7f30036f8000-7f3003700000 rw-p 00000000 fe:00 10960916 /tmp/hsperfdata_root/22484", 22484));
  EXPECT_FALSE(PerfDataMappingFromMapsLine(line + "/tmp/hsperfdata_root/22484 (deleted)", 22484));
  EXPECT_FALSE(PerfDataMappingFromMapsLine(line + "/tmp/other/22484", 22484));
  EXPECT_FALSE(PerfDataMappingFromMapsLine("garbage", 1));
  EXPECT_FALSE(PerfDataMappingFromMapsLine("", 1));
  // A user name with a space still ends in /hsperfdata_<user>/<pid>.
  auto spaced = PerfDataMappingFromMapsLine(line + "/tmp/hsperfdata_a b/7", 7);
  ASSERT_TRUE(spaced.has_value());
  EXPECT_EQ(spaced->path, "/tmp/hsperfdata_a b/7");
}

// --- sources of JVM options ---------------------------------------------------------

using Tokens = std::vector<std::string>;

TEST(JvmOptionsTest, ArgFileFollowsTheLaunchersRules) {
  // The launcher's own test cases (libjli args.c), as the launcher splits them.
  EXPECT_EQ(SplitArgFile("-version -cp \"c:\\\\java libs\\\\one.jar\" \n"),
            (Tokens{"-version", "-cp", "c:\\java libs\\one.jar"}));
  EXPECT_EQ(SplitArgFile("com.foo.Panda \"Furious 5\"\fand\t'Shi Fu' \"escape\tprison"),
            (Tokens{"com.foo.Panda", "Furious 5", "and", "Shi Fu", "escape\tprison"}));
  EXPECT_EQ(SplitArgFile("line one #comment\n'line #2' #rest are comment\r\n#comment on line "
                         "3\nline 4 #comment to eof"),
            (Tokens{"line", "one", "line #2", "line", "4"}));
  EXPECT_EQ(
      SplitArgFile("This is an \"open quote \n    across line\n\t, note for WS."),
      (Tokens{"This", "is", "an", "open quote ", "across", "line", ",", "note", "for", "WS."}));
  EXPECT_EQ(SplitArgFile("\"Open quote to \n  new \"line \\\n\r   third\\\n\r\\\tand\ffourth\""),
            (Tokens{"Open quote to ", "new", "line third\tand\ffourth"}));
  EXPECT_EQ(SplitArgFile("c:\\\"partial quote\"\\lib"), (Tokens{"c:\\partial quote\\lib"}));
  EXPECT_EQ(SplitArgFile(""), Tokens{});
  EXPECT_EQ(SplitArgFile("\"\" x"), (Tokens{"", "x"}));
}

TEST(JvmOptionsTest, VmOptionsAndLauncherVariablesQuoteWithoutEscapes) {
  EXPECT_EQ(*SplitVmOptions("  -Dtool='a b' \"-XX:+DisableAttachMechanism\"\t-Xmx1g "),
            (Tokens{"-Dtool=a b", "-XX:+DisableAttachMechanism", "-Xmx1g"}));
  EXPECT_EQ(*SplitVmOptions("-Da=\"x'y\"z\\w"), (Tokens{"-Da=x'yz\\w"}));
  EXPECT_EQ(*SplitVmOptions("\v\f"), Tokens{});
  EXPECT_EQ(SplitVmOptions("-Da='b").status().code(), ErrorCode::kParseError);
  EXPECT_EQ(*SplitLauncherEnvOptions("@jdk.args -Dx=\"1 2\""), (Tokens{"@jdk.args", "-Dx=1 2"}));
  EXPECT_FALSE(SplitLauncherEnvOptions("\"").ok());
}

TEST(JvmOptionsTest, FlagsFileFollowsHotspot) {
  EXPECT_EQ(SplitFlagsFile(ReadFixture("options/hotspot.flags")),
            (Tokens{"+DisableAttachMechanism", "-UseCompressedClassPointers"}));
  EXPECT_EQ(SplitFlagsFile("  +A #a comment\n#x\n'B=1 2'\n\"C=3"),
            (Tokens{"+A", "'B=1", "2", "\"C=3"}));
  EXPECT_EQ(SplitFlagsFile("X='a b' Y"), (Tokens{"X=a b", "Y"}));
  // HotSpot stops reading at a 1023-byte token.
  Tokens long_token = SplitFlagsFile(std::string(2000, 'a') + " +B");
  ASSERT_EQ(long_token.size(), 1u);
  EXPECT_EQ(long_token[0].size(), 1023u);
}

// recorded.txt (options/record.sh): "[<jdk> <case>]" then key=value lines.
std::map<std::string, std::map<std::string, std::string>> Recorded() {
  std::map<std::string, std::map<std::string, std::string>> out;
  std::istringstream in(ReadFixture("options/recorded.txt"));
  std::string line, section;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] == '[') {
      section = line.substr(1, line.size() - 2);
    } else if (std::size_t eq = line.find('='); eq != std::string::npos) {
      out[section][line.substr(0, eq)] = line.substr(eq + 1);
    }
  }
  return out;
}

OptionFileReader FixtureFiles() {
  return [](const std::string& path) -> Result<std::string> {
    if (path.find('/') != std::string::npos) return Status(ErrorCode::kNotFound, path);
    return ReadFixture("options/" + path);
  };
}

// The resolved -X, -D and -XX: options joined as the JVM joins java.rt.vmArgs
// (launcher options such as -cp are not JVM arguments).
std::string VmArgs(const std::vector<JvmOption>& options) {
  std::string out;
  for (const JvmOption& o : options) {
    if (o.origin.rfind("-XX:Flags=", 0) == 0) continue;  // those are java.rt.vmFlags
    if (o.text.rfind("-X", 0) != 0 && o.text.rfind("-D", 0) != 0) continue;
    if (!out.empty()) out += ' ';
    out += o.text;
  }
  return out;
}

TEST(JvmOptionsTest, ResolvesEverySourceAsRealJvmsDid) {
  auto recorded = Recorded();
  ASSERT_EQ(recorded.size(), 6u);
  for (const char* jdk : kJdks) {
    SCOPED_TRACE(jdk);
    const std::string j = jdk;
    OptionSources argfile;
    argfile.argv = {"java", "@jvm.args", "-cp", "classes", "Idle", "--ready-file", "r"};
    auto a = ResolveJvmOptions(argfile, FixtureFiles());
    ASSERT_TRUE(a.ok()) << a.status().message();
    EXPECT_EQ(VmArgs(*a), recorded[j + " argfile"]["java.rt.vmArgs"]);
    std::string where;
    SignalFacts f;
    f.is_hotspot = true;
    f.options_known = true;
    f.sig_caught = ~0ull;
    f.options = *a;
    EXPECT_EQ(DecideSignal(f, &where), SignalVerdict::kAttachDisabled);
    EXPECT_EQ(recorded[j + " argfile"]["sun.rt.jvmCapabilities"], "0");
    EXPECT_EQ(where, "@jvm.args");

    OptionSources vars;
    vars.argv = {"java", "-Dcmd=1", "-cp", "classes", "Idle", "--ready-file", "r"};
    vars.java_tool_options = "-Dtool='a b' \"-XX:+DisableAttachMechanism\"";
    vars.jdk_java_options = "@jdk.args -Dx=\"1 2\"";
    vars.underscore_java_options = "-XX:VMOptionsFile=vm.options";
    auto v = ResolveJvmOptions(vars, FixtureFiles());
    ASSERT_TRUE(v.ok()) << v.status().message();
    EXPECT_EQ(VmArgs(*v), recorded[j + " variables"]["java.rt.vmArgs"]);
    f.options = *v;
    EXPECT_EQ(DecideSignal(f, &where), SignalVerdict::kAttachDisabled);
    EXPECT_EQ(where, "-XX:VMOptionsFile=vm.options");

    OptionSources flags;
    flags.argv = {"java", "-XX:Flags=hotspot.flags", "-Xmx64m", "-cp", "classes", "Idle"};
    auto fl = ResolveJvmOptions(flags, FixtureFiles());
    ASSERT_TRUE(fl.ok()) << fl.status().message();
    EXPECT_EQ(VmArgs(*fl), recorded[j + " flags"]["java.rt.vmArgs"]);
    std::string vm_flags;
    for (const JvmOption& o : *fl) {
      if (o.origin != "-XX:Flags=hotspot.flags") continue;
      vm_flags += (vm_flags.empty() ? "" : " ") + o.text.substr(4);
    }
    EXPECT_EQ(vm_flags, recorded[j + " flags"]["java.rt.vmFlags"]);
    f.options = *fl;
    EXPECT_EQ(DecideSignal(f, &where), SignalVerdict::kAttachDisabled);
  }
}

TEST(JvmOptionsTest, FlagsFilesComeFirstAndLaterSourcesWin) {
  auto files = [](const std::string& path) -> Result<std::string> {
    if (path == "f") return std::string("+DisableAttachMechanism\n");
    if (path == "v") return std::string("-XX:+DisableAttachMechanism");
    if (path == "nested") return std::string("-XX:VMOptionsFile=v");
    return Status(ErrorCode::kNotFound, "no " + path);
  };
  auto disabled = [&](const OptionSources& s) {
    auto r = ResolveJvmOptions(s, files);
    EXPECT_TRUE(r.ok()) << r.status().message();
    SignalFacts f;
    f.is_hotspot = true;
    f.options_known = true;
    f.sig_caught = ~0ull;
    f.options = r.ok() ? *r : std::vector<JvmOption>{};
    return DecideSignal(f) == SignalVerdict::kAttachDisabled;
  };
  OptionSources s;
  // Measured on 17 and 25: a flags file loses to the command line wherever
  // -XX:Flags= stands; an options file counts where it stands.
  s.argv = {"java", "-XX:-DisableAttachMechanism", "-XX:Flags=f", "Main"};
  EXPECT_FALSE(disabled(s));
  s.argv = {"java", "-XX:-DisableAttachMechanism", "-XX:VMOptionsFile=v", "Main"};
  EXPECT_TRUE(disabled(s));
  s.argv = {"java", "-XX:VMOptionsFile=v", "-XX:-DisableAttachMechanism", "Main"};
  EXPECT_FALSE(disabled(s));
  s.argv = {"java", "-XX:+DisableAttachMechanism", "Main"};
  s.underscore_java_options = "-XX:-DisableAttachMechanism";
  EXPECT_FALSE(disabled(s));
  s = {};
  s.java_tool_options = "-XX:+DisableAttachMechanism";
  s.jdk_java_options = "-XX:-DisableAttachMechanism";
  s.argv = {"java", "Main"};
  EXPECT_FALSE(disabled(s));
  // After the main class, only what disables counts ("@f" is not read).
  s = {};
  s.argv = {"java",    "-XX:+DisableAttachMechanism", "-jar",
            "app.jar", "-XX:-DisableAttachMechanism", "@missing"};
  EXPECT_TRUE(disabled(s));
  s.argv = {"java", "-cp", "lib", "Main", "-Xrs"};
  auto r = ResolveJvmOptions(s, files);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->back().origin, "application arguments");
  // "@@x" is the literal argument "@x"; after --disable-@files nothing is read.
  s.argv = {"java", "@@missing", "--disable-@files", "@missing", "Main"};
  EXPECT_TRUE(ResolveJvmOptions(s, files).ok());
}

TEST(JvmOptionsTest, UnknownWhenAFileCannotBeReadOrALimitIsHit) {
  auto files = [](const std::string& path) -> Result<std::string> {
    if (path == "nested") return std::string("-XX:VMOptionsFile=nested");
    if (path == "self") return std::string("@self");
    if (path == "opts") return std::string("-Dx");
    return Status(ErrorCode::kNotFound, "no " + path);
  };
  OptionSources s;
  s.argv = {"java", "@gone", "Main"};
  EXPECT_EQ(ResolveJvmOptions(s, files).status().code(), ErrorCode::kNotFound);
  s.argv = {"java", "-XX:VMOptionsFile=nested", "Main"};
  EXPECT_EQ(ResolveJvmOptions(s, files).status().code(), ErrorCode::kParseError);
  s.argv = {"java", "-XX:Flags=gone", "Main"};
  EXPECT_FALSE(ResolveJvmOptions(s, files).ok());
  // An argfile's "@self" is not read again (it is taken for the main class).
  s.argv = {"java", "@self", "-Dx", "Main"};
  auto self = ResolveJvmOptions(s, files);
  ASSERT_TRUE(self.ok());
  EXPECT_EQ(self->size(), 1u);
  s.argv = {"java", "Main"};
  s.java_tool_options = "'unmatched";
  EXPECT_EQ(ResolveJvmOptions(s, files).status().code(), ErrorCode::kParseError);
  s.java_tool_options.reset();
  OptionLimits limits;
  limits.max_files = 2;
  s.argv = {"java", "@opts", "@opts", "@opts", "Main"};
  EXPECT_EQ(ResolveJvmOptions(s, files, limits).status().code(), ErrorCode::kTooLarge);
  limits = {};
  limits.max_options = 3;
  s.argv = {"java", "-Da", "-Db", "-Dc", "-Dd", "Main"};
  EXPECT_EQ(ResolveJvmOptions(s, files, limits).status().code(), ErrorCode::kTooLarge);
}

}  // namespace
}  // namespace memtrimd::jvm

#include "daemon/report/inspect.h"

#include <gtest/gtest.h>

#include "daemon/report/report_page.h"
#include "daemon/report/section_trims.h"

namespace memtrimd {
namespace {

TargetSnapshot Sample() {
  TargetSnapshot ts;
  ts.target.pid = 77;
  ts.target.comm = "fragmenter";
  ts.target.runtime = Runtime::kGlibc;
  ts.start_time_seconds = 1700000000;
  procfs::ProcStatus p;
  p.rss_anon = 600ull << 20;
  p.rss_file = 2ull << 20;
  p.threads = 17;
  ts.sample.process = p;
  GlibcHeaps g;
  for (int i = 0; i < 15; ++i) {
    g.heaps.push_back(
        {(uint64_t(i) + 1) << 26, 34ull << 20, 34ull << 20, glibc::HeapCheck::kConfirmed});
  }
  g.confirmed = 15;
  g.usable_bytes = g.resident_bytes = 15 * (34ull << 20);
  g.main_arena_resident_bytes = 35ull << 20;
  g.mappings = 120;
  g.breakdown.file_and_shared = 2ull << 20;
  g.breakdown.arena_heaps = g.resident_bytes;
  g.breakdown.main_arena = 35ull << 20;
  g.breakdown.other_anonymous = (600ull << 20) - g.resident_bytes - (35ull << 20);
  g.breakdown.total = 602ull << 20;
  ts.sample.glibc = g;
  CgroupMemory c;
  c.version = 1;
  c.limit_bytes = 1ull << 30;
  c.limit_source = LimitSource::kCgroup;
  c.usage_bytes = 700ull << 20;
  c.oom_kills = 0;
  ts.sample.cgroup = c;
  ts.collectors = {{"process", true, 0, ""}, {"cgroup", true, 0, ""}, {"glibc", true, 0, ""}};
  return ts;
}

TEST(Inspect, TableSaysWhatAPersonNeeds) {
  std::string t = RenderInspectTable(Sample());
  EXPECT_NE(t.find("pid 77 (fragmenter), runtime glibc"), std::string::npos) << t;
  EXPECT_NE(t.find("RSS                           602.0 MiB"), std::string::npos) << t;
  EXPECT_NE(t.find("arena heaps                          15"), std::string::npos) << t;
  EXPECT_NE(t.find("all confirmed"), std::string::npos);
  EXPECT_NE(t.find("limit                           1.0 GiB"), std::string::npos) << t;
  EXPECT_NE(t.find("RSS / limit                      58.8 %"), std::string::npos) << t;
  EXPECT_NE(t.find("Who holds the RSS"), std::string::npos) << t;
  EXPECT_NE(t.find("RSS 602.0 MiB = file-backed 2.0 MiB + native and glibc free 600.0 MiB"),
            std::string::npos)
      << t;
}

TEST(Inspect, AnEstimateFromBeforeTheLastTrimIsNotShownAsCurrent) {
  TargetSnapshot ts = Sample();
  MallocStats m;
  jvm::MallocArena main;
  main.nr = 0;
  main.bin_pages_bytes = 269ull << 20;
  m.info.arenas = {main};
  m.info.system_current = 600ull << 20;
  m.info.total_rest_bytes = 279ull << 20;
  m.source = MallocSource::kAgent;
  m.read_at = std::chrono::system_clock::now() - std::chrono::seconds(30);
  m.read_steady = std::chrono::steady_clock::now() - std::chrono::seconds(30);
  ts.sample.malloc = m;
  std::string fresh = RenderInspectTable(ts);
  // 279 MiB of free chunks, 269 MiB of them whole pages; the arenas hold 545
  // MiB resident of which 321 MiB is in use: 224 MiB is free and resident, of
  // which the 10 MiB outside whole pages stay after a trim.
  EXPECT_NE(fresh.find("trimmable                     214.0 MiB  what a trim would give back now"),
            std::string::npos)
      << fresh;
  EXPECT_NE(fresh.find("a trim gives back about 214.0 MiB of it"), std::string::npos) << fresh;
  EXPECT_NE(fresh.find("glibc free kept"), std::string::npos) << fresh;
  ts.sample.last_trim_at = std::chrono::system_clock::now();
  ts.sample.last_trim_steady = std::chrono::steady_clock::now();
  std::string stale = RenderInspectTable(ts);
  EXPECT_NE(stale.find("READ BEFORE THE LAST TRIM"), std::string::npos) << stale;
  std::string j = RenderInspectJson(ts);
  EXPECT_NE(j.find("\"stale\":true"), std::string::npos) << j;
}

TEST(Inspect, FailedCollectorIsExplained) {
  TargetSnapshot ts = Sample();
  ts.sample.glibc.reset();
  ts.collectors[2] = {"glibc", false, 0, "open /proc/77/smaps: Permission denied"};
  std::string t = RenderInspectTable(ts);
  EXPECT_NE(t.find("could not read: open /proc/77/smaps: Permission denied"), std::string::npos)
      << t;
}

TEST(Inspect, NoLimitIsSaidInWords) {
  TargetSnapshot ts = Sample();
  ts.sample.cgroup->limit_bytes.reset();
  std::string t = RenderInspectTable(ts);
  EXPECT_NE(t.find("limit                              none"), std::string::npos) << t;
  EXPECT_EQ(t.find("RSS / limit"), std::string::npos);
}

TEST(Inspect, JsonCarriesTheSameNumbers) {
  std::string j = RenderInspectJson(Sample());
  EXPECT_NE(j.find("\"pid\":77"), std::string::npos) << j;
  EXPECT_NE(j.find("\"rss_bytes\":631242752"), std::string::npos) << j;
  EXPECT_NE(j.find("\"arena_heaps\":15"), std::string::npos);
  EXPECT_NE(j.find("\"limit_bytes\":1073741824"), std::string::npos);
  EXPECT_NE(j.find("\"limit_source\":\"cgroup\""), std::string::npos);
  EXPECT_EQ(j.back(), '\n');
  EXPECT_EQ(j.find('\n'), j.size() - 1);
}

// Issue 33: the account is of the last smaps read, the process section of
// this sample. An older read is dated in the table, and /report's JSON says
// when each read was taken and whether they are in step.
TEST(Inspect, AnOlderSmapsReadIsDatedInTheTableAndTheJson) {
  using namespace std::chrono_literals;
  TargetSnapshot ts = Sample();
  const auto now = std::chrono::system_clock::time_point(1'800'000'000s);
  ts.sample.glibc->read_at = now - 47s;
  ts.sample.glibc->status_rss_bytes = 602ull << 20;
  std::string t = RenderInspectTable(ts, now);
  EXPECT_NE(t.find("As of the smaps read 47 s ago (07:59:13 UTC)."), std::string::npos) << t;
  ts.sample.process->rss_anon = 900ull << 20;
  t = RenderInspectTable(ts, now);
  EXPECT_NE(t.find("As of the smaps read 47 s ago (07:59:13 UTC), when RSS was 602.0 MiB "
                   "(902.0 MiB now"),
            std::string::npos)
      << t;
  const std::string j = RenderInspectJson(ts);
  EXPECT_NE(j.find("\"smaps_read_seconds\":1799999953,\"smaps_read_rss_bytes\":631242752"),
            std::string::npos)
      << j;
  EXPECT_NE(j.find("\"parts_in_step\":true"), std::string::npos) << j;
  EXPECT_NE(j.find("\"rss_now_bytes\":945815552,\"in_step_with_rss_now\":false"), std::string::npos)
      << j;
  // Read this moment: nothing to date.
  EXPECT_EQ(RenderInspectTable(Sample()).find("As of the smaps read"), std::string::npos);
}

// How deep the shallowest `key` sits in the JSON text `j` (1: the top
// object); -1 when it is not there.
int DepthOfKey(const std::string& j, const std::string& key) {
  int depth = 0, found = -1;
  for (std::size_t i = 0; i < j.size(); ++i) {
    if (j[i] == '{' || j[i] == '[') ++depth;
    if (j[i] == '}' || j[i] == ']') --depth;
    if (j[i] != '"') continue;
    std::size_t end = i + 1;
    while (end < j.size() && j[end] != '"') end += j[end] == '\\' ? 2 : 1;
    if (j.compare(i + 1, end - i - 1, key) == 0 && end + 1 < j.size() && j[end + 1] == ':') {
      if (found < 0 || depth < found) found = depth;
    }
    i = end;
  }
  return found;
}

// Each section writes its own object and closes it: the next section's key
// is at the top level again.
TEST(Inspect, JsonSectionsAreTopLevelKeys) {
  std::string j = RenderInspectJson(Sample());
  for (const char* key : {"allocator", "process", "glibc", "rss_account", "cgroup", "rss_breakdown",
                          "missing", "collectors"}) {
    EXPECT_EQ(DepthOfKey(j, key), 1) << key << " in " << j;
  }
}

TEST(Inspect, TrimListsEachArenaHeapBeforeAndAfter) {
  TrimResult r;
  r.pid = 77;
  r.backend = "agent";
  r.trigger = "manual";
  r.success = true;
  r.before.rss_swap_bytes = 300ull << 20;
  r.after.rss_swap_bytes = 200ull << 20;
  r.before.arena_resident_bytes = 96ull << 20;
  r.after.arena_resident_bytes = 8ull << 20;
  r.before.arena_heaps = {{0x7f0000000000, 64ull << 20, 64ull << 20, glibc::HeapCheck::kShapeOnly},
                          {0x7f0004000000, 32ull << 20, 32ull << 20, glibc::HeapCheck::kShapeOnly}};
  r.after.arena_heaps = {{0x7f0000000000, 64ull << 20, 8ull << 20, glibc::HeapCheck::kShapeOnly}};
  std::string t = RenderTrimText(r);
  EXPECT_NE(t.find("0x7f0000000000  64.0 MiB -> 8.0 MiB  (-56.0 MiB)"), std::string::npos) << t;
  EXPECT_NE(t.find("0x7f0004000000  32.0 MiB -> (gone)"), std::string::npos) << t;
  std::string j = RenderTrimJson(r);
  EXPECT_NE(j.find("{\"start\":\"0x7f0004000000\",\"before_resident_bytes\":33554432,"
                   "\"after_resident_bytes\":null}"),
            std::string::npos)
      << j;
}

TEST(Inspect, TrimShowsMimallocsCommittedBytesAroundTheCall) {
  TrimResult r;
  r.pid = 78;
  r.backend = "agent";
  r.trigger = "manual";
  r.success = true;
  r.allocator = "mimalloc";
  r.call = "mi_collect";
  r.committed_before = 160ull << 20;
  r.committed_after = 64ull << 20;
  std::string t = RenderTrimText(r);
  EXPECT_NE(t.find("mimalloc committed"), std::string::npos) << t;
  EXPECT_NE(t.find("160.0 MiB -> 64.0 MiB"), std::string::npos) << t;
  EXPECT_EQ(t.find("free kept"), std::string::npos) << t;
  std::string j = RenderTrimJson(r);
  EXPECT_NE(j.find("\"committed_before_bytes\":167772160,\"committed_after_bytes\":67108864"),
            std::string::npos)
      << j;
  EXPECT_EQ(j.find("free_kept_before_bytes"), std::string::npos) << j;
}

}  // namespace
}  // namespace memtrimd

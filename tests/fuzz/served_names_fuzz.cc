// Fuzz target: names a target brings (its comm, command line, cgroup path,
// pod identity and name, JVM version and settings, allocator source, error
// texts that quote its files) through every writer memtrimd serves them
// with: the /metrics text (every detail family), the /report JSON, inspect's
// JSON and the incident page.
//
// Input: fields separated by '\n' (reused in turn when there are fewer than
// the snapshot needs). The comm is cut at 15 bytes, as the kernel cuts it.
//
// Invariants: every output is valid UTF-8 (text::IsValidUtf8), the JSON
// documents parse (tests/integration/json_value.h) and hold the comm as
// text::ToValidUtf8 makes it (the same replacement in every writer), and
// no name adds markup to the page: the page holds exactly as many '<', '>',
// '"' and '\'' as the page of the same names with each of those characters
// in them turned into '`' (so only the page's own markup holds any). A
// check by content instead (is a name with '<' on the page as it was?)
// failed on names that copy the page's own markup, escaped names and all.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/text.h"
#include "collectors/procfs/cmdline.h"
#include "daemon/exposition/exposition.h"
#include "daemon/exposition/metric_detail.h"
#include "daemon/report/incident_page.h"
#include "daemon/report/inspect.h"
#include "daemon/report/report_page.h"
#include "daemon/sampling/snapshot.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/integration/json_value.h"

namespace {

using memtrimd::text::IsValidUtf8;
using memtrimd::text::ToValidUtf8;

std::vector<std::string> Fields(std::string_view text) {
  std::vector<std::string> out;
  memtrimd::text::ForEachLineIn(text, [&](std::string_view l) { out.emplace_back(l); });
  if (out.empty()) out.emplace_back("");
  return out;
}

constexpr std::string_view kMarkup = "<>\"'";

// The name with each character that could open or close markup turned into
// '`', which nothing escapes or parses: the same length (so the kernel's cut
// of the comm and any shortening fall alike) and, as far as any parser of
// memtrimd's is concerned, the same kind of character.
std::string WithoutMarkup(std::string s) {
  for (char& ch : s) {
    if (kMarkup.find(ch) != std::string_view::npos) ch = '`';
  }
  return s;
}

// The snapshot a target with these names makes (fields used in turn), or,
// with without_markup, the same with each name passed through WithoutMarkup.
memtrimd::Snapshot BuildSnapshot(const std::vector<std::string>& f, bool without_markup) {
  using namespace memtrimd;
  std::size_t next = 0;
  auto clean = [&](const std::string& s) { return without_markup ? WithoutMarkup(s) : s; };
  auto field = [&]() { return clean(f[next++ % f.size()]); };

  Snapshot snap;
  snap.sequence = 3;
  snap.node_mode = true;
  snap.taken_at = std::chrono::system_clock::time_point(std::chrono::seconds(1764633600));
  TargetSnapshot ts;
  ts.target.pid = 4242;
  ts.target.start_ticks = 100;
  ts.target.comm = clean(f[next++ % f.size()].substr(0, 15));
  ts.target.runtime = Runtime::kJvm;
  ts.target.allocator = Allocator::kJemalloc;
  ts.target.allocator_source = field();
  ts.start_time_seconds = 1764633000;
  procfs::ProcStatus p;
  p.name = ts.target.comm;
  p.rss_anon = 64 << 20;
  p.rss_file = 8 << 20;
  p.threads = 9;
  p.has_memory = true;
  ts.sample.process = p;
  CgroupMemory c;
  c.version = 2;
  c.path = field();
  c.limit_bytes = 512ull << 20;
  c.usage_bytes = 100 << 20;
  cgroup::PodIdentity pod;
  pod.pod_uid = field();
  pod.container_id = field();
  pod.runtime = field();
  c.pod = pod;
  c.pod_name = field();
  ts.sample.cgroup = c;
  JvmSample j;
  j.attachable = false;
  j.attach_error = field();
  jvm::JvmVersion v;
  v.vm_name = field();
  v.full = field();
  v.feature = 17;
  j.version = v;
  j.settings["MaxDirectMemorySize"] = field();
  j.settings[field()] = field();
  j.command_errors.push_back(field());
  ts.sample.jvm = j;
  ts.sample.malloc_env =
      std::map<std::string, std::string, std::less<>>{{"MALLOC_ARENA_MAX", field()}};
  // A command line as /proc/<pid>/cmdline holds it (NUL-separated), in an
  // error text, as a collector's failure may quote one.
  std::string raw_cmdline = field();
  for (char& ch : raw_cmdline) {
    if (ch == ' ') ch = '\0';
  }
  ts.collectors = {
      {"process", true, 0.001, ""},
      {"jvm", false, 0.01, "attach to " + procfs::CmdlineToString(raw_cmdline) + ": " + field()}};
  snap.targets.push_back(ts);
  return snap;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memtrimd;
  const std::vector<std::string> f = Fields(fuzz::AsText(data, size));
  const Snapshot snap = BuildSnapshot(f, false);
  const TargetSnapshot& ts = snap.targets[0];

  MetricDetail all;
  (void)ParseMetricDetail("all", all);
  const std::string metrics = RenderText(SnapshotFamilies(&snap, all));
  FUZZ_CHECK(IsValidUtf8(metrics));

  const std::string comm_served = ToValidUtf8(ts.target.comm);
  for (const std::string& json : {RenderReportJson(&snap, nullptr), RenderInspectJson(ts)}) {
    FUZZ_CHECK(IsValidUtf8(json));
    std::optional<testing::JsonValue> doc = testing::ParseJson(json);
    FUZZ_CHECK(doc.has_value());
  }
  std::optional<testing::JsonValue> report = testing::ParseJson(RenderReportJson(&snap, nullptr));
  const testing::JsonValue* targets = report->Get("targets");
  FUZZ_CHECK(targets != nullptr && targets->items.size() == 1);
  const testing::JsonValue* comm = targets->items[0].Get("comm");
  FUZZ_CHECK(comm != nullptr && comm->text == comm_served);

  IncidentPageOptions options;
  const std::string html = RenderIncidentPage(&snap, nullptr, nullptr, options).html;
  FUZZ_CHECK(IsValidUtf8(html));
  // No name adds markup: every '<', '>', '"' and '\'' on the page is the
  // page's own, as many as on the page of the same names without them.
  const Snapshot plain = BuildSnapshot(f, true);
  const std::string own_markup = RenderIncidentPage(&plain, nullptr, nullptr, options).html;
  for (char ch : kMarkup) {
    FUZZ_CHECK(std::count(html.begin(), html.end(), ch) ==
               std::count(own_markup.begin(), own_markup.end(), ch));
  }
  return 0;
}

// Everything served stays valid whatever a program is named. The kernel
// cuts comm at 15 bytes, so a program named "ééééééééé" (18 bytes) has a
// comm ending in half a character: once copied into a label value it made
// Prometheus refuse the node agent's whole scrape, and /report invalid
// JSON. Real programs (copies of /bin/sleep under such names) watched by
// node mode; the scrape goes through promtool, /report and inspect's JSON
// through a JSON parser, the page is checked for UTF-8 and escaping.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "collectors/common/text.h"
#include "tests/integration/harness.h"
#include "tests/integration/json_value.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

// 9 x U+00E9: 18 bytes, cut by the kernel to 7 and a half characters.
const std::string kAccented =
    "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9";
// Bytes that are no UTF-8 at all, and markup.
const std::string kBytesAndMarkup = "\xFF\xFE<b>\"x\\y";

std::string Kernels(const std::string& name) { return name.substr(0, 15); }

TEST(ServedNamesTest, NodeModeServesValidTextForProgramsWithNamesThatAreNotUtf8) {
  TempDir dir;
  std::vector<Process> programs;
  std::vector<std::string> names = {kAccented, kBytesAndMarkup};
  for (const std::string& name : names) {
    const std::string path = dir / name;
    fs::copy_file("/bin/sleep", path);
    ASSERT_EQ(::chmod(path.c_str(), 0755), 0);
    programs.emplace_back(std::vector<std::string>{path, "600"});
    ASSERT_TRUE(programs.back().running());
  }
  // Their comms as the kernel shows them: the first is not valid UTF-8.
  for (std::size_t i = 0; i < programs.size(); ++i) {
    const std::string comm_file = "/proc/" + std::to_string(programs[i].pid()) + "/comm";
    ASSERT_TRUE(WaitFor([&] { return ReadFile(comm_file) == Kernels(names[i]) + "\n"; }, 30s));
  }
  ASSERT_FALSE(text::IsValidUtf8(Kernels(kAccented)));

  Memtrimd m({"--targets=node", "--targets.match=" + dir.path(), "--targets.min-rss=0",
              "--discovery.interval=500ms", "--sample.interval=200ms", "--trim.interval=0"});
  ASSERT_TRUE(m.started()) << m.log();
  ASSERT_TRUE(WaitFor([&] { return Find(m.Scrape(), "memtrimd_targets_watched") == 2.0; }, 30s))
      << m.log();

  HttpResponse metrics = Curl(m.url());
  ASSERT_EQ(metrics.status, 200);
  EXPECT_TRUE(text::IsValidUtf8(metrics.body));
  // Not in dir: node mode watches every process whose command line names
  // dir, and the shell below would be one.
  TempDir scratch;
  WriteFile(scratch / "scrape.txt", metrics.body);
  RunResult check = RunCommand(
      {"sh", "-c",
       std::string(PROMTOOL_BIN) + " check metrics < '" + (scratch / "scrape.txt") + "'"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  // The cut character is one U+FFFD; the rest of the name is kept.
  const std::string served = text::ToValidUtf8(Kernels(kAccented));
  EXPECT_EQ(served, kAccented.substr(0, 14) + "\xEF\xBF\xBD");
  EXPECT_NE(metrics.body.find("comm=\"" + served + "\""), std::string::npos);

  HttpResponse report = Curl(m.url("/report?format=json"));
  ASSERT_EQ(report.status, 200);
  EXPECT_TRUE(text::IsValidUtf8(report.body));
  std::optional<JsonValue> doc = ParseJson(report.body);
  ASSERT_TRUE(doc.has_value()) << report.body;
  const JsonValue* targets = doc->Get("targets");
  ASSERT_TRUE(targets != nullptr);
  std::vector<std::string> comms;
  for (const JsonValue& t : targets->items) {
    if (const JsonValue* c = t.Get("comm")) comms.push_back(c->text);
  }
  std::sort(comms.begin(), comms.end());
  std::vector<std::string> want = {served, text::ToValidUtf8(Kernels(kBytesAndMarkup))};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(comms, want);

  // The text report too (served as UTF-8 text).
  HttpResponse text_report = Curl(m.url("/report"));
  ASSERT_EQ(text_report.status, 200);
  EXPECT_TRUE(text::IsValidUtf8(text_report.body));
  EXPECT_NE(text_report.body.find(served), std::string::npos);

  HttpResponse page = Curl(m.url("/"));
  ASSERT_EQ(page.status, 200);
  EXPECT_TRUE(text::IsValidUtf8(page.body));
  EXPECT_EQ(page.body.find("<b>\"x"), std::string::npos);
  EXPECT_NE(page.body.find("&lt;b&gt;&quot;x"), std::string::npos);

  // inspect's JSON of the program with the cut name.
  RunResult inspect =
      RunCommand({MemtrimdBin(), "inspect", "--pid", std::to_string(programs[0].pid()), "--json"});
  EXPECT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_TRUE(text::IsValidUtf8(inspect.out));
  std::optional<JsonValue> one = ParseJson(inspect.out);
  ASSERT_TRUE(one.has_value()) << inspect.out;
  ASSERT_TRUE(one->Get("comm") != nullptr);
  EXPECT_EQ(one->Get("comm")->text, served);
}

}  // namespace
}  // namespace memtrimd::testing

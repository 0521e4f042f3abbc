// The incident page (/) in a real headless Chromium, against a node-mode
// memtrimd watching a fragmented glibc program and one JVM per JDK under
// /usr/lib/jvm, each with the preload agent: the bar's parts are /report's
// account of the same sample, the charts have a point for every sample, the
// trims are marked, no console message, and no request leaves 127.0.0.1.
//
// "No request leaves": Chromium runs with every host name mapped to nothing
// but 127.0.0.1, and its net log is read: each request made for the page
// (those whose network isolation key is the page's site) must go to
// memtrimd. The browser's own background requests (update checks) carry
// another key and are refused by the resolver rule anyway. The DOM is also
// checked for any URL with a scheme or a host.
//
// With MEMTRIMD_PAGE_SCREENSHOTS=<dir> the screenshots are also copied
// there (scripts/incident_page_screenshots.sh makes docs/images with it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "tests/integration/harness.h"
#include "tests/integration/json_value.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

struct Browser {
  int exit_code = -1;
  std::string out;  // the DOM with --dump-dom
  std::string log;  // stderr: console messages appear as "...:CONSOLE..." lines
  std::string net_log;
};

// One headless Chromium run on `url` with `what` (--dump-dom or
// --screenshot=FILE), its own profile and net log in `dir`.
Browser OpenInChromium(const TempDir& dir, const std::string& url, const std::string& what) {
  static int runs = 0;
  const std::string n = std::to_string(++runs);
  Browser b;
  b.net_log = dir / ("net." + n + ".json");
  RunResult r =
      RunCommand({"chromium", "--headless", "--no-sandbox",
                  "--user-data-dir=" + (dir / ("profile." + n)), "--enable-logging=stderr", "--v=0",
                  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--no-first-run", "--disable-extensions", "--hide-scrollbars",
                  "--window-size=1100,1500", "--log-net-log=" + b.net_log, what, url});
  b.exit_code = r.exit_code;
  b.out = r.out;
  b.log = r.err;
  return b;
}

std::vector<std::string> ConsoleLines(const std::string& log) {
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (at < log.size()) {
    std::size_t end = log.find('\n', at);
    if (end == std::string::npos) end = log.size();
    std::string line = log.substr(at, end - at);
    if (line.find(":CONSOLE") != std::string::npos) lines.push_back(line);
    at = end + 1;
  }
  return lines;
}

// URLs of the requests the page made (network isolation key of `site`).
std::vector<std::string> PageRequests(const std::string& net_log_path, const std::string& site) {
  std::vector<std::string> urls;
  auto log = ParseJson(ReadFile(net_log_path));
  if (!log) return {"(net log unreadable)"};
  const JsonValue* types = log->Path({"constants", "logEventTypes"});
  const JsonValue* events = log->Get("events");
  if (types == nullptr || events == nullptr) return {"(net log without events)"};
  std::optional<int64_t> start_job;
  for (const auto& [name, value] : types->members) {
    if (name == "URL_REQUEST_START_JOB") start_job = value.Int();
  }
  for (const JsonValue& e : events->items) {
    const JsonValue* type = e.Get("type");
    const JsonValue* params = e.Get("params");
    if (type == nullptr || params == nullptr || type->Int() != start_job) continue;
    const JsonValue* url = params->Get("url");
    const JsonValue* key = params->Get("network_isolation_key");
    if (url == nullptr || key == nullptr) continue;
    if (key->text.rfind(site + " ", 0) == 0) urls.push_back(url->text);
  }
  return urls;
}

std::map<std::string, uint64_t> BarParts(const std::string& dom) {
  std::map<std::string, uint64_t> parts;
  std::regex re(R"re(data-part="([a-z_]+)" data-bytes="(\d+)")re");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), re); it != std::sregex_iterator();
       ++it) {
    parts[(*it)[1]] = std::stoull((*it)[2]);
  }
  return parts;
}

// /report's rss_account in the part names of the bar (and of
// memtrimd_rss_account_bytes).
std::map<std::string, uint64_t> ReportParts(const JsonValue& account) {
  std::map<std::string, uint64_t> parts;
  auto put = [&](const char* part, std::initializer_list<std::string_view> path) {
    if (const JsonValue* v = account.Path(path)) parts[part] = static_cast<uint64_t>(*v->Int());
  };
  put("file", {"file_bytes"});
  put("java_heap", {"java_heap_bytes"});
  put("nmt_buffers", {"nmt_known", "buffers_bytes"});
  put("nmt_metaspace", {"nmt_known", "metaspace_bytes"});
  put("nmt_code", {"nmt_known", "code_bytes"});
  put("nmt_threads", {"nmt_known", "threads_bytes"});
  put("nmt_gc", {"nmt_known", "gc_bytes"});
  put("nmt_jvm_other", {"nmt_known", "jvm_other_bytes"});
  put("glibc_free", {"glibc_free_bytes"});
  put("outside_nmt", {"outside_nmt_bytes"});
  put("native", {"native_bytes"});
  return parts;
}

std::string Attr(const std::string& text, const std::string& pattern) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(pattern))) return "";
  return m[1];
}

const JsonValue* TargetIn(const JsonValue& report, pid_t pid) {
  for (const JsonValue& t : report.Get("targets")->items) {
    if (t.Get("pid")->Int() == pid) return &t;
  }
  return nullptr;
}

const JsonValue* TrimsIn(const JsonValue& report, pid_t pid) {
  const JsonValue* all = report.Get("trims");
  if (all == nullptr) return nullptr;
  for (const JsonValue& t : all->items) {
    if (t.Get("pid")->Int() == pid) return &t;
  }
  return nullptr;
}

struct Matched {
  std::string dom;
  JsonValue report;
  Browser browser;
};

// The page at `path` and /report of the same sample: the page prints its
// sample's sequence, /report too; read both again until they agree (a new
// sample can come between the two reads).
std::optional<Matched> PageAndReport(const TempDir& dir, const Memtrimd& m,
                                     const std::string& path) {
  std::optional<Matched> got;
  WaitFor(
      [&] {
        Browser b = OpenInChromium(dir, m.url(path), "--dump-dom");
        if (b.exit_code != 0) return false;
        auto report = ParseJson(Curl(m.url("/report?format=json")).body);
        if (!report || report->Get("sequence") == nullptr) return false;
        std::string seq = Attr(b.out, R"re(<body data-sequence="(\d+)")re");
        if (seq.empty() || seq != report->Get("sequence")->text) return false;
        got = Matched{b.out, *report, b};
        return true;
      },
      40s);
  return got;
}

class IncidentPageTest : public ::testing::Test {
 protected:
  TempDir dir_;
};

TEST_F(IncidentPageTest, ChromiumShowsTheReportsNumbersForAJvmPerJdkAndAGlibcProgram) {
  SpawnOptions frag_options;
  frag_options.env = {std::string("LD_PRELOAD=") + AGENT_LIB, "MEMTRIMD_TRIM=1"};
  // Freed memory left in 8 thread arenas: glibc free memory a trim gives back.
  Process frag = StartFragmenter(dir_, {"--threads", "8", "--rounds", "2", "--burst-mib", "16"}, "",
                                 frag_options);
  ASSERT_TRUE(frag.running());
  std::vector<Process> jvms;
  SpawnOptions jvm_options;
  jvm_options.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  for (const std::string& home : FindJdkHomes()) {
    jvms.push_back(StartJvm(dir_, {"-Xmx64m", "-XX:NativeMemoryTracking=summary"}, "BufferPools",
                            {"--direct", "8", "--direct-bytes", "1048576"}, jvm_options, home));
    ASSERT_TRUE(jvms.back().running()) << home;
  }
  // Node mode over exactly these processes (their command lines name the
  // test's directory), glibc programs of any size.
  Memtrimd m({"--targets=node", "--targets.match=" + dir_.path(), "--targets.min-rss=1MiB",
              "--sample.interval=2s", "--smaps.interval=2s", "--jvm.interval=2s",
              "--trim.interval=4s"});
  ASSERT_TRUE(m.started()) << m.log();

  // Until every JVM's account has its NMT split and buffer pools, and the
  // fragmenter has been trimmed once.
  std::optional<JsonValue> report;
  bool ready = WaitFor(
      [&] {
        report = ParseJson(Curl(m.url("/report?format=json")).body);
        if (!report) return false;
        for (const Process& j : jvms) {
          const JsonValue* t = TargetIn(*report, j.pid());
          if (t == nullptr || t->Path({"rss_account", "nmt_known"}) == nullptr ||
              t->Path({"jvm", "direct_memory_bytes"}) == nullptr)
            return false;
        }
        const JsonValue* f = TargetIn(*report, frag.pid());
        const JsonValue* ft = TrimsIn(*report, frag.pid());
        return f != nullptr && f->Path({"rss_account", "glibc_free_bytes"}) != nullptr &&
               ft != nullptr && !ft->Get("recent")->items.empty();
      },
      50s);
  ASSERT_TRUE(ready) << Curl(m.url("/report?format=json")).body << m.log();

  const std::string origin = "http://127.0.0.1:" + std::to_string(m.port());
  std::vector<pid_t> pids = {frag.pid()};
  for (const Process& j : jvms) pids.push_back(j.pid());
  for (pid_t pid : pids) {
    SCOPED_TRACE("pid " + std::to_string(pid));
    auto matched = PageAndReport(dir_, m, "/?pid=" + std::to_string(pid));
    ASSERT_TRUE(matched) << "page and /report never showed the same sample";
    const std::string& dom = matched->dom;
    const JsonValue* target = TargetIn(matched->report, pid);
    ASSERT_NE(target, nullptr);

    // The bar: exactly /report's parts, same bytes.
    const JsonValue* account = target->Get("rss_account");
    ASSERT_NE(account, nullptr);
    EXPECT_EQ(BarParts(dom), ReportParts(*account));
    EXPECT_EQ(Attr(dom, R"re(class="bar"[^>]*data-rss="(\d+)")re"),
              account->Get("rss_bytes")->text);

    // The charts: one point per sample since memtrimd found the target
    // (before its first sample: sample 1), up to the page's own sample.
    const std::string seq = matched->report.Get("sequence")->text;
    EXPECT_EQ(Attr(dom, R"re(data-last-sequence="(\d+)")re"), seq);
    EXPECT_EQ(Attr(dom, R"re(data-first-sequence="(\d+)")re"), "1");
    EXPECT_EQ(Attr(dom, R"re(data-samples="(\d+)")re"), seq);
    std::string points =
        Attr(dom, R"re(data-series="rss" data-count="\d+"[^>]* points="([^"]*)")re");
    EXPECT_EQ(std::to_string(std::count(points.begin(), points.end(), ',')), seq);
    EXPECT_EQ(Attr(dom, R"re(data-series="rss" data-count="(\d+)")re"), seq);
    EXPECT_EQ(Attr(dom, R"re(data-series="rss" data-count="\d+" data-last="(\d+)")re"),
              target->Path({"process", "rss_bytes"})->text);
    if (pid == frag.pid()) {
      // Each trim mark is one of /report's trims, before and after.
      std::set<std::pair<std::string, std::string>> reported;
      for (const JsonValue& r : TrimsIn(matched->report, pid)->Get("recent")->items) {
        if (r.Get("success")->boolean)
          reported.insert(
              {r.Get("rss_swap_before_bytes")->text, r.Get("rss_swap_after_bytes")->text});
      }
      std::regex mark(R"re(class="trim" data-t="\d+" data-before="(\d+)" data-after="(\d+)")re");
      int marks = 0;
      for (auto it = std::sregex_iterator(dom.begin(), dom.end(), mark);
           it != std::sregex_iterator(); ++it, ++marks) {
        EXPECT_TRUE(reported.count({(*it)[1], (*it)[2]})) << (*it)[0];
      }
      EXPECT_GE(marks, 1);
    } else {
      EXPECT_EQ(Attr(dom, R"re(data-series="direct" data-count="\d+" data-last="(\d+)")re"),
                target->Path({"jvm", "direct_memory_bytes"})->text);
    }
    // The findings: /report's risks and missing figures, each on the page.
    if (const JsonValue* risks = target->Path({"jvm", "risks"})) {
      for (const JsonValue& r : risks->items) {
        if (r.Get("at_risk")->boolean) {
          EXPECT_NE(dom.find("data-check=\"" + r.Get("check")->text + "\""), std::string::npos);
        }
      }
    }
    for (const JsonValue& f : target->Get("missing")->items) {
      EXPECT_NE(dom.find("data-figure=\"" + f.Get("figure")->text + "\""), std::string::npos);
    }

    // Nothing in the console; every request of the page went to memtrimd.
    EXPECT_EQ(ConsoleLines(matched->browser.log), std::vector<std::string>{});
    std::vector<std::string> requests = PageRequests(matched->browser.net_log, "http://127.0.0.1");
    ASSERT_FALSE(requests.empty());
    for (const std::string& url : requests) EXPECT_EQ(url.rfind(origin + "/", 0), 0u) << url;
    EXPECT_FALSE(std::regex_search(dom, std::regex(R"re((href|src)="[a-zA-Z][a-zA-Z+.-]*://)re")));
    EXPECT_FALSE(std::regex_search(dom, std::regex(R"re((href|src)="//)re")));
    EXPECT_EQ(dom.find("url("), std::string::npos);
  }

  // The node overview: one row per target, each linking to its page.
  auto overview = PageAndReport(dir_, m, "/");
  ASSERT_TRUE(overview);
  std::set<std::string> rows, linked;
  std::regex row(R"re(<tr data-pid="(\d+)"><td><a href="/\?pid=(\d+)")re");
  for (auto it = std::sregex_iterator(overview->dom.begin(), overview->dom.end(), row);
       it != std::sregex_iterator(); ++it) {
    rows.insert((*it)[1]);
    linked.insert((*it)[2]);
  }
  std::set<std::string> expected;
  for (pid_t pid : pids) expected.insert(std::to_string(pid));
  EXPECT_EQ(rows, expected);
  EXPECT_EQ(linked, expected);
  EXPECT_EQ(ConsoleLines(overview->browser.log), std::vector<std::string>{});

  // Screenshots of a fragmented glibc program and of a JVM.
  const char* keep = std::getenv("MEMTRIMD_PAGE_SCREENSHOTS");
  for (auto [name, pid] : {std::pair{"glibc", frag.pid()}, std::pair{"jvm", jvms.front().pid()}}) {
    const std::string png = dir_ / (std::string("incident-page-") + name + ".png");
    Browser b = OpenInChromium(dir_, m.url("/?pid=" + std::to_string(pid)), "--screenshot=" + png);
    EXPECT_EQ(b.exit_code, 0) << b.log;
    std::string image = ReadFile(png);
    ASSERT_GT(image.size(), 10000u) << name;
    EXPECT_EQ(image.substr(1, 3), "PNG");
    if (keep != nullptr && *keep != '\0') {
      fs::copy_file(png, std::string(keep) + "/" + fs::path(png).filename().string(),
                    fs::copy_options::overwrite_existing);
    }
  }
}

}  // namespace
}  // namespace memtrimd::testing

// The incident page (/) in a real headless Chromium, against a node-mode
// memtrimd watching a fragmented glibc program, one JVM per JDK under
// /usr/lib/jvm with the preload agent and one JVM without it: the bar's
// parts are /report's account of the same sample, the charts have a point
// for every sample, the trims are marked, no console message, and no
// request leaves 127.0.0.1.
//
// memtrimd serves it as a locked-down deployment would: over TLS, behind
// basic auth, with "Content-Security-Policy: default-src 'self'" from its
// --web.config.file. Under that policy the browser blocks inline styles,
// scripts and data: URLs, and the page must still draw its parts in their
// colours: the screenshot is read back, and every part of the bar must be
// there, in its fill, as a column of pixels as tall as the bar.
//
// Run as root where a memory cgroup can be made, the fragmenter and the
// first JVM run under memory limits: the bar's limit and the RSS chart's
// limit line must be /report's limit.
//
// "No request leaves": Chromium runs with every host name mapped to nothing
// but 127.0.0.1, and its net log is read: each request made for the page
// (those whose network isolation key is the page's site) must go to
// memtrimd. The browser's own background requests (update checks) carry
// another key and are refused by the resolver rule anyway. The DOM is also
// checked for any URL with a scheme or a host.
//
// With MEMTRIMD_PAGE_SCREENSHOTS=<dir> the screenshots are also copied
// there, after MEMTRIMD_PAGE_HISTORY_SECONDS (default 0) of history
// (scripts/incident_page_screenshots.sh makes docs/images with them).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "tests/integration/harness.h"
#include "tests/integration/json_value.h"
#include "tests/integration/web_fixtures.h"

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
// --screenshot=FILE), its own profile and net log in `dir`. memtrimd's
// certificate is the test's own, self-signed: Chromium is told to take it.
// A run takes a second or two; one that has not ended in 20 s (headless
// Chromium sometimes hangs on a loaded machine) is killed and fails, so
// that a caller polling with a deadline tries again.
Browser OpenInChromium(const TempDir& dir, const std::string& url, const std::string& what) {
  static int runs = 0;
  const std::string n = std::to_string(++runs);
  Browser b;
  b.net_log = dir / ("net." + n + ".json");
  RunResult r = RunCommand(
      {"chromium", "--headless", "--no-sandbox", "--user-data-dir=" + (dir / ("profile." + n)),
       "--enable-logging=stderr", "--v=0",
       "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
       "--disable-background-networking", "--disable-component-update", "--disable-sync",
       "--no-first-run", "--disable-extensions", "--hide-scrollbars", "--ignore-certificate-errors",
       "--window-size=1100,1500", "--log-net-log=" + b.net_log, what, url},
      {}, std::chrono::seconds(20));
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

// Colours ("#rrggbb") that fill a column of at least `min_run` pixels
// somewhere in the top `rows` rows of a PNG screenshot. Python's zlib reads
// the PNG (8-bit RGB or RGBA, as Chromium writes them).
std::set<std::string> ColumnColours(const std::string& png, int rows, int min_run) {
  static const char* kReader = R"py(
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
rows, min_run = int(sys.argv[2]), int(sys.argv[3])
assert data[:8] == b"\x89PNG\r\n\x1a\n"
pos, idat = 8, b""
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    pos += 12 + n
    if kind == b"IHDR":
        w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
assert depth == 8 and interlace == 0 and ctype in (2, 6), (depth, ctype, interlace)
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompressobj().decompress(idat), w * bpp
prev, image = bytearray(stride), []
for y in range(min(h, rows)):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b = prev[x]
        if f == 1:
            line[x] = (line[x] + a) & 255
        elif f == 2:
            line[x] = (line[x] + b) & 255
        elif f == 3:
            line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            c = prev[x - bpp] if x >= bpp else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    image.append(bytes(line))
    prev = line
found = set()
for x in range(w):
    run, last = 0, None
    for line in image:
        px = line[x * bpp:x * bpp + 3]
        run = run + 1 if px == last else 1
        last = px
        if run == min_run:
            found.add("#%02x%02x%02x" % tuple(px))
print("\n".join(sorted(found)))
)py";
  RunResult r =
      RunCommand({"python3", "-c", kReader, png, std::to_string(rows), std::to_string(min_run)});
  std::set<std::string> colours;
  if (r.exit_code != 0) {
    ADD_FAILURE() << "cannot read " << png << ": " << r.err;
    return colours;
  }
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) colours.insert(line);
  return colours;
}

// The fill of every part of the bar at least `min_width` px wide.
std::set<std::string> BarFills(const std::string& dom, double min_width) {
  std::set<std::string> fills;
  std::regex re(R"re(<rect class="part" [^>]* width="([\d.]+)" [^>]*fill="(#[0-9a-f]{6})")re");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), re); it != std::sregex_iterator();
       ++it) {
    if (std::stod((*it)[1]) >= min_width) fills.insert((*it)[2]);
  }
  return fills;
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

// memtrimd over TLS with basic auth: URLs for Chromium (the credentials in
// the URL; Chromium sends them again for the page's stylesheet and icon)
// and for curl.
struct Site {
  int port = 0;
  std::string ca;  // memtrimd's self-signed certificate
  std::string origin() const { return "https://127.0.0.1:" + std::to_string(port); }
  std::string page(const std::string& path) const {
    return "https://alice:secret@127.0.0.1:" + std::to_string(port) + path;
  }
  HttpResponse Get(const std::string& path) const {
    return Curl(origin() + path, {"--cacert", ca, "-u", "alice:secret"});
  }
  std::optional<JsonValue> Report() const { return ParseJson(Get("/report?format=json").body); }
};

// The page at `path` and /report of the same sample: the page prints its
// sample's sequence, /report too. On a busy machine Chromium takes longer
// to start, load the page and exit (8 s measured beside other builds) than
// a sample interval, so /report is read over and over while it runs, each
// answer kept by its sequence, and the page is matched with the answer of
// its own sample; a sample the reads missed means another try.
std::optional<Matched> PageAndReport(const TempDir& dir, const Site& site,
                                     const std::string& path) {
  std::optional<Matched> got;
  WaitFor(
      [&] {
        std::map<std::string, JsonValue> reports;
        std::mutex mu;
        std::atomic<bool> done{false};
        std::thread reader([&] {
          // One curl at a time, as fast as they end: the poll of a deadline
          // (Chromium's exit), with nothing to wait for in between.
          while (!done) {
            auto report = site.Report();
            if (!report || report->Get("sequence") == nullptr) continue;
            std::lock_guard<std::mutex> lock(mu);
            reports.emplace(report->Get("sequence")->text, *report);
          }
        });
        Browser b = OpenInChromium(dir, site.page(path), "--dump-dom");
        done = true;
        reader.join();
        // And one read after: the page's sample may still be the latest.
        if (auto report = site.Report(); report && report->Get("sequence") != nullptr) {
          reports.emplace(report->Get("sequence")->text, *report);
        }
        if (b.exit_code != 0) return false;
        std::string seq = Attr(b.out, R"re(<body data-sequence="(\d+)")re");
        auto it = reports.find(seq);
        if (seq.empty() || it == reports.end()) return false;
        got = Matched{b.out, it->second, b};
        return true;
      },
      40s);
  return got;
}

class IncidentPageTest : public ::testing::Test {
 protected:
  TempDir dir_;
  // The files of the clients the test runs beside memtrimd (Chromium's
  // profiles, net logs and screenshots; the certificate curl is given):
  // not under dir_, which the node-mode memtrimd's --targets.match names.
  // Their paths are on those clients' command lines; under dir_, Chromium's
  // processes were matched and listed on the overview beside the test's
  // four targets.
  TempDir clients_dir_;
};

TEST_F(IncidentPageTest, ChromiumShowsTheReportsNumbersForAJvmPerJdkAndAGlibcProgram) {
  CertFiles cert;
  std::string why;
  if (!MakeCert(clients_dir_, "server", "memtrimd", nullptr, false, cert, why)) {
    GTEST_SKIP() << "openssl cannot make a test certificate: " << why;
  }
  // Memory limits for the fragmenter and the first JVM where this test may
  // make memory cgroups (root); declared before the processes, so that they
  // are removed after them.
  constexpr uint64_t kFragLimit = 192ull << 20, kJvmLimit = 256ull << 20;
  std::optional<MemoryCgroup> frag_cg, jvm_cg;
  if (IsRoot()) {
    frag_cg.emplace("memtrimd-page-glibc", kFragLimit);
    jvm_cg.emplace("memtrimd-page-jvm", kJvmLimit);
  }
  const bool limits = frag_cg && frag_cg->ok() && jvm_cg->ok();
  if (!limits) {
    std::cout << "[ NOTE     ] no memory cgroup ("
              << (frag_cg ? frag_cg->why() : std::string("not root"))
              << "): the limit is not checked\n";
  }

  SpawnOptions frag_options;
  frag_options.env = {std::string("LD_PRELOAD=") + AGENT_LIB, "MEMTRIMD_TRIM=1"};
  if (limits) frag_options.cgroup = frag_cg->dir();
  // Freed memory left in 8 thread arenas: glibc free memory a trim gives back.
  Process frag = StartFragmenter(dir_, {"--threads", "8", "--rounds", "2", "--burst-mib", "16"}, "",
                                 frag_options);
  ASSERT_TRUE(frag.running());
  std::vector<Process> jvms;
  for (const std::string& home : FindJdkHomes()) {
    SpawnOptions jvm_options;
    jvm_options.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
    if (limits && jvms.empty()) jvm_options.cgroup = jvm_cg->dir();
    jvms.push_back(StartJvm(dir_, {"-Xmx64m", "-XX:NativeMemoryTracking=summary"}, "BufferPools",
                            {"--direct", "8", "--direct-bytes", "1048576"}, jvm_options, home));
    ASSERT_TRUE(jvms.back().running()) << home;
  }
  // And one without the agent: its direct memory is known only from NMT.
  Process bare = StartJvm(dir_, {"-Xmx64m", "-XX:NativeMemoryTracking=summary"}, "BufferPools",
                          {"--direct", "4", "--direct-bytes", "1048576"});
  ASSERT_TRUE(bare.running());

  // TLS, basic auth and a strict Content-Security-Policy.
  // Beside the certificate, which it names relative to itself.
  WriteFile(clients_dir_ / "web.yml",
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
            "http_server_config:\n  headers:\n    Content-Security-Policy: default-src 'self'\n"
            "basic_auth_users:\n  alice: " +
                std::string(kSecretHash) + "\n");
  // Node mode over exactly these processes (their command lines name the
  // test's directory), glibc programs of any size.
  Memtrimd m({"--targets=node", "--targets.match=" + dir_.path(), "--targets.min-rss=1MiB",
              "--sample.interval=2s", "--smaps.interval=2s", "--jvm.interval=2s",
              "--trim.interval=4s", "--web.config.file=" + (clients_dir_ / "web.yml")});
  ASSERT_TRUE(m.started()) << m.log();
  const auto started = std::chrono::steady_clock::now();
  const Site site{m.port(), cert.crt};
  HttpResponse css = site.Get("/incident.css");
  EXPECT_EQ(css.status, 200);
  EXPECT_NE(css.headers.find("Content-Security-Policy: default-src 'self'"), std::string::npos);
  // A fixed text under a URL that names the build: kept across reloads.
  EXPECT_NE(css.headers.find("Cache-Control: max-age=86400, immutable"), std::string::npos)
      << css.headers;
  EXPECT_NE(site.Get("/").headers.find("Cache-Control: no-store"), std::string::npos);
  EXPECT_EQ(Curl(site.origin() + "/incident.css", {"--cacert", cert.crt}).status, 401)
      << "the stylesheet is behind the same authentication as the page";
  EXPECT_EQ(Curl(site.origin() + "/favicon.svg", {"--cacert", cert.crt}).status, 401);

  // Until every JVM's account has its NMT split and buffer pools (the bare
  // one: NMT Other), and the fragmenter has been trimmed once.
  std::optional<JsonValue> report;
  bool ready = WaitFor(
      [&] {
        report = site.Report();
        if (!report) return false;
        for (const Process& j : jvms) {
          const JsonValue* t = TargetIn(*report, j.pid());
          if (t == nullptr || t->Path({"rss_account", "nmt_known"}) == nullptr ||
              t->Path({"jvm", "direct_memory_bytes"}) == nullptr)
            return false;
        }
        const JsonValue* b = TargetIn(*report, bare.pid());
        if (b == nullptr || b->Path({"rss_account", "nmt_known"}) == nullptr ||
            b->Path({"jvm", "nmt_other_bytes"}) == nullptr)
          return false;
        const JsonValue* f = TargetIn(*report, frag.pid());
        const JsonValue* ft = TrimsIn(*report, frag.pid());
        return f != nullptr && f->Path({"rss_account", "glibc_free_bytes"}) != nullptr &&
               ft != nullptr && !ft->Get("recent")->items.empty();
      },
      50s);
  ASSERT_TRUE(ready) << site.Get("/report?format=json").body << m.log();

  std::vector<pid_t> pids = {frag.pid()};
  for (const Process& j : jvms) pids.push_back(j.pid());
  pids.push_back(bare.pid());
  for (pid_t pid : pids) {
    SCOPED_TRACE("pid " + std::to_string(pid));
    auto matched = PageAndReport(clients_dir_, site, "/?pid=" + std::to_string(pid));
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

    // The charts: one point per sample that read the target since memtrimd
    // found it (before its first sample: sample 1), up to the last one that
    // read it. The samples after the fragmenter's trims read the fragmenter
    // only, so the others have fewer points than the page's sequence.
    ASSERT_NE(target->Get("samples"), nullptr);
    ASSERT_NE(target->Get("sample_sequence"), nullptr);
    const std::string seq = target->Get("samples")->text;
    EXPECT_EQ(Attr(dom, R"re(data-last-sequence="(\d+)")re"), target->Get("sample_sequence")->text);
    EXPECT_LE(std::stoul(target->Get("sample_sequence")->text),
              std::stoul(matched->report.Get("sequence")->text));
    EXPECT_EQ(Attr(dom, R"re(data-first-sequence="(\d+)")re"), "1");
    EXPECT_EQ(Attr(dom, R"re(data-samples="(\d+)")re"), seq);
    std::string points =
        Attr(dom, R"re(data-series="rss" data-count="\d+"[^>]* points="([^"]*)")re");
    EXPECT_EQ(std::to_string(std::count(points.begin(), points.end(), ',')), seq);
    EXPECT_EQ(Attr(dom, R"re(data-series="rss" data-count="(\d+)")re"), seq);
    EXPECT_EQ(Attr(dom, R"re(data-series="rss" data-count="\d+" data-last="(\d+)")re"),
              target->Path({"process", "rss_bytes"})->text);

    // Under a limit: the bar is drawn against /report's limit, and the RSS
    // chart has the limit line at it, from the first sample on.
    const bool limited = limits && (pid == frag.pid() || pid == jvms.front().pid());
    const JsonValue* limit = target->Path({"cgroup", "limit_bytes"});
    if (limited) {
      ASSERT_NE(limit, nullptr);
      EXPECT_EQ(limit->text, std::to_string(pid == frag.pid() ? kFragLimit : kJvmLimit));
      EXPECT_EQ(Attr(dom, R"re(class="bar"[^>]*data-limit="(\d+)")re"), limit->text);
      EXPECT_NE(dom.find("<line class=\"limit\""), std::string::npos);
      EXPECT_EQ(Attr(dom, R"re(data-series="limit" data-count="\d+" data-last="(\d+)")re"),
                limit->text);
      EXPECT_EQ(Attr(dom, R"re(data-series="limit" data-count="(\d+)")re"), seq);
    }

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
      // What a trim could give back is never more than the glibc free
      // memory the account shows resident.
      if (const JsonValue* est = target->Path({"malloc", "trimmable_estimate_bytes"})) {
        EXPECT_LE(*est->Int(), *account->Get("glibc_free_bytes")->Int());
      }
    } else if (pid == bare.pid()) {
      // No pool without the agent: NMT Other, under its own name.
      EXPECT_EQ(dom.find("data-series=\"direct\""), std::string::npos);
      EXPECT_EQ(Attr(dom, R"re(data-series="nmt_other" data-count="\d+" data-last="(\d+)")re"),
                target->Path({"jvm", "nmt_other_bytes"})->text);
      EXPECT_NE(dom.find("not the direct buffer pool"), std::string::npos);
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

    // Nothing in the console (a blocked style, script or data: URL is a
    // console error); every request of the page went to memtrimd.
    EXPECT_EQ(ConsoleLines(matched->browser.log), std::vector<std::string>{});
    std::vector<std::string> requests = PageRequests(matched->browser.net_log, "https://127.0.0.1");
    ASSERT_FALSE(requests.empty());
    std::set<std::string> paths;
    for (const std::string& url : requests) {
      EXPECT_EQ(url.rfind(site.origin() + "/", 0), 0u) << url;
      // The net log marks a URL whose credentials it left out: "... (credentials redacted)".
      std::string path = url.substr(std::min(url.size(), site.origin().size()));
      paths.insert(path.substr(0, path.find_first_of(" ?")));
    }
    EXPECT_TRUE(paths.count("/incident.css")) << ::testing::PrintToString(requests);
    EXPECT_FALSE(std::regex_search(dom, std::regex(R"re((href|src)="[a-zA-Z][a-zA-Z+.-]*:)re")));
    EXPECT_FALSE(std::regex_search(dom, std::regex(R"re((href|src)="//)re")));
    EXPECT_EQ(dom.find("url("), std::string::npos);
    EXPECT_EQ(dom.find("style="), std::string::npos);
  }

  // The node overview: one row per target, each linking to its page.
  auto overview = PageAndReport(clients_dir_, site, "/");
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

  // For the pictures in docs/images: minutes of history rather than seconds.
  // Time passing is what is wanted here; there is nothing to poll for.
  const char* keep = std::getenv("MEMTRIMD_PAGE_SCREENSHOTS");
  const bool screenshots = keep != nullptr && *keep != '\0';
  if (const char* history = std::getenv("MEMTRIMD_PAGE_HISTORY_SECONDS");
      screenshots && history != nullptr) {
    std::this_thread::sleep_until(started + std::chrono::seconds(std::stoi(history)));
  }

  // Screenshots of a fragmented glibc program and of a JVM. In each, every
  // part of the bar at least 2.5 px wide (so that a whole column of pixels
  // lies inside it) is there in its own fill, in a column at least 26 of the
  // bar's 28 px tall: the policy blocked no colour, and nothing was drawn
  // black.
  for (auto [name, pid] : {std::pair{"glibc", frag.pid()}, std::pair{"jvm", jvms.front().pid()}}) {
    SCOPED_TRACE(name);
    const std::string url = site.page("/?pid=" + std::to_string(pid));
    const std::string png = clients_dir_ / (std::string("incident-page-") + name + ".png");
    Browser b = OpenInChromium(clients_dir_, url, "--screenshot=" + png);
    EXPECT_EQ(b.exit_code, 0) << b.log;
    EXPECT_EQ(ConsoleLines(b.log), std::vector<std::string>{});
    std::string image = ReadFile(png);
    ASSERT_GT(image.size(), 10000u) << name;
    EXPECT_EQ(image.substr(1, 3), "PNG");
    std::set<std::string> drawn = ColumnColours(png, 400, 26);
    std::set<std::string> fills =
        BarFills(OpenInChromium(clients_dir_, url, "--dump-dom").out, 2.5);
    EXPECT_FALSE(fills.empty());
    for (const std::string& fill : fills) EXPECT_TRUE(drawn.count(fill)) << fill << " not drawn";
    EXPECT_FALSE(drawn.count("#000000")) << "a part drawn black";
    EXPECT_TRUE(drawn.count("#fafafa")) << "the stylesheet's background is missing";
    if (screenshots) {
      fs::copy_file(png, std::string(keep) + "/" + fs::path(png).filename().string(),
                    fs::copy_options::overwrite_existing);
    }
  }
}

// Issue 25: "who holds the native memory" on the page. A preloaded
// site_holder whose hold_200, hold_50 and hold_10 hold 200, 50 and 10 MiB
// (sampling turned on before it takes them), watched with --collector.sites:
// Chromium shows the sites' table with hold_200 first and each row's bytes
// those of /report's "sites" in the same sample, what the sites explain of
// the account's "native", and the chart of the sites' last reads, under the
// same Content-Security-Policy as above.
class IncidentPageSitesTest : public ::testing::Test {
 protected:
  bool Printed(const std::string& word) {
    return ReadFile(out_).find(word + "\n") != std::string::npos;
  }
  TempDir dir_;
  std::string out_ = dir_ / "holder.out";
  std::string trigger_ = dir_ / "hold";
};

// A site's name as the serialised DOM prints it in a cell's text.
std::string DomText(const std::string& raw) {
  std::string out;
  for (char c : raw) {
    if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '&') {
      out += "&amp;";
    } else {
      out += c;
    }
  }
  return out;
}

TEST_F(IncidentPageSitesTest, ChromiumShowsTheSitesOfTheReportAndTheirChart) {
  SpawnOptions o;
  o.stdout_path = out_;
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Process holder({WorkloadBin("site_holder"), "1048576", trigger_}, o);
  ASSERT_TRUE(WaitFor([&] { return Printed("armed") || !holder.running(); }, 30s));
  ASSERT_TRUE(holder.running());
  WriteFile(dir_ / "web.yml",
            "http_server_config:\n  headers:\n    Content-Security-Policy: default-src 'self'\n");
  Memtrimd m({"--target.pid=" + std::to_string(holder.pid()), "--collector.sites",
              "--sites.interval=1s", "--sample.interval=3s", "--smaps.interval=3s",
              "--trim.interval=0", "--web.config.file=" + (dir_ / "web.yml")});
  ASSERT_TRUE(m.started()) << m.log();
  auto report = [&]() { return ParseJson(Curl(m.url("/report?format=json")).body); };
  // Sampling is on once the first read of the sites comes back; then the
  // holder takes its memory.
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = report();
        return r && r->Path({"targets"}) != nullptr && !r->Get("targets")->items.empty() &&
               r->Get("targets")->items[0].Path({"sites", "sites"}) != nullptr;
      },
      30s))
      << m.log();
  WriteFile(trigger_, "");
  ASSERT_TRUE(WaitFor([&] { return Printed("ready"); }, 30s));

  // The page and /report of one sample, once the three sites are in it and
  // the chart has two reads since. Samples 3 s apart leave Chromium time to
  // load the page before /report moves on to the next.
  std::optional<Matched> got;
  ASSERT_TRUE(WaitFor(
      [&] {
        Browser b = OpenInChromium(dir_, m.url("/"), "--dump-dom");
        if (b.exit_code != 0) return false;
        auto r = report();
        if (!r || r->Get("sequence") == nullptr) return false;
        if (Attr(b.out, R"re(<body data-sequence="(\d+)")re") != r->Get("sequence")->text)
          return false;
        const JsonValue* sites = r->Get("targets")->items[0].Path({"sites", "sites"});
        if (sites == nullptr || sites->items.size() < 3) return false;
        if (sites->items[2].Get("site")->text.find("hold_10") == std::string::npos) return false;
        const std::string reads = Attr(b.out, R"re(data-site-reads="(\d+)")re");
        if (reads.empty() || std::stoi(reads) < 2) return false;
        got = Matched{b.out, *r, b};
        return true;
      },
      90s))
      << m.log();
  const std::string& dom = got->dom;
  const JsonValue& target = got->report.Get("targets")->items[0];
  const JsonValue* sites = target.Path({"sites", "sites"});
  ASSERT_NE(sites, nullptr);

  // The table: hold_200 first, and every row /report's site with its bytes.
  EXPECT_EQ(sites->items[0].Get("site")->text.rfind("hold < hold_200 < main", 0), 0u);
  std::regex row(
      R"re(<tr data-site-rank="(\d+)" data-live-bytes="(\d+)" data-nmt-tracked="([01])"(?: data-resident-bytes="\d+")?><td class="l">([^<]*(?:&lt;[^<]*)*)</td>)re");
  std::vector<std::tuple<std::string, std::string, std::string>> rows;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), row); it != std::sregex_iterator();
       ++it) {
    rows.emplace_back((*it)[4], (*it)[2], (*it)[3]);
  }
  // The page lists the sites that hold something; /report also those whose
  // sampled allocations were all freed.
  std::vector<const JsonValue*> held;
  for (const JsonValue& s : sites->items) {
    if (*s.Get("live_bytes")->Int() > 0) held.push_back(&s);
  }
  ASSERT_EQ(rows.size(), held.size()) << dom;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const JsonValue& s = *held[i];
    EXPECT_EQ(std::get<0>(rows[i]), DomText(s.Get("site")->text)) << i;
    EXPECT_EQ(std::get<1>(rows[i]), s.Get("live_bytes")->text) << i;
    EXPECT_EQ(std::get<2>(rows[i]), s.Get("nmt_tracked")->boolean ? "1" : "0") << i;
  }
  EXPECT_EQ(std::get<0>(rows[0]), "hold &lt; hold_200 &lt; main");
  EXPECT_NEAR(std::stod(std::get<1>(rows[0])) / (1 << 20), 200.0, 20.0);
  // Not a JVM: against "native", no NMT column.
  EXPECT_EQ(Attr(dom, R"re(<table class="sites" data-part="([a-z_]+)")re"), "native");
  ASSERT_NE(target.Path({"rss_account", "native_bytes"}), nullptr);
  EXPECT_EQ(Attr(dom, R"re(data-part-bytes="(\d+)")re"),
            target.Path({"rss_account", "native_bytes"})->text);
  EXPECT_EQ(dom.find("NMT counts it"), std::string::npos);
  // What they explain: every site's bytes (none is NMT's), at least the
  // three rows', at most all sampled.
  const uint64_t explained =
      std::stoull(Attr(dom, R"re(class="sites-explain" data-explained-bytes="(\d+)")re"));
  uint64_t three = 0;
  for (std::size_t i = 0; i < 3; ++i) three += *sites->items[i].Get("live_bytes")->Int();
  EXPECT_GE(explained, three);
  EXPECT_LE(explained, static_cast<uint64_t>(*target.Path({"sites", "live_bytes"})->Int()));
  EXPECT_NE(dom.find("older allocations are not seen"), std::string::npos);
  const std::string reads = Attr(dom, R"re(data-site-reads="(\d+)")re");
  std::cout << "[ NOTE     ] sample " << got->report.Get("sequence")->text << ": hold_200 "
            << std::get<1>(rows[0]) << " B; the sites explain " << explained << " B of native "
            << target.Path({"rss_account", "native_bytes"})->text << " B; chart reads " << reads
            << "\n";

  // The chart: hold_200's line first, its last point this sample's bytes
  // (kept in KiB), and the rest dashed, a point per read.
  EXPECT_EQ(Attr(dom, R"re(data-series="other_sites" data-count="(\d+)")re"), reads);
  const std::string last =
      Attr(dom, R"re(data-series="site0" data-count="\d+" data-last="(\d+)")re");
  ASSERT_FALSE(last.empty()) << dom;
  EXPECT_NEAR(std::stod(last), sites->items[0].Get("live_bytes")->Number(), 512.0);
  EXPECT_NE(dom.find("hold &lt; hold_200 &lt; main: "), std::string::npos);
  EXPECT_EQ(ConsoleLines(got->browser.log), std::vector<std::string>{});
  EXPECT_EQ(dom.find("style="), std::string::npos);
}

// The same for a JVM with NMT, on every JDK found: NativeGrower's direct
// buffers, taken once sampling is on, are malloc'd by the JVM's own
// os::malloc (Unsafe.allocateMemory), which NMT counts. /report marks the
// site NMT's, and the page sets it apart: "in NMT" rather than a share of
// "outside NMT", and not among what the sites explain of it.
class IncidentPageSitesJvmTest : public ::testing::TestWithParam<std::string> {
 protected:
  TempDir dir_;
};

TEST_P(IncidentPageSitesJvmTest, DirectBuffersAreShownAsNmtsOwn) {
  StdinPipe in(dir_ / "grow.in");
  ASSERT_TRUE(in.ok());
  SpawnOptions o;
  o.stdin_path = in.path();
  o.stdout_path = dir_ / "grow.out";
  o.stderr_path = dir_ / "grow.err";
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Process jvm({GetParam() + "/bin/java", "-Xmx64m", "-XX:NativeMemoryTracking=summary",
               "-XX:MaxDirectMemorySize=1g", "-cp", JAVA_WORKLOADS_CLASSPATH, "NativeGrower"},
              o);
  auto printed = [&](const std::string& word) {
    return ReadFile(dir_ / "grow.out").find(word) != std::string::npos;
  };
  ASSERT_TRUE(WaitFor([&] { return printed("ready ") || !jvm.running(); }, 60s) && jvm.running())
      << ReadFile(dir_ / "grow.err");
  Memtrimd m({"--target.pid=" + std::to_string(jvm.pid()), "--collector.sites",
              "--sites.interval=1s", "--sample.interval=3s", "--smaps.interval=3s",
              "--jvm.interval=3s", "--trim.interval=0"});
  ASSERT_TRUE(m.started()) << m.log();
  auto report = [&]() { return ParseJson(Curl(m.url("/report?format=json")).body); };
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = report();
        return r && r->Get("targets") != nullptr && !r->Get("targets")->items.empty() &&
               r->Get("targets")->items[0].Path({"sites", "sites"}) != nullptr;
      },
      60s))
      << m.log();
  ASSERT_TRUE(in.Write("grow 67108864\n"));
  ASSERT_TRUE(WaitFor([&] { return printed("grown ") || !jvm.running(); }, 60s) && jvm.running())
      << ReadFile(dir_ / "grow.err");

  // The page and /report of one sample whose largest site holds the buffers
  // and whose account has NMT's parts.
  std::optional<Matched> got;
  ASSERT_TRUE(WaitFor(
      [&] {
        Browser b = OpenInChromium(dir_, m.url("/"), "--dump-dom");
        if (b.exit_code != 0) return false;
        auto r = report();
        if (!r || r->Get("sequence") == nullptr) return false;
        if (Attr(b.out, R"re(<body data-sequence="(\d+)")re") != r->Get("sequence")->text)
          return false;
        const JsonValue& t = r->Get("targets")->items[0];
        const JsonValue* sites = t.Path({"sites", "sites"});
        if (sites == nullptr || sites->items.empty() ||
            t.Path({"rss_account", "outside_nmt_bytes"}) == nullptr)
          return false;
        if (sites->items[0].Get("live_bytes")->Number() < 48.0 * (1 << 20)) return false;
        got = Matched{b.out, *r, b};
        return true;
      },
      90s))
      << m.log();
  const std::string& dom = got->dom;
  const JsonValue& target = got->report.Get("targets")->items[0];
  const JsonValue& top = target.Path({"sites", "sites"})->items[0];
  EXPECT_TRUE(top.Get("nmt_tracked")->boolean) << top.Get("site")->text;
  // The buffers, not a site beside them: 64 MiB in 1 MiB blocks, each kept
  // with probability 1 - e^-2 at the 512 KiB period (about 5 % error); how
  // close estimates come is sites_test.cc's question.
  EXPECT_GT(top.Get("live_bytes")->Number() / (1 << 20), 48.0);
  EXPECT_LT(top.Get("live_bytes")->Number() / (1 << 20), 96.0);

  EXPECT_EQ(Attr(dom, R"re(<table class="sites" data-part="([a-z_]+)")re"), "outside_nmt");
  EXPECT_EQ(Attr(dom, R"re(data-part-bytes="(\d+)")re"),
            target.Path({"rss_account", "outside_nmt_bytes"})->text);
  EXPECT_NE(dom.find("<th>NMT counts it</th>"), std::string::npos);
  EXPECT_EQ(Attr(dom, R"re(<tr data-site-rank="0" data-live-bytes="(\d+)")re"),
            top.Get("live_bytes")->text);
  EXPECT_EQ(Attr(dom, R"re(<tr data-site-rank="0" [^>]*data-nmt-tracked="([01])")re"), "1");
  EXPECT_TRUE(std::regex_search(
      dom, std::regex(R"re(<tr data-site-rank="0" [^>]*>.*?<td>in NMT</td><td>yes</td></tr>)re")))
      << dom;
  // What the sites explain of outside NMT leaves the buffers out.
  const uint64_t explained =
      std::stoull(Attr(dom, R"re(class="sites-explain" data-explained-bytes="(\d+)")re"));
  EXPECT_LE(explained, static_cast<uint64_t>(*target.Path({"sites", "live_bytes"})->Int()) -
                           static_cast<uint64_t>(*top.Get("live_bytes")->Int()));
  EXPECT_NE(dom.find("Sites NMT counts (the JVM's own malloc) hold "), std::string::npos);
  std::cout << "[ NOTE     ] " << top.Get("site")->text << ": " << top.Get("live_bytes")->text
            << " B, NMT's; the other sites explain " << explained << " B of outside NMT "
            << target.Path({"rss_account", "outside_nmt_bytes"})->text << " B\n";
  EXPECT_EQ(ConsoleLines(got->browser.log), std::vector<std::string>{});
}

INSTANTIATE_TEST_SUITE_P(Jdks, IncidentPageSitesJvmTest, ::testing::ValuesIn(FindJdkHomes()),
                         [](const ::testing::TestParamInfo<std::string>& home) {
                           return JdkTestName(home.param);
                         });

}  // namespace
}  // namespace memtrimd::testing

#include "daemon/web/http_server.h"

#include <gtest/gtest.h>

#include "daemon/web/head_guard.h"
#include "daemon/web/trim_api_guard.h"

namespace memtrimd {
namespace {

TEST(CivetwebPorts, JoinsPrometheusStyleAddresses) {
  EXPECT_EQ(CivetwebPorts({":8486"}), "8486");
  EXPECT_EQ(CivetwebPorts({"127.0.0.1:8486", "[::1]:8486"}), "127.0.0.1:8486,[::1]:8486");
}

TEST(KeepsConnection, FollowsTheConnectionHeaderThenTheVersion) {
  EXPECT_TRUE(KeepsConnection(std::nullopt, "1.1"));
  EXPECT_FALSE(KeepsConnection(std::nullopt, "1.0"));
  EXPECT_FALSE(KeepsConnection(std::nullopt, ""));
  EXPECT_FALSE(KeepsConnection("close", "1.1"));
  EXPECT_FALSE(KeepsConnection("Close", "1.1"));
  EXPECT_TRUE(KeepsConnection("keep-alive", "1.0"));
  EXPECT_TRUE(KeepsConnection("TE, Keep-Alive", "1.1"));
  EXPECT_TRUE(KeepsConnection(" \tKEEP-ALIVE\t ", "1.0"));
  // A header that names other options only: civetweb closes.
  EXPECT_FALSE(KeepsConnection("TE", "1.1"));
  EXPECT_FALSE(KeepsConnection("", "1.1"));
  EXPECT_FALSE(KeepsConnection("keep-alived, keep", "1.1"));
}

// What memtrimd answers for the requests civetweb parses but routes to no
// handler (and would close in silence).
TEST(ReplyToUnrouted, OptionsStarForeignTargetsAndTheRest) {
  auto r = ReplyToUnrouted("OPTIONS", "*", "1.1", false);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, 200);
  EXPECT_EQ(r->headers, "Allow: GET, HEAD\r\n");
  EXPECT_EQ(ReplyToUnrouted("OPTIONS", "*", "1.0", true)->headers, "Allow: GET, HEAD, POST\r\n");
  EXPECT_EQ(ReplyToUnrouted("GET", "*", "1.1", false)->code, 400);
  EXPECT_EQ(ReplyToUnrouted("GET", "http://127.0.0.1:1/metrics", "1.1", false)->code, 400);
  EXPECT_EQ(ReplyToUnrouted("GET", "HTTPS://example.com/", "1.1", false)->code, 400);
  // civetweb answered these itself: 505 for the version, 400 for a target
  // it finds malformed (an absolute URI without a path).
  EXPECT_FALSE(ReplyToUnrouted("OPTIONS", "*", "2.0", false));
  EXPECT_FALSE(ReplyToUnrouted("GET", "http://example.com", "1.1", false));
  EXPECT_FALSE(ReplyToUnrouted("GET", "nonsense", "1.1", false));
  EXPECT_FALSE(ReplyToUnrouted("GET", "/metrics", "1.1", false));
}

}  // namespace
}  // namespace memtrimd

namespace memtrimd {
namespace {

using std::chrono::milliseconds;
using TimePoint = std::chrono::steady_clock::time_point;

WorkerView WaitingSince(TimePoint t) {
  WorkerView w;
  w.waiting = true;
  w.since = t;
  return w;
}

// Nothing is let go while enough workers are free or serving, however long
// the others have waited; once too few are, every one that has waited
// min_age, and the guard looks again when the next one will have.
TEST(DueForRelease, OnlyWhenWorkersRunShortAndOnlyOldWaits) {
  const TimePoint t0 = std::chrono::steady_clock::now();
  HeadGuardOptions o;
  o.reserve = 2;
  o.min_age = milliseconds(250);
  o.resignal = milliseconds(100);
  std::vector<WorkerView> w = {WaitingSince(t0), WaitingSince(t0 + milliseconds(200)), WorkerView{},
                               WorkerView{}};
  ReleaseDecision d = DueForRelease(w, t0 + milliseconds(10'000), o);
  EXPECT_TRUE(d.release.empty()) << "two of four are free: no pressure";
  EXPECT_EQ(d.next_check, TimePoint::max());

  w[2] = WaitingSince(t0 + milliseconds(100));  // one free worker left
  d = DueForRelease(w, t0 + milliseconds(260), o);
  EXPECT_EQ(d.release, (std::vector<std::size_t>{0}));
  // Worker 2 (since 100 ms) becomes due at 350 ms, before the re-signal of
  // worker 0 at 360 ms.
  EXPECT_EQ(d.next_check, t0 + milliseconds(350));

  d = DueForRelease(w, t0 + milliseconds(460), o);
  EXPECT_EQ(d.release, (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(d.next_check, t0 + milliseconds(560));
}

// A worker signalled between two system calls (the signal interrupted
// nothing) is signalled again, but not before `resignal`.
TEST(DueForRelease, SignalsAgainAfterTheResignalDelay) {
  const TimePoint t0 = std::chrono::steady_clock::now();
  HeadGuardOptions o;
  o.reserve = 1;
  o.min_age = milliseconds(250);
  o.resignal = milliseconds(100);
  std::vector<WorkerView> w = {WaitingSince(t0)};
  w[0].signalled_at = t0 + milliseconds(300);
  ReleaseDecision d = DueForRelease(w, t0 + milliseconds(350), o);
  EXPECT_TRUE(d.release.empty());
  EXPECT_EQ(d.next_check, t0 + milliseconds(400));
  d = DueForRelease(w, t0 + milliseconds(400), o);
  EXPECT_EQ(d.release, (std::vector<std::size_t>{0}));
}

TEST(ManualTrimLimit, ThreeAtOnceThenOneEveryTenSeconds) {
  const TimePoint t0 = std::chrono::steady_clock::now();
  ManualTrimLimit limit;
  EXPECT_EQ(limit.Take(t0), std::nullopt);
  EXPECT_EQ(limit.Take(t0), std::nullopt);
  EXPECT_EQ(limit.Take(t0), std::nullopt);
  EXPECT_EQ(limit.Take(t0), std::chrono::seconds(10));
  EXPECT_EQ(limit.Take(t0 + milliseconds(2'500)), std::chrono::seconds(8)) << "rounded up";
  EXPECT_EQ(limit.Take(t0 + milliseconds(10'000)), std::nullopt);
  EXPECT_EQ(limit.Take(t0 + milliseconds(10'000)), std::chrono::seconds(10));
  // A request that did not trim gives its count back.
  limit.Refund();
  EXPECT_EQ(limit.Take(t0 + milliseconds(10'000)), std::nullopt);
  // A long pause refills the bucket to three, not more.
  const TimePoint later = t0 + std::chrono::hours(1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(limit.Take(later), std::nullopt) << i;
  EXPECT_NE(limit.Take(later), std::nullopt);
}

TEST(CrossOriginRefusal, BrowsersFromElsewhereOnly) {
  // curl, scripts, Prometheus: neither header.
  EXPECT_EQ(CrossOriginRefusal(std::nullopt, std::nullopt, "127.0.0.1:8486", false), std::nullopt);
  EXPECT_EQ(CrossOriginRefusal(std::nullopt, std::nullopt, std::nullopt, true), std::nullopt);
  // A page of memtrimd itself.
  EXPECT_EQ(CrossOriginRefusal("same-origin", "http://127.0.0.1:8486", "127.0.0.1:8486", false),
            std::nullopt);
  EXPECT_EQ(CrossOriginRefusal("none", std::nullopt, "node:8486", true), std::nullopt);
  EXPECT_EQ(CrossOriginRefusal(std::nullopt, "HTTPS://Node:8486", "node:8486", true), std::nullopt);
  // Another site's page: a form POST, a fetch.
  EXPECT_NE(CrossOriginRefusal("cross-site", "https://evil.example", "node:8486", true),
            std::nullopt);
  EXPECT_NE(CrossOriginRefusal("same-site", "http://node:3000", "node:8486", false), std::nullopt);
  // Sec-Fetch-Site decides when present, even if Origin would match.
  EXPECT_NE(CrossOriginRefusal("cross-site", "http://node:8486", "node:8486", false), std::nullopt);
  // Older browsers: Origin alone.
  EXPECT_NE(CrossOriginRefusal(std::nullopt, "https://evil.example", "node:8486", true),
            std::nullopt);
  EXPECT_NE(CrossOriginRefusal(std::nullopt, "null", "node:8486", false), std::nullopt);
  EXPECT_NE(CrossOriginRefusal(std::nullopt, "http://node:8486", "node:8486", true), std::nullopt)
      << "the same host over plain HTTP is another origin";
  EXPECT_NE(CrossOriginRefusal(std::nullopt, "http://node:8486", std::nullopt, false),
            std::nullopt);
  EXPECT_NE(CrossOriginRefusal(std::nullopt, "http://node:84861", "node:8486", false),
            std::nullopt);
}

}  // namespace
}  // namespace memtrimd

// What stands before a manual trim through POST /api/v1/trim besides the
// credentials: a rate limit, and the refusal of a request a browser sends
// from a page of another site.
//
// A trim pauses the target's allocations while glibc walks its arenas
// (docs/benchmarks.md, "Trim cost"), and --trim.max-per-minute caps only
// scheduled trims: without a limit, anyone holding the scrape credentials
// could trim a target in a loop. And a browser that has the credentials
// cached (a user who opened the incident page) sends them with a form POST
// any other site's page makes: memtrimd refuses what a browser marks as
// coming from elsewhere (Sec-Fetch-Site, Origin). Clients that send neither
// header (curl, scripts, Prometheus) are not browsers and are served.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace memtrimd {

// A bucket of `burst` trims that refills one every `every`: 3 at once, then
// one every 10 s, the 6 a minute --trim.max-per-minute allows scheduled
// trims by default.
class ManualTrimLimit {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ManualTrimLimit(int burst = 3, Clock::duration every = std::chrono::seconds(10));

  // nullopt: a trim may run now, and is counted. Else how long until one
  // may, in whole seconds rounded up (for Retry-After), at least 1.
  std::optional<std::chrono::seconds> Take(Clock::time_point now);
  // Gives back what Take counted, for a request that did not trim (no such
  // target, another trim running).
  void Refund();

 private:
  const double burst_;
  const Clock::duration every_;
  std::mutex mu_;
  double tokens_;             // GUARDED_BY(mu_)
  Clock::time_point last_{};  // GUARDED_BY(mu_): when tokens_ was last filled
};

// Why a request is a browser's from another origin, or nullopt when it is
// not: Sec-Fetch-Site (sent by every current browser) other than
// "same-origin" or "none", else an Origin whose scheme and host:port are not
// this server's (`host`, the Host header; `tls`, whether the request came
// over TLS). A header that is absent is nullopt.
std::optional<std::string> CrossOriginRefusal(std::optional<std::string_view> sec_fetch_site,
                                              std::optional<std::string_view> origin,
                                              std::optional<std::string_view> host, bool tls);

}  // namespace memtrimd

#include "daemon/web/trim_api_guard.h"

#include <algorithm>
#include <cmath>

#include "collectors/common/text.h"

namespace memtrimd {

ManualTrimLimit::ManualTrimLimit(int burst, Clock::duration every)
    : burst_(std::max(1, burst)), every_(every), tokens_(burst_) {}

std::optional<std::chrono::seconds> ManualTrimLimit::Take(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (last_ != Clock::time_point{} && now > last_) {
    tokens_ = std::min(burst_, tokens_ + std::chrono::duration<double>(now - last_).count() /
                                             std::chrono::duration<double>(every_).count());
  }
  last_ = std::max(last_, now);
  if (tokens_ >= 1.0) {
    tokens_ -= 1.0;
    return std::nullopt;
  }
  const double wait = (1.0 - tokens_) * std::chrono::duration<double>(every_).count();
  return std::chrono::seconds(std::max<long>(1, static_cast<long>(std::ceil(wait))));
}

void ManualTrimLimit::Refund() {
  std::lock_guard<std::mutex> lock(mu_);
  tokens_ = std::min(burst_, tokens_ + 1.0);
}

std::optional<std::string> CrossOriginRefusal(std::optional<std::string_view> sec_fetch_site,
                                              std::optional<std::string_view> origin,
                                              std::optional<std::string_view> host, bool tls) {
  if (sec_fetch_site) {
    // "none": the user's own action (typed, bookmarked); "same-origin": a
    // page of this server. "same-site" is another port or host of the same
    // site: another origin all the same.
    if (text::EqualsIgnoreCase(*sec_fetch_site, "same-origin") ||
        text::EqualsIgnoreCase(*sec_fetch_site, "none")) {
      return std::nullopt;
    }
    return "the request comes from another site's page (Sec-Fetch-Site: " +
           std::string(*sec_fetch_site) + ")";
  }
  if (!origin) return std::nullopt;
  const std::string_view scheme = tls ? "https://" : "http://";
  std::string_view o = *origin;
  if (host && o.size() > scheme.size() &&
      text::EqualsIgnoreCase(o.substr(0, scheme.size()), scheme) &&
      text::EqualsIgnoreCase(o.substr(scheme.size()), *host)) {
    return std::nullopt;
  }
  return "the request comes from a page of another origin (Origin: " + std::string(o) + ")";
}

}  // namespace memtrimd

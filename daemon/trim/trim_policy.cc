#include "daemon/trim/trim_policy.h"

#include <algorithm>

namespace memtrimd {

TrimPolicy::TrimPolicy(TrimPolicyConfig config, std::function<double()> uniform01)
    : config_(config), uniform01_(std::move(uniform01)), effective_(config.interval) {}

std::chrono::milliseconds TrimPolicy::Jittered(std::chrono::milliseconds d) {
  double j = std::clamp(config_.jitter, 0.0, 1.0);
  double u = std::clamp(uniform01_(), 0.0, 1.0);
  double factor = 1.0 + j * (2.0 * u - 1.0);  // in [1 - j, 1 + j]
  return std::chrono::milliseconds(static_cast<int64_t>(static_cast<double>(d.count()) * factor));
}

void TrimPolicy::Schedule(Clock::time_point from, std::chrono::milliseconds d) {
  next_due_ = from + Jittered(d);
}

void TrimPolicy::Reset(Clock::time_point now) {
  effective_ = config_.interval;
  unproductive_ = 0;
  failures_ = 0;
  in_progress_ = false;
  arena_after_last_trim_.reset();
  Schedule(now, config_.interval);
}

TrimDecision TrimPolicy::Decide(Clock::time_point now, const TrimInputs& in) {
  using Action = TrimDecision::Action;
  if (config_.interval.count() == 0 || in_progress_) return {Action::kWait, ""};
  // Growth since the last trim means there is something to give back again:
  // drop the backoff and trim at the base interval from now on.
  if (effective_ > config_.interval && arena_after_last_trim_ && in.arena_resident_bytes &&
      *in.arena_resident_bytes >= *arena_after_last_trim_ + config_.reset_growth_bytes) {
    effective_ = config_.interval;
    unproductive_ = 0;
    Schedule(now, std::chrono::milliseconds(0));
  }
  if (now < next_due_) return {Action::kWait, ""};
  auto skip = [&](std::string reason) {
    Schedule(now, effective_);
    return TrimDecision{Action::kSkip, std::move(reason)};
  };
  if (!in.target_up) return skip("no_target");
  if (!in.opted_in) return skip("not_opted_in");
  if (in.jvm_trims_itself && !config_.force_when_jvm_trims) return skip("jvm_trims_itself");
  if (!in.backend_available) return skip(in.backend_unavailable_reason);
  if (config_.min_limit_ratio) {
    if (!in.limit_bytes || *in.limit_bytes == 0) return skip("no_limit");
    double ratio = static_cast<double>(in.rss_bytes) / static_cast<double>(*in.limit_bytes);
    if (ratio < *config_.min_limit_ratio) return skip("below_limit_ratio");
  }
  return {Action::kTrim, "scheduled"};
}

void TrimPolicy::Begin(Clock::time_point now) {
  in_progress_ = true;
  // Until Finish, nothing else is due.
  next_due_ = now + config_.max_interval;
}

void TrimPolicy::Finish(Clock::time_point now, std::optional<int64_t> reclaimed,
                        std::optional<uint64_t> arena_resident_after) {
  in_progress_ = false;
  if (!reclaimed) {
    ++failures_;
    auto wait = config_.interval;
    for (int i = 0; i < failures_ && wait < config_.max_interval; ++i) wait *= 2;
    Schedule(now, std::min(wait, config_.max_interval));
    return;
  }
  failures_ = 0;
  arena_after_last_trim_ = arena_resident_after;
  if (*reclaimed < static_cast<int64_t>(config_.floor_bytes)) {
    if (++unproductive_ >= config_.unproductive_runs) {
      effective_ = std::min(effective_ * 2, config_.max_interval);
      unproductive_ = 0;
    }
  } else {
    unproductive_ = 0;
    effective_ = config_.interval;
  }
  Schedule(now, effective_);
}

}  // namespace memtrimd

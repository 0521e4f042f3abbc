#include "daemon/exposition/metrics_page.h"

#include "daemon/exposition/exposition.h"
#include "daemon/trim/trim_engine.h"

namespace memtrimd {

std::vector<std::string_view> MetricsText::Parts() const {
  std::vector<std::string_view> out{ages};
  for (const auto* part : {&trims, &process, &snapshot}) {
    if (*part != nullptr) out.emplace_back(**part);
  }
  return out;
}

std::string MetricsText::Joined() const {
  std::string out;
  for (std::string_view part : Parts()) out += part;
  return out;
}

MetricsText MetricsPage::Render() const {
  std::shared_ptr<const Snapshot> snap = store_.Latest();
  // Read before the figures it stands for: a change racing with this render
  // leaves a version that the next request sees as new.
  std::optional<uint64_t> trims_version;
  if (trims_ != nullptr) trims_version = trims_->MetricsVersion();
  auto shared = [](std::vector<prometheus::MetricFamily> families) {
    return std::make_shared<const std::string>(RenderText(families));
  };

  MetricsText page;
  page.ages = RenderText(AgeFamilies(snap.get(), std::chrono::steady_clock::now(), detail_));
  std::lock_guard<std::mutex> lock(mu_);
  // Refreshed under the lock: requests that arrive meanwhile want the same
  // text, and would otherwise each render it again.
  if (snapshot_text_ == nullptr || snapshot_key_ != snap) {
    snapshot_text_ = shared(SnapshotFamilies(snap.get(), detail_));
    snapshot_key_ = snap;
  }
  page.snapshot = snapshot_text_;
  if (trims_version) {
    if (trims_text_ == nullptr || trims_key_ != trims_version) {
      trims_text_ = shared(TrimFamilies(trims_->Stats(), detail_));
      trims_key_ = trims_version;
    }
    page.trims = trims_text_;
  }
  auto now = std::chrono::steady_clock::now();
  if (process_text_ == nullptr || now - process_read_at_ >= process_max_age_) {
    process_text_ = shared(SelfProcessFamilies());
    process_read_at_ = now;
  }
  page.process = process_text_;
  return page;
}

void MetricsPage::Prepare() const { (void)RenderGzip(); }

std::optional<std::string> MetricsPage::RenderGzip() const {
  MetricsText page = Render();
  std::optional<DeflatedPart> ages = DeflatePart(page.ages);
  if (!ages) return std::nullopt;
  std::vector<std::shared_ptr<const DeflatedPart>> cached;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // In page order, as MetricsText::Parts. Compressed under the lock: the
    // requests that arrive meanwhile want the same bytes.
    for (auto [text, gz] :
         {std::pair{&page.trims, &trims_gz_}, std::pair{&page.process, &process_gz_},
          std::pair{&page.snapshot, &snapshot_gz_}}) {
      if (*text == nullptr) continue;
      if (gz->of != *text || gz->part == nullptr) {
        std::optional<DeflatedPart> part = DeflatePart(**text);
        if (!part) return std::nullopt;
        gz->of = *text;
        gz->part = std::make_shared<const DeflatedPart>(std::move(*part));
      }
      cached.push_back(gz->part);
    }
  }
  std::vector<const DeflatedPart*> parts{&*ages};
  for (const auto& p : cached) parts.push_back(p.get());
  return GzipJoin(parts);
}

}  // namespace memtrimd

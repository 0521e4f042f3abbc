#include "daemon/analysis/allocator_findings.h"

#include "daemon/analysis/allocator_view.h"
#include "daemon/base/units.h"

namespace memtrimd {
namespace {

std::string Bytes(uint64_t b) { return FormatBytes(static_cast<double>(b)); }

constexpr uint64_t kFreeKeptFloor = 16ull << 20;

std::string Decay(const std::optional<int64_t>& ms) {
  if (!ms) return "unknown";
  return *ms < 0 ? "never" : std::to_string(*ms) + " ms";
}

std::string JemallocExplanation(const agent::AllocatorStats& a, uint64_t kept) {
  std::string why = "jemalloc keeps " + Bytes(kept) + " of freed pages (dirty " +
                    Bytes(a.Get("dirty").value_or(0)) + ", muzzy " +
                    Bytes(a.Get("muzzy").value_or(0)) +
                    ") that a purge gives back; it purges them itself only after dirty_decay_ms (" +
                    Decay(a.dirty_decay_ms) +
                    ") and only while the program keeps allocating. memtrimd's trims purge every "
                    "arena through the agent; to keep less between trims, lower the decay "
                    "(MALLOC_CONF=dirty_decay_ms:1000,muzzy_decay_ms:0).";
  if (auto retained = a.Get("retained"); retained && *retained > 0) {
    why += " Its retained " + Bytes(*retained) +
           " is address space jemalloc keeps for reuse, not resident memory.";
  }
  return why;
}

std::string TcmallocExplanation(const agent::AllocatorStats& a, uint64_t kept) {
  uint64_t caches = a.Get("central_cache_free").value_or(0) +
                    a.Get("transfer_cache_free").value_or(0) +
                    a.Get("thread_cache_free").value_or(0);
  return "tcmalloc's page heap keeps " + Bytes(kept) +
         " free that ReleaseFreeMemory gives back; by itself tcmalloc returns it only slowly "
         "(TCMALLOC_RELEASE_RATE, default 1: higher returns faster). memtrimd's trims call it "
         "through the agent. Its central, transfer and thread caches hold " +
         Bytes(caches) + " more free that no release call returns.";
}

}  // namespace

std::vector<RiskFinding> AssessAllocator(const Target& target, const TargetSample& s) {
  std::vector<RiskFinding> out;
  const AllocatorView v = ViewAllocator(target, s);
  const bool has_free = v.allocator == Allocator::kJemalloc || v.allocator == Allocator::kTcmalloc;
  if (has_free && s.allocator && v.measures.free_kept) {
    const uint64_t kept = *v.measures.free_kept;
    uint64_t rss = 0;
    if (s.process) rss = s.process->Rss();
    RiskFinding f;
    f.check = "free_kept_high";
    f.at_risk = kept >= kFreeKeptFloor && kept * 10 >= rss;
    f.explanation = v.allocator == Allocator::kJemalloc ? JemallocExplanation(*s.allocator, kept)
                                                        : TcmallocExplanation(*s.allocator, kept);
    out.push_back(std::move(f));
  }
  if (const auto& c = s.allocator_change) {
    RiskFinding f;
    f.check = "allocator_changed";
    f.at_risk = true;
    f.explanation = std::string("this program ran on ") + AllocatorName(c->before) +
                    " before it restarted (pid " + std::to_string(c->before_pid) +
                    "); it now runs on " + AllocatorName(c->after) +
                    ". Compare its RSS before and after in the dashboard's \"RSS by allocator\" "
                    "panel before keeping the change.";
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<RiskFinding> AllFindings(const Target& target, const TargetSample& s) {
  std::vector<RiskFinding> out = AssessJvmRisks(s);
  for (RiskFinding& f : AssessAllocator(target, s)) out.push_back(std::move(f));
  return out;
}

}  // namespace memtrimd

// Fuzz target: the preload agent's "allocator" body (agent::ParseAllocatorStats
// and agent::CommonMeasures) and the allocator words of its "trim" body
// (agent::ParseAgentTrim: allocator, call, free_kept_before/after,
// committed_before/after).
//
// Invariants: an accepted body ends in a newline (the agent's framing: a body
// without one was cut short) and names an object; the values written back in
// the agent's own layout, with an unknown key added (as a newer agent may
// send), parse to the same values, and without the last newline are refused;
// the common measures come only from the figures of the allocator named
// (none for unknown and musl, only held for mimalloc).
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/agent/client/agent_client.h"
#include "collectors/agent/client/allocator_stats.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

namespace agent = memtrimd::agent;
using memtrimd::Allocator;
using memtrimd::AllocatorName;
using std::to_string;

bool SameMeasures(const agent::AllocatorMeasures& a, const agent::AllocatorMeasures& b) {
  return a.allocated == b.allocated && a.held == b.held && a.free_kept == b.free_kept &&
         a.released == b.released;
}

void CheckStats(std::string_view body) {
  auto s = agent::ParseAllocatorStats(body);
  if (!s.ok()) return;
  FUZZ_CHECK(!body.empty() && body.back() == '\n');
  FUZZ_CHECK(!s->object.empty() && s->object.find('\n') == std::string::npos);
  std::string text = "allocator=" + std::string(AllocatorName(s->allocator)) +
                     "\nobject=" + s->object + "\nfuture_key=some words\n";
  for (const auto& [key, value] : s->bytes) text += key + "=" + to_string(value) + "\n";
  if (s->dirty_decay_ms) text += "dirty_decay_ms=" + to_string(*s->dirty_decay_ms) + "\n";
  if (s->muzzy_decay_ms) text += "muzzy_decay_ms=" + to_string(*s->muzzy_decay_ms) + "\n";
  auto again = agent::ParseAllocatorStats(text);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->allocator == s->allocator && again->object == s->object &&
             again->bytes == s->bytes && again->dirty_decay_ms == s->dirty_decay_ms &&
             again->muzzy_decay_ms == s->muzzy_decay_ms);
  FUZZ_CHECK(!agent::ParseAllocatorStats(text.substr(0, text.size() - 1)).ok());

  agent::AllocatorMeasures m = agent::CommonMeasures(*s);
  FUZZ_CHECK(SameMeasures(m, agent::CommonMeasures(*again)));
  if (s->allocator == Allocator::kUnknown || s->allocator == Allocator::kMusl) {
    FUZZ_CHECK(s->bytes.empty());
    FUZZ_CHECK(!m.allocated && !m.held && !m.free_kept && !m.released);
  }
  if (s->allocator == Allocator::kMimalloc) {
    FUZZ_CHECK(!m.allocated && !m.free_kept && !m.released);
    FUZZ_CHECK(m.held == s->Get("committed"));
  }
  if (s->allocator == Allocator::kTcmalloc) {
    FUZZ_CHECK(m.released == s->Get("pageheap_unmapped"));
    if (m.held) FUZZ_CHECK(*m.held <= *s->Get("heap_size"));
  }
}

void CheckTrim(std::string_view body) {
  auto t = agent::ParseAgentTrim(body);
  if (!t.ok()) return;
  FUZZ_CHECK(!body.empty() && body.back() == '\n');
  FUZZ_CHECK(!t->call.empty());
  std::string text =
      "duration_ns=" + to_string(t->duration.count()) + "\nrss_before=" + to_string(t->rss_before) +
      "\nrss_after=" + to_string(t->rss_after) + "\nresult=" + to_string(t->result) +
      "\nallocator=" + AllocatorName(t->allocator) + "\ncall=" + t->call + "\nfuture_key=x\n";
  if (t->free_kept_before) text += "free_kept_before=" + to_string(*t->free_kept_before) + "\n";
  if (t->free_kept_after) text += "free_kept_after=" + to_string(*t->free_kept_after) + "\n";
  if (t->committed_before) text += "committed_before=" + to_string(*t->committed_before) + "\n";
  if (t->committed_after) text += "committed_after=" + to_string(*t->committed_after) + "\n";
  auto again = agent::ParseAgentTrim(text);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->allocator == t->allocator && again->call == t->call &&
             again->free_kept_before == t->free_kept_before &&
             again->free_kept_after == t->free_kept_after &&
             again->committed_before == t->committed_before &&
             again->committed_after == t->committed_after && again->result == t->result);
  FUZZ_CHECK(!agent::ParseAgentTrim(text.substr(0, text.size() - 1)).ok());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body = memtrimd::fuzz::AsText(data, size);
  CheckStats(body);
  CheckTrim(body);
  return 0;
}

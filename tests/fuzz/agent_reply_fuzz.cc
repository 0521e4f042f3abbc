// Fuzz target: the preload agent's answer bodies, "key=value\n" lines
// (agent::ParseAgentTrim for "trim", agent::ParseMallinfo2 for
// "mallinfo2").
//
// Invariants: an accepted body ends in a newline (the agent's framing: a
// body without one was cut short); a trim's duration and result are
// non-negative; the values written back in the agent's own layout (and
// with an unknown key added, as a newer agent may send) parse to the same
// values.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/agent/client/agent_client.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace agent = memtrimd::agent;
  using std::to_string;
  std::string_view body = memtrimd::fuzz::AsText(data, size);

  auto trim = agent::ParseAgentTrim(body);
  if (trim.ok()) {
    FUZZ_CHECK(!body.empty() && body.back() == '\n');
    FUZZ_CHECK(trim->duration.count() >= 0 && trim->result >= 0);
    std::string text = "duration_ns=" + to_string(trim->duration.count()) +
                       "\nrss_before=" + to_string(trim->rss_before) +
                       "\nrss_after=" + to_string(trim->rss_after) +
                       "\nfuture_key=x\nresult=" + to_string(trim->result) + "\n";
    auto again = agent::ParseAgentTrim(text);
    FUZZ_CHECK(again.ok());
    FUZZ_CHECK(again->duration == trim->duration && again->rss_before == trim->rss_before &&
               again->rss_after == trim->rss_after && again->result == trim->result);
    // Cut short: the last digit's line without its newline.
    FUZZ_CHECK(!agent::ParseAgentTrim(text.substr(0, text.size() - 1)).ok());
  }

  auto info = agent::ParseMallinfo2(body);
  if (info.ok()) {
    FUZZ_CHECK(!body.empty() && body.back() == '\n');
    const agent::Mallinfo2& m = *info;
    std::string text = "arena=" + to_string(m.arena) + "\nordblks=" + to_string(m.ordblks) +
                       "\nsmblks=" + to_string(m.smblks) + "\nhblks=" + to_string(m.hblks) +
                       "\nhblkhd=" + to_string(m.hblkhd) + "\nusmblks=" + to_string(m.usmblks) +
                       "\nfsmblks=" + to_string(m.fsmblks) + "\nuordblks=" + to_string(m.uordblks) +
                       "\nfordblks=" + to_string(m.fordblks) +
                       "\nkeepcost=" + to_string(m.keepcost) + "\nfuture_key=1\n";
    auto again = agent::ParseMallinfo2(text);
    FUZZ_CHECK(again.ok());
    FUZZ_CHECK(again->arena == m.arena && again->ordblks == m.ordblks &&
               again->smblks == m.smblks && again->hblks == m.hblks && again->hblkhd == m.hblkhd &&
               again->usmblks == m.usmblks && again->fsmblks == m.fsmblks &&
               again->uordblks == m.uordblks && again->fordblks == m.fordblks &&
               again->keepcost == m.keepcost);
  }
  return 0;
}

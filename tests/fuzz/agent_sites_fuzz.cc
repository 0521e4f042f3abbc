// Fuzz target: the agent's "sites" body (agent::ParseAgentSites), the
// largest answer memtrimd reads from a target's agent.
//
// Invariants: an accepted body ends in a newline; it has exactly as many
// stacks as its stacks= line says, none with more than 256 addresses, and
// ("sites live") exactly live_listed= live lines, each of a stack listed;
// the values written back in the agent's own layout, with an unknown key
// added (as a newer agent may send), parse to the same values; the same
// text without its last newline, with one stack line fewer, or with one
// live line more than live_listed= says, is refused.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "collectors/agent/client/agent_sites.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string StackLine(const memtrimd::agent::AgentStack& s) {
  using std::to_string;
  const memtrimd::agent::SiteValues& v = s.values;
  std::string line = "stack " + to_string(v.live_samples) + " " + to_string(v.live_bytes) + " " +
                     to_string(v.live_objects) + " " + to_string(v.alloc_samples) + " " +
                     to_string(v.alloc_bytes) + " " + to_string(v.alloc_objects);
  for (uint64_t pc : s.pcs) line += " " + Hex(pc);
  return line + "\n";
}

std::string LiveLine(const memtrimd::agent::LiveSample& l) {
  using std::to_string;
  return "live " + to_string(l.stack) + " " + Hex(l.ptr) + " " + to_string(l.size) + " " +
         to_string(l.weight) + "\n";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace agent = memtrimd::agent;
  using std::to_string;
  std::string_view body = memtrimd::fuzz::AsText(data, size);

  auto s = agent::ParseAgentSites(body);
  if (!s.ok()) return 0;
  FUZZ_CHECK(!body.empty() && body.back() == '\n');
  for (const agent::AgentStack& st : s->stacks) FUZZ_CHECK(st.pcs.size() <= 256);
  FUZZ_CHECK(s->live.size() == (s->has_live ? s->live_listed : 0));
  for (const agent::LiveSample& l : s->live) FUZZ_CHECK(l.stack < s->stacks.size());
  std::string head =
      "on=" + to_string(s->on ? 1 : 0) + "\nperiod=" + to_string(s->period) +
      "\ngeneration=" + to_string(s->generation) + "\nstarted_ns=" + to_string(s->started_ns) +
      "\nsamples=" + to_string(s->samples) + "\nfuture_key=x" +
      "\nlive_samples=" + to_string(s->live_samples) +
      "\ndropped_live=" + to_string(s->dropped_live) +
      "\ndropped_stacks=" + to_string(s->dropped_stacks) +
      "\nsampler_bytes=" + to_string(s->sampler_bytes) +
      "\nhooked_objects=" + to_string(s->hooked_objects) +
      (s->hooks_counted ? "\nhooked_entries=" + to_string(s->hooked_entries) +
                              "\nunhooked_objects=" + to_string(s->unhooked_objects)
                        : "") +
      (s->truncated ? "\ntruncated=1" : "") +
      (s->has_live
           ? "\nlive_seen=" + to_string(s->live_seen) + "\nlive_listed=" + to_string(s->live_listed)
           : "") +
      "\nstacks=";
  std::string lines;
  for (const agent::AgentStack& st : s->stacks) lines += StackLine(st);
  std::string live;
  for (const agent::LiveSample& l : s->live) live += LiveLine(l);
  lines += live;
  std::string text = head + to_string(s->stacks.size()) + "\n" + lines;
  auto again = agent::ParseAgentSites(text);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(
      again->on == s->on && again->period == s->period && again->generation == s->generation &&
      again->started_ns == s->started_ns && again->samples == s->samples &&
      again->live_samples == s->live_samples && again->dropped_live == s->dropped_live &&
      again->dropped_stacks == s->dropped_stacks && again->sampler_bytes == s->sampler_bytes &&
      again->hooked_objects == s->hooked_objects && again->truncated == s->truncated &&
      again->hooks_counted == s->hooks_counted && again->hooked_entries == s->hooked_entries &&
      again->unhooked_objects == s->unhooked_objects && again->stacks.size() == s->stacks.size() &&
      again->has_live == s->has_live && again->live_seen == s->live_seen &&
      again->live.size() == s->live.size());
  for (std::size_t i = 0; i < s->live.size(); ++i) {
    FUZZ_CHECK(LiveLine(again->live[i]) == LiveLine(s->live[i]));
  }
  if (!s->live.empty()) {
    FUZZ_CHECK(!agent::ParseAgentSites(text + LiveLine(s->live.back())).ok());
  }
  for (std::size_t i = 0; i < s->stacks.size(); ++i) {
    FUZZ_CHECK(StackLine(again->stacks[i]) == StackLine(s->stacks[i]));
  }
  FUZZ_CHECK(!agent::ParseAgentSites(text.substr(0, text.size() - 1)).ok());
  if (!s->stacks.empty()) {
    std::string fewer = head + to_string(s->stacks.size() + 1) + "\n" + lines;
    FUZZ_CHECK(!agent::ParseAgentSites(fewer).ok());
  }
  return 0;
}

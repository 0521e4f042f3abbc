#include "collectors/agent/client/agent_sites.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "collectors/agent/agent_protocol.h"
#include "collectors/agent/client/key_values.h"
#include "collectors/common/text.h"

namespace memtrimd::agent {

namespace {

constexpr std::string_view kStackPrefix = AGENT_SITES_STACK;

// The stack lines are 32 addresses at most in today's agent; a longer line
// is kept (a newer agent may walk deeper) up to this many, the frames a
// profile keeps of a stack (site_profile.cc): the answer is the target's
// own, and what is parsed of it is held until the profile is built.
constexpr std::size_t kMaxFrames = 64;

// The agent keeps 4096 stacks (STACK_ROWS); twice that for a newer one.
// With kMaxFrames, what is parsed of one answer stays under 5 MiB however
// its 4 MiB are shaped (short stack lines would otherwise cost 4 times
// their bytes).
constexpr uint64_t kMaxStacks = 8192;

Status ParseStackLine(std::string_view line, AgentStack& out) {
  std::size_t field = 0;
  Status error;
  std::array<uint64_t*, 6> counts = {&out.values.live_samples, &out.values.live_bytes,
                                     &out.values.live_objects, &out.values.alloc_samples,
                                     &out.values.alloc_bytes,  &out.values.alloc_objects};
  std::size_t pos = 0;
  while (pos <= line.size() && error.ok()) {
    std::size_t end = line.find(' ', pos);
    if (end == std::string_view::npos) end = line.size();
    std::string_view word = line.substr(pos, end - pos);
    pos = end + 1;
    if (word.empty()) {
      error = Status(ErrorCode::kParseError, "agent sites: empty field in a stack line");
      break;
    }
    if (field == 0) {
      if (word != kStackPrefix) error = Status(ErrorCode::kParseError, "agent sites: not a stack");
    } else if (field <= counts.size()) {
      std::optional<uint64_t> v = text::ParseUint(word);
      if (!v) {
        error = Status(ErrorCode::kParseError, "agent sites: bad count in a stack line");
      } else {
        *counts[field - 1] = *v;
      }
    } else if (out.pcs.size() < kMaxFrames) {
      std::optional<uint64_t> pc = text::ParseHex(word);
      if (!pc) {
        error = Status(ErrorCode::kParseError, "agent sites: bad address in a stack line");
      } else {
        out.pcs.push_back(*pc);
      }
    }
    ++field;
    if (end == line.size()) break;
  }
  if (error.ok() && field < 1 + counts.size()) {
    error = Status(ErrorCode::kParseError, "agent sites: stack line with too few fields");
  }
  return error;
}

constexpr std::string_view kLivePrefix = AGENT_SITES_LIVE " ";

// "live <stack> <ptr> <size> <weight>": exactly four fields after the word.
Status ParseLiveLine(std::string_view line, uint64_t stacks, LiveSample& out) {
  std::array<std::string_view, 4> words;
  std::string_view rest = line.substr(kLivePrefix.size());
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::size_t end = rest.find(' ');
    if ((end == std::string_view::npos) != (i + 1 == words.size())) {
      return Status(ErrorCode::kParseError, "agent sites: live line without four fields");
    }
    words[i] = rest.substr(0, end);
    if (words[i].empty()) {
      return Status(ErrorCode::kParseError, "agent sites: empty field in a live line");
    }
    if (end != std::string_view::npos) rest = rest.substr(end + 1);
  }
  std::optional<uint64_t> stack = text::ParseUint(words[0]);
  std::optional<uint64_t> ptr = text::ParseHex(words[1]);
  std::optional<uint64_t> size = text::ParseUint(words[2]);
  std::optional<uint64_t> weight = text::ParseUint(words[3]);
  if (!stack || !ptr || !size || !weight) {
    return Status(ErrorCode::kParseError, "agent sites: bad number in a live line");
  }
  if (*stack >= stacks) {
    return Status(ErrorCode::kParseError, "agent sites: live line of stack " +
                                              std::to_string(*stack) +
                                              ", stacks=" + std::to_string(stacks));
  }
  out = LiveSample{static_cast<uint32_t>(*stack), *ptr, *size, *weight};
  return Status::Ok();
}

constexpr std::string_view kJavaPrefix = AGENT_SITES_JAVA " ";

// The agent's %XX escapes undone (agent_java.c escapes space and below,
// '%' and DEL and above); nullopt for a bad escape.
std::optional<std::string> Unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    std::optional<uint64_t> v = text::ParseHex(s.substr(i + 1, 2));
    if (!v) return std::nullopt;
    out += static_cast<char>(*v);
    i += 2;
  }
  return out;
}

// "java <frame> <line> <name> <file>": exactly four fields after the word;
// file "-" when unknown.
Status ParseJavaLine(std::string_view line, symbols::JavaFrameName& out) {
  std::array<std::string_view, 4> words;
  std::string_view rest = line.substr(kJavaPrefix.size());
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::size_t end = rest.find(' ');
    if ((end == std::string_view::npos) != (i + 1 == words.size())) {
      return Status(ErrorCode::kParseError, "agent sites: java line without four fields");
    }
    words[i] = rest.substr(0, end);
    if (words[i].empty()) {
      return Status(ErrorCode::kParseError, "agent sites: empty field in a java line");
    }
    if (end != std::string_view::npos) rest = rest.substr(end + 1);
  }
  std::optional<uint64_t> frame = text::ParseHex(words[0]);
  std::optional<uint64_t> number = text::ParseUint(words[1]);
  std::optional<std::string> name = Unescape(words[2]);
  std::optional<std::string> file = Unescape(words[3]);
  if (!frame || !symbols::IsJavaFrame(*frame) || !number || *number > UINT32_MAX || !name ||
      !file) {
    return Status(ErrorCode::kParseError, "agent sites: bad field in a java line");
  }
  out.frame = *frame;
  out.line = static_cast<uint32_t>(*number);
  out.name = std::move(*name);
  out.file = *file == "-" ? std::string() : std::move(*file);
  return Status::Ok();
}

}  // namespace

Result<AgentSites> ParseAgentSites(std::string_view body) {
  if (body.empty() || body.back() != '\n') {
    return Status(ErrorCode::kParseError, "agent sites: answer cut short");
  }
  // The key=value lines come first; the stack lines after them.
  // (and the live lines after those: with no stack listed, after the head).
  std::size_t stacks_at = body.size();
  if (body.starts_with("stack ") || body.starts_with(kLivePrefix) ||
      body.starts_with(kJavaPrefix)) {
    stacks_at = 0;
  } else {
    for (std::string_view first :
         {"\nstack ", "\n" AGENT_SITES_LIVE " ", "\n" AGENT_SITES_JAVA " "}) {
      if (std::size_t p = body.find(first); p != std::string_view::npos) {
        stacks_at = std::min(stacks_at, p + 1);
      }
    }
  }
  static constexpr std::array<std::string_view, 20> kKeys = {AGENT_KEYS_SITES,
                                                             AGENT_KEYS_SITES_HOOKS};
  std::array<std::optional<uint64_t>, kKeys.size()> values{};
  std::string_view head = body.substr(0, stacks_at);
  if (head.empty()) {
    return Status(ErrorCode::kParseError, "agent sites: no header");
  }
  Status st = ParseKeyValues(head, kKeys, values, 11, "agent sites");
  if (!st.ok()) return st;
  AgentSites out;
  out.on = *values[0] != 0;
  out.period = *values[1];
  out.generation = *values[2];
  out.started_ns = *values[3];
  out.samples = *values[4];
  out.live_samples = *values[5];
  out.dropped_live = *values[6];
  out.dropped_stacks = *values[7];
  out.sampler_bytes = *values[8];
  out.hooked_objects = *values[9];
  out.truncated = values[11].value_or(0) != 0;
  out.base_period = values[12].value_or(out.period);
  out.max_rate = values[13].value_or(0);
  out.raised = values[14].value_or(0);
  out.lease_s = values[15].value_or(0);
  out.lease_left_ms = values[16].value_or(0);
  out.lease_ended = values[17].value_or(0);
  // Both or neither: one count alone is no statement about the hooks.
  out.hooks_counted = values[18].has_value() && values[19].has_value();
  out.hooked_entries = out.hooks_counted ? *values[18] : 0;
  out.unhooked_objects = out.hooks_counted ? *values[19] : 0;
  static constexpr std::array<std::string_view, 2> kLiveKeys = {AGENT_KEYS_SITES_LIVE};
  std::array<std::optional<uint64_t>, kLiveKeys.size()> live_values{};
  st = ParseKeyValues(head, kLiveKeys, live_values, 0, "agent sites");
  if (!st.ok()) return st;
  out.has_live = live_values[0].has_value() && live_values[1].has_value();
  out.live_seen = live_values[0].value_or(0);
  out.live_listed = live_values[1].value_or(0);
  if (out.live_listed > kMaxLiveSamples) {
    return Status(ErrorCode::kParseError,
                  "agent sites: live_listed=" + std::to_string(out.live_listed) +
                      ", more than memtrimd keeps");
  }
  static constexpr std::array<std::string_view, 5> kJavaKeys = {AGENT_KEYS_SITES_JAVA};
  std::array<std::optional<uint64_t>, kJavaKeys.size()> java_values{};
  st = ParseKeyValues(head, kJavaKeys, java_values, 0, "agent sites");
  if (!st.ok()) return st;
  out.java_counted = java_values[0].has_value() && java_values[4].has_value();
  out.java_frames = java_values[0].value_or(0) != 0;
  out.java_ids = java_values[1].value_or(0);
  out.java_walks = java_values[2].value_or(0);
  out.java_walks_empty = java_values[3].value_or(0);
  const uint64_t java_names = out.java_counted ? *java_values[4] : 0;
  if (java_names > kMaxJavaNames) {
    return Status(ErrorCode::kParseError, "agent sites: java_names=" + std::to_string(java_names) +
                                              ", more than memtrimd keeps");
  }
  // A java line takes at least 14 bytes ("java 8 0 a -\n").
  out.java.reserve(std::min<uint64_t>(java_names, (body.size() - stacks_at) / 14 + 1));
  const uint64_t expected = *values[10];
  if (expected > kMaxStacks) {
    return Status(ErrorCode::kParseError, "agent sites: stacks=" + std::to_string(expected) +
                                              ", more than an agent keeps (" +
                                              std::to_string(kMaxStacks) + ")");
  }
  // Reserve no more than the body can hold (a line is at least 20 bytes), so
  // a lying count costs nothing.
  out.stacks.reserve(std::min<uint64_t>(expected, (body.size() - stacks_at) / 20 + 1));
  // Live lines take at least 13 bytes each ("live 0 0 0 0\n").
  if (out.has_live) {
    out.live.reserve(std::min<uint64_t>(out.live_listed, (body.size() - stacks_at) / 13 + 1));
  }
  Status error;
  text::ForEachLineIn(body.substr(stacks_at), [&](std::string_view line) {
    if (!error.ok() || line.empty()) return;
    if (line.starts_with(kJavaPrefix)) {
      // After every stack and live line, and only as many as announced.
      if (out.java.size() >= java_names) {
        error = Status(ErrorCode::kParseError, "agent sites: more java lines than java_names=" +
                                                   std::to_string(java_names));
        return;
      }
      symbols::JavaFrameName j;
      error = ParseJavaLine(line, j);
      if (error.ok()) out.java.push_back(std::move(j));
      return;
    }
    if (!out.java.empty()) {
      error = Status(ErrorCode::kParseError, "agent sites: a stack or live line after java lines");
      return;
    }
    if (line.starts_with(kLivePrefix)) {
      // After every stack line, and only when the head announced them.
      if (!out.has_live || out.live.size() >= out.live_listed) {
        error = Status(ErrorCode::kParseError, "agent sites: more live lines than live_listed=" +
                                                   std::to_string(out.live_listed));
        return;
      }
      LiveSample l;
      error = ParseLiveLine(line, expected, l);
      if (error.ok()) out.live.push_back(l);
      return;
    }
    if (!out.live.empty()) {
      error = Status(ErrorCode::kParseError, "agent sites: a stack line after the live lines");
      return;
    }
    if (out.stacks.size() >= expected) {
      error = Status(ErrorCode::kParseError,
                     "agent sites: more stack lines than stacks=" + std::to_string(expected));
      return;
    }
    AgentStack s;
    error = ParseStackLine(line, s);
    if (error.ok()) out.stacks.push_back(std::move(s));
  });
  if (!error.ok()) return error;
  if (out.stacks.size() != expected) {
    return Status(ErrorCode::kParseError, "agent sites: " + std::to_string(out.stacks.size()) +
                                              " stack lines, stacks=" + std::to_string(expected));
  }
  if (out.java.size() != java_names) {
    return Status(ErrorCode::kParseError,
                  "agent sites: " + std::to_string(out.java.size()) +
                      " java lines, java_names=" + std::to_string(java_names));
  }
  if (out.has_live && out.live.size() != out.live_listed) {
    return Status(ErrorCode::kParseError,
                  "agent sites: " + std::to_string(out.live.size()) +
                      " live lines, live_listed=" + std::to_string(out.live_listed));
  }
  return out;
}

Result<SamplingStarted> ParseSamplingStarted(std::string_view body) {
  static constexpr std::array<std::string_view, 7> kKeys = {AGENT_KEYS_SAMPLING_ON};
  std::array<std::optional<uint64_t>, kKeys.size()> values{};
  Status st = ParseKeyValues(body, kKeys, values, 4, "agent sampling on");
  if (!st.ok()) return st;
  return SamplingStarted{
      *values[0], *values[1], *values[2], *values[3], values[4].value_or(0), values[5].value_or(0),
      values[6]};
}

Result<bool> ParseSamplingStopped(std::string_view body) {
  static constexpr std::array<std::string_view, 1> kKeys = {AGENT_KEYS_SAMPLING_OFF};
  std::array<std::optional<uint64_t>, kKeys.size()> values{};
  Status st = ParseKeyValues(body, kKeys, values, kKeys.size(), "agent sampling off");
  if (!st.ok()) return st;
  if (*values[0] > 1)
    return Status(ErrorCode::kParseError, "agent sampling off: was_on not 0 or 1");
  return *values[0] == 1;
}

}  // namespace memtrimd::agent

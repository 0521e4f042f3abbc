#include "collectors/agent/client/allocator_stats.h"

#include <array>
#include <limits>
#include <span>
#include <vector>

#include "collectors/agent/agent_protocol.h"
#include "collectors/common/text.h"

namespace memtrimd::agent {
namespace {

// The figures the agent sends for each allocator (agent_protocol.h). Others
// are ignored: a newer agent may add some, and a figure that belongs to
// another allocator would mean something else here.
constexpr std::array<std::string_view, 5> kGlibcKeys = {AGENT_KEYS_ALLOCATOR_GLIBC};
constexpr std::array<std::string_view, 8> kJemallocKeys = {AGENT_KEYS_ALLOCATOR_JEMALLOC};
constexpr std::array<std::string_view, 7> kTcmallocKeys = {AGENT_KEYS_ALLOCATOR_TCMALLOC};
constexpr std::array<std::string_view, 2> kMimallocKeys = {AGENT_KEYS_ALLOCATOR_MIMALLOC};

std::span<const std::string_view> KeysOf(Allocator a) {
  switch (a) {
    case Allocator::kGlibc:
      return kGlibcKeys;
    case Allocator::kJemalloc:
      return kJemallocKeys;
    case Allocator::kTcmalloc:
      return kTcmallocKeys;
    case Allocator::kMimalloc:
      return kMimallocKeys;
    case Allocator::kUnknown:
    case Allocator::kMusl:
      break;
  }
  return {};
}

// A decimal int64 with an optional '-' (jemalloc's decay times are ssize_t;
// -1 means decay never purges).
std::optional<int64_t> ParseInt(std::string_view s) {
  const bool negative = !s.empty() && s.front() == '-';
  if (negative) s.remove_prefix(1);
  std::optional<uint64_t> v = text::ParseUint(s);
  if (!v) return std::nullopt;
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (!negative) {
    if (*v > kMax) return std::nullopt;
    return static_cast<int64_t>(*v);
  }
  if (*v > kMax + 1) return std::nullopt;
  return *v == kMax + 1 ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(*v);
}

Status Error(std::string what) {
  return Status(ErrorCode::kParseError, "agent allocator: " + std::move(what));
}

struct Line {
  std::string_view key, value;
};

// a + b, absent when either is, or when the sum does not fit.
std::optional<uint64_t> Sum(std::optional<uint64_t> a, std::optional<uint64_t> b) {
  if (!a || !b || *a > std::numeric_limits<uint64_t>::max() - *b) return std::nullopt;
  return *a + *b;
}

}  // namespace

Result<AllocatorStats> ParseAllocatorStats(std::string_view body) {
  // Every line ends in '\n': without it the answer was cut short and the last
  // number may be missing digits.
  if (body.empty() || body.back() != '\n') return Error("answer cut short");
  std::vector<Line> lines;
  Status error;
  text::ForEachLineIn(body, [&](std::string_view line) {
    if (!error.ok() || line.empty()) return;
    std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      error = Error("line without '=': " + std::string(line.substr(0, 64)));
      return;
    }
    lines.push_back({line.substr(0, eq), line.substr(eq + 1)});
  });
  if (!error.ok()) return error;

  AllocatorStats out;
  bool have_allocator = false, have_object = false;
  for (const Line& l : lines) {
    if (l.key == "allocator") {
      std::optional<Allocator> a = AllocatorFromName(l.value);
      if (have_allocator) return Error("repeated allocator");
      if (!a) return Error("unknown allocator '" + std::string(l.value.substr(0, 32)) + "'");
      out.allocator = *a;
      have_allocator = true;
    } else if (l.key == "object") {
      if (have_object) return Error("repeated object");
      if (l.value.empty()) return Error("empty object");
      out.object = std::string(l.value);
      have_object = true;
    }
  }
  if (!have_allocator) return Error("missing allocator");
  if (!have_object) return Error("missing object");

  const std::span<const std::string_view> keys = KeysOf(out.allocator);
  for (const Line& l : lines) {
    if (out.allocator == Allocator::kJemalloc &&
        (l.key == "dirty_decay_ms" || l.key == "muzzy_decay_ms")) {
      std::optional<int64_t>& slot =
          l.key == "dirty_decay_ms" ? out.dirty_decay_ms : out.muzzy_decay_ms;
      std::optional<int64_t> v = ParseInt(l.value);
      if (slot) return Error("repeated " + std::string(l.key));
      if (!v) return Error("bad value for " + std::string(l.key));
      slot = v;
      continue;
    }
    bool known = false;
    for (std::string_view k : keys) known = known || k == l.key;
    if (!known) continue;
    std::optional<uint64_t> v = text::ParseUint(l.value);
    if (out.bytes.contains(l.key)) return Error("repeated " + std::string(l.key));
    if (!v) return Error("bad value for " + std::string(l.key));
    out.bytes.emplace(std::string(l.key), *v);
  }
  return out;
}

AllocatorMeasures CommonMeasures(const AllocatorStats& s) {
  AllocatorMeasures m;
  switch (s.allocator) {
    case Allocator::kGlibc:
      // mmapped chunks (hblkhd) are in use by the program and held from the
      // system, but outside the arenas that uordblks and arena count.
      m.allocated = Sum(s.Get("uordblks"), s.Get("hblkhd"));
      m.held = Sum(s.Get("arena"), s.Get("hblkhd"));
      m.free_kept = s.Get("fordblks");
      break;
    case Allocator::kJemalloc:
      m.allocated = s.Get("allocated");
      m.held = s.Get("resident");
      m.free_kept = Sum(s.Get("dirty"), s.Get("muzzy"));
      m.released = s.Get("retained");
      break;
    case Allocator::kTcmalloc: {
      // heap_size counts the unmapped page heap too: those pages went back.
      std::optional<uint64_t> heap = s.Get("heap_size");
      std::optional<uint64_t> unmapped = s.Get("pageheap_unmapped");
      if (heap && unmapped) m.held = *heap >= *unmapped ? *heap - *unmapped : 0;
      m.allocated = s.Get("allocated");
      m.free_kept = s.Get("pageheap_free");
      m.released = unmapped;
      break;
    }
    case Allocator::kMimalloc:
      m.held = s.Get("committed");
      break;
    case Allocator::kUnknown:
    case Allocator::kMusl:
      break;
  }
  return m;
}

}  // namespace memtrimd::agent

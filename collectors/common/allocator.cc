#include "collectors/common/allocator.h"

#include <array>
#include <utility>

namespace memtrimd {
namespace {

constexpr std::array<std::pair<Allocator, std::string_view>, 6> kNames = {{
    {Allocator::kUnknown, "unknown"},
    {Allocator::kGlibc, "glibc"},
    {Allocator::kJemalloc, "jemalloc"},
    {Allocator::kTcmalloc, "tcmalloc"},
    {Allocator::kMimalloc, "mimalloc"},
    {Allocator::kMusl, "musl"},
}};

}  // namespace

const char* AllocatorName(Allocator a) {
  for (const auto& [value, name] : kNames) {
    if (value == a) return name.data();
  }
  return "unknown";
}

std::optional<Allocator> AllocatorFromName(std::string_view name) {
  for (const auto& [value, n] : kNames) {
    if (n == name) return value;
  }
  return std::nullopt;
}

}  // namespace memtrimd

#include "collectors/procfs/malloc_env.h"

#include <algorithm>

namespace memtrimd::procfs {
namespace {

bool Wanted(std::string_view name) {
  return std::find(std::begin(kMallocEnvNames), std::end(kMallocEnvNames), name) !=
         std::end(kMallocEnvNames);
}

// A piece of GLIBC_TUNABLES that glibc cut off (see the header): it names a
// tunable ("glibc.<namespace>.<name>=..."); variable names have no dots.
bool TunablePiece(std::string_view entry) {
  std::size_t eq = entry.find('=');
  return eq != std::string_view::npos && entry.substr(0, eq).find('.') != std::string_view::npos;
}

}  // namespace

MallocEnv MallocEnvFrom(std::string_view environ) {
  MallocEnv out;
  bool in_tunables = false;  // the previous entry was (a piece of) GLIBC_TUNABLES
  std::string* tunables = nullptr;
  while (!environ.empty()) {
    std::size_t end = environ.find('\0');
    std::string_view entry = environ.substr(0, end);
    environ.remove_prefix(end == std::string_view::npos ? environ.size() : end + 1);
    if (in_tunables && TunablePiece(entry)) {
      if (tunables != nullptr && tunables->size() < kMallocEnvValueMax) {
        tunables->append(":").append(entry);
      }
      continue;
    }
    in_tunables = false;
    std::size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view name = entry.substr(0, eq);
    if (!Wanted(name)) continue;
    // The first entry of a name wins, as getenv has it.
    auto [it, inserted] = out.emplace(std::string(name), std::string(entry.substr(eq + 1)));
    if (name == "GLIBC_TUNABLES") {
      in_tunables = true;
      tunables = inserted ? &it->second : nullptr;
    }
  }
  for (auto& [name, value] : out) {
    if (value.size() > kMallocEnvValueMax) value.resize(kMallocEnvValueMax);
  }
  return out;
}

}  // namespace memtrimd::procfs

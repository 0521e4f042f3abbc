// Fuzz target: /proc/<pid>/environ lookups (EnvValue in
// collectors/common/private_socket), how memtrimd reads a target's
// MEMTRIMD_AGENT_SOCKET, MEMTRIMD_AGENT_DISABLE and the JVM option
// variables. Input: the environ block; the name looked up is the first
// entry's name (up to '='), and a few fixed ones.
//
// Invariants: a value found holds no NUL and is preceded in the block by
// "<name>=" at the start of an entry; the first matching entry wins; an
// entry appended after the block is found when nothing matched before.
// MallocEnvFrom: only the malloc names, bounded values without NUL, equal to
// EnvValue's (cut to the bound), GLIBC_TUNABLES starting with it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/common/private_socket.h"
#include "collectors/procfs/malloc_env.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

void Check(std::string_view environ, std::string_view name) {
  auto v = memtrimd::EnvValue(environ, name);
  if (v) {
    FUZZ_CHECK(v->find('\0') == std::string_view::npos);
    // v points into the block, right after "<name>=" at an entry's start.
    std::size_t at = static_cast<std::size_t>(v->data() - environ.data());
    FUZZ_CHECK(at >= name.size() + 1 && at + v->size() <= environ.size());
    std::size_t entry = at - name.size() - 1;
    FUZZ_CHECK(environ.substr(entry, name.size()) == name && environ[at - 1] == '=');
    FUZZ_CHECK(entry == 0 || environ[entry - 1] == '\0');
    FUZZ_CHECK(at + v->size() == environ.size() || environ[at + v->size()] == '\0');
  }
  if (name.empty() || name.find('\0') != std::string_view::npos) return;
  std::string appended(environ);
  if (!appended.empty() && appended.back() != '\0') appended += '\0';
  appended += std::string(name) + "=appended";
  auto w = memtrimd::EnvValue(appended, name);
  FUZZ_CHECK(w.has_value());
  if (v) {
    FUZZ_CHECK(*w == *v);
  } else {
    FUZZ_CHECK(*w == "appended");
  }
}

void CheckMallocEnv(std::string_view environ) {
  using memtrimd::procfs::kMallocEnvNames;
  using memtrimd::procfs::kMallocEnvValueMax;
  for (const auto& [name, value] : memtrimd::procfs::MallocEnvFrom(environ)) {
    FUZZ_CHECK(std::find(std::begin(kMallocEnvNames), std::end(kMallocEnvNames), name) !=
               std::end(kMallocEnvNames));
    FUZZ_CHECK(value.size() <= kMallocEnvValueMax);
    FUZZ_CHECK(value.find('\0') == std::string::npos);
    auto v = memtrimd::EnvValue(environ, name);
    FUZZ_CHECK(v.has_value());
    std::string_view cut = v->substr(0, kMallocEnvValueMax);
    if (name == "GLIBC_TUNABLES") {
      FUZZ_CHECK(std::string_view(value).substr(0, cut.size()) == cut);
    } else {
      FUZZ_CHECK(value == cut);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view environ = memtrimd::fuzz::AsText(data, size);
  std::string_view first = environ.substr(0, environ.find_first_of(std::string_view("=\0", 2)));
  Check(environ, first);
  Check(environ, "MEMTRIMD_AGENT_SOCKET");
  Check(environ, "JAVA_TOOL_OPTIONS");
  Check(environ, "_JAVA_OPTIONS");
  CheckMallocEnv(environ);
  return 0;
}

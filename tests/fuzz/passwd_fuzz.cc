// Fuzz target: /etc/passwd text (jvm::PasswdNameOf).
//
// Invariants: a name found is non-empty and holds no ':' or newline; a line
// appended that names the uid is found when nothing before named it, and
// a NIS compat line appended makes the answer incomplete but changes no
// name found.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/jvm/perf_data_cause.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using memtrimd::jvm::PasswdNameOf;
  const std::string text(memtrimd::fuzz::AsText(data, size));
  for (uint32_t uid : {0u, 1u, 4242u, 65534u}) {
    bool complete = false;
    auto name = PasswdNameOf(text, uid, &complete);
    if (name) {
      FUZZ_CHECK(!name->empty());
      FUZZ_CHECK(name->find(':') == std::string::npos);
      FUZZ_CHECK(name->find('\n') == std::string::npos);
    }
    const std::string line = "fuzzuser:x:" + std::to_string(uid) + ":0::/:/bin/sh\n";
    auto appended = PasswdNameOf(text + "\n" + line, uid);
    FUZZ_CHECK(appended.has_value());
    if (name) FUZZ_CHECK(*appended == *name);
    bool complete_after = true;
    auto with_nis = PasswdNameOf(text + "\n+::::::\n", uid, &complete_after);
    FUZZ_CHECK(!complete_after);
    FUZZ_CHECK(with_nis == name);
  }
  return 0;
}

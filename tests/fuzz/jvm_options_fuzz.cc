// Fuzz target: the readers of JVM option sources (collectors/jvm/jvm_options.h):
// SplitArgFile, SplitLauncherEnvOptions, SplitVmOptions, SplitFlagsFile on
// the whole input, and ResolveJvmOptions with the input's NUL/newline
// separated pieces as the command line and the option variables, and the
// input itself as the content of every file an option names.
//
// Invariants: without quotes, backslashes or '#', each splitter gives
// exactly the blank-separated words (by its own idea of a blank); a
// -XX:Flags= token is never longer than the JVM's 1023 bytes; the resolver
// stays within its limits (files read, options returned).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/jvm/jvm_options.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

namespace jvm = memtrimd::jvm;

std::vector<std::string> Words(std::string_view s, std::string_view blanks) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    i = s.find_first_not_of(blanks, i);
    if (i == std::string_view::npos) break;
    std::size_t end = s.find_first_of(blanks, i);
    if (end == std::string_view::npos) end = s.size();
    out.emplace_back(s.substr(i, end - i));
    i = end;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = memtrimd::fuzz::AsText(data, size);
  const bool plain = text.find_first_of("'\"\\#") == std::string_view::npos;
  const std::string_view c_blanks(" \t\n\v\f\r", 6);

  std::vector<std::string> argfile = jvm::SplitArgFile(text);
  if (plain) FUZZ_CHECK(argfile == Words(text, std::string_view(" \t\n\r\f", 5)));

  auto env = jvm::SplitLauncherEnvOptions(text);
  auto vm = jvm::SplitVmOptions(text);
  FUZZ_CHECK(env.ok() == vm.ok());
  if (plain) {
    FUZZ_CHECK(vm.ok() && *vm == Words(text, c_blanks));
    FUZZ_CHECK(env.ok() && *env == *vm);
  }
  if (vm.ok()) FUZZ_CHECK(vm->size() <= size);

  std::vector<std::string> flags = jvm::SplitFlagsFile(text);
  for (const std::string& t : flags) FUZZ_CHECK(t.size() <= 1023);
  if (plain && size < 1023) FUZZ_CHECK(flags == Words(text, c_blanks));

  std::vector<std::string> pieces = memtrimd::fuzz::SplitArgs(text);
  jvm::OptionSources src;
  src.argv = pieces;
  if (pieces.size() > 1) src.java_tool_options = pieces[1];
  if (pieces.size() > 2) src.jdk_java_options = pieces[2];
  if (pieces.size() > 3) src.underscore_java_options = pieces[3];
  jvm::OptionLimits limits;
  limits.max_files = 4;
  limits.max_options = 256;
  std::size_t reads = 0;
  auto result = jvm::ResolveJvmOptions(
      src,
      [&](const std::string&) -> memtrimd::Result<std::string> {
        ++reads;
        return std::string(text);
      },
      limits);
  FUZZ_CHECK(reads <= limits.max_files);
  if (result.ok()) {
    FUZZ_CHECK(result->size() <= limits.max_options);
    for (const jvm::JvmOption& o : *result) FUZZ_CHECK(!o.origin.empty());
  }
  return 0;
}

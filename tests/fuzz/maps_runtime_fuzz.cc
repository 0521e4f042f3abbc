// Fuzz target: runtime detection from /proc/<pid>/maps
// (procfs::RuntimeFromMaps, FoldRuntime).
//
// Invariants: the whole-text answer is the fold over its lines; a JVM wins
// over everything (a libjvm.so line added anywhere makes it kJvm, and
// nothing added after changes that); glibc wins over musl; the verdict is
// one of the enum's values.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/common/text.h"
#include "collectors/procfs/runtime.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using memtrimd::Runtime;
using memtrimd::procfs::FoldRuntime;
using memtrimd::procfs::RuntimeFromMaps;

constexpr std::string_view kJvmLine =
    "7f0c4d000000-7f0c4d2a6000 r--p 00000000 08:01 1234 "
    "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so";
constexpr std::string_view kGlibcLine =
    "7f0c4e000000-7f0c4e028000 r--p 00000000 08:01 5678 /usr/lib/x86_64-linux-gnu/libc.so.6";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = memtrimd::fuzz::AsText(data, size);
  Runtime r = RuntimeFromMaps(text);
  FUZZ_CHECK(r == Runtime::kUnknown || r == Runtime::kGlibc || r == Runtime::kMusl ||
             r == Runtime::kJvm);
  FUZZ_CHECK(memtrimd::RuntimeName(r) != nullptr);

  Runtime folded = Runtime::kUnknown;
  memtrimd::text::ForEachLineIn(text, [&](std::string_view line) {
    Runtime next = FoldRuntime(folded, line);
    if (folded == Runtime::kJvm) FUZZ_CHECK(next == Runtime::kJvm);
    if (folded == Runtime::kGlibc) FUZZ_CHECK(next == Runtime::kGlibc || next == Runtime::kJvm);
    folded = next;
  });
  FUZZ_CHECK(folded == r);

  std::string body(text);
  if (!body.empty() && body.back() != '\n') body += '\n';
  FUZZ_CHECK(RuntimeFromMaps(body + std::string(kJvmLine) + "\n") == Runtime::kJvm);
  FUZZ_CHECK(RuntimeFromMaps(std::string(kJvmLine) + "\n" + body) == Runtime::kJvm);
  Runtime with_glibc = RuntimeFromMaps(body + std::string(kGlibcLine) + "\n");
  FUZZ_CHECK(with_glibc == (r == Runtime::kJvm ? Runtime::kJvm : Runtime::kGlibc));

  // MapsFacts folds the same runtime, and a mapped jemalloc wins over any
  // libc unless another allocator library came first.
  memtrimd::procfs::MapsFacts facts = memtrimd::procfs::MapsFactsFrom(text);
  FUZZ_CHECK(facts.runtime() == r);
  std::string source;
  memtrimd::Allocator a = facts.allocator(&source);
  FUZZ_CHECK(memtrimd::AllocatorName(a) != nullptr);
  FUZZ_CHECK(a == memtrimd::Allocator::kUnknown ? source.empty() : !source.empty());
  memtrimd::procfs::MapsFacts with_je = memtrimd::procfs::MapsFactsFrom(
      body + "7f00-7f01 r-xp 00000000 08:01 9 /usr/lib/x86_64-linux-gnu/libjemalloc.so.2\n");
  FUZZ_CHECK(with_je.allocator() == memtrimd::Allocator::kJemalloc || with_je.allocator() == a);
  return 0;
}

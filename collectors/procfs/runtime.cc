#include "collectors/procfs/runtime.h"

#include "collectors/common/text.h"

namespace memtrimd::procfs {
namespace {

std::string_view Basename(std::string_view path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

Runtime FoldRuntime(Runtime so_far, std::string_view line) {
  if (so_far == Runtime::kJvm) return so_far;
  std::size_t slash = line.find('/');
  if (slash == std::string_view::npos) return so_far;
  std::string_view path = text::Trim(line.substr(slash));
  // A library replaced on disk (a JDK upgrade under a running JVM) still
  // counts.
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.size() > kDeleted.size() && path.substr(path.size() - kDeleted.size()) == kDeleted) {
    path.remove_suffix(kDeleted.size());
  }
  std::string_view name = Basename(path);
  if (name == "libjvm.so") return Runtime::kJvm;
  // glibc's C library is libc.so.6 (libc-2.NN.so before 2.34). A plain
  // "libc.so" is never mapped by glibc (it is a linker script there), but
  // it is musl's library, which ld-musl-*.so.1 links to.
  if (name == "libc.so.6" || name.substr(0, 7) == "libc-2.") return Runtime::kGlibc;
  bool musl =
      name.substr(0, 7) == "ld-musl" || name == "libc.so" || name.substr(0, 9) == "libc.musl";
  if (musl && so_far == Runtime::kUnknown) return Runtime::kMusl;
  return so_far;
}

Runtime RuntimeFromMaps(std::string_view maps_text) {
  Runtime r = Runtime::kUnknown;
  text::ForEachLineIn(maps_text, [&](std::string_view line) { r = FoldRuntime(r, line); });
  return r;
}

}  // namespace memtrimd::procfs

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
  std::string_view name = Basename(text::Trim(line.substr(slash)));
  if (name == "libjvm.so") return Runtime::kJvm;
  if (name.substr(0, 7) == "libc.so" || name.substr(0, 5) == "libc-") return Runtime::kGlibc;
  if (name.substr(0, 7) == "ld-musl" && so_far == Runtime::kUnknown) return Runtime::kMusl;
  return so_far;
}

Runtime RuntimeFromMaps(std::string_view maps_text) {
  Runtime r = Runtime::kUnknown;
  text::ForEachLineIn(maps_text, [&](std::string_view line) { r = FoldRuntime(r, line); });
  return r;
}

}  // namespace memtrimd::procfs

#include "collectors/procfs/runtime.h"

#include "collectors/common/text.h"

namespace memtrimd::procfs {
namespace {

std::string_view Basename(std::string_view path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The file name of a maps line's path, without " (deleted)"; empty when the
// line maps no file.
std::string_view MappedFileName(std::string_view line) {
  std::size_t slash = line.find('/');
  if (slash == std::string_view::npos) return {};
  std::string_view path = text::Trim(line.substr(slash));
  // A library replaced on disk (a JDK upgrade under a running JVM) still
  // counts.
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.size() > kDeleted.size() && path.substr(path.size() - kDeleted.size()) == kDeleted) {
    path.remove_suffix(kDeleted.size());
  }
  return Basename(path);
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

Runtime FoldRuntime(Runtime so_far, std::string_view line) {
  if (so_far == Runtime::kJvm) return so_far;
  std::string_view name = MappedFileName(line);
  if (name.empty()) return so_far;
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

Allocator AllocatorOfMapping(std::string_view line, std::string* library) {
  std::string_view name = MappedFileName(line);
  // Shared objects only: "libjemalloc.so.2", "libtcmalloc_minimal.so.4",
  // "libmimalloc.so.2" (not a static archive or a file that merely starts so).
  if (name.find(".so") == std::string_view::npos) return Allocator::kUnknown;
  Allocator a = Allocator::kUnknown;
  if (StartsWith(name, "libjemalloc")) a = Allocator::kJemalloc;
  if (StartsWith(name, "libtcmalloc")) a = Allocator::kTcmalloc;
  if (StartsWith(name, "libmimalloc")) a = Allocator::kMimalloc;
  if (a != Allocator::kUnknown && library != nullptr) *library = std::string(name);
  return a;
}

void MapsFacts::Fold(std::string_view line) {
  runtime_ = FoldRuntime(runtime_, line);
  if (mapped_ == Allocator::kUnknown) mapped_ = AllocatorOfMapping(line, &library_);
  std::string_view name = MappedFileName(line);
  // musl's C library is its loader: ld-musl-<arch>.so.1, which distributions
  // install as (or link to) a plain "libc.so" (Debian:
  // /usr/lib/x86_64-linux-musl/libc.so; maps shows the file's real name).
  if (StartsWith(name, "ld-musl") || StartsWith(name, "libc.musl") || name == "libc.so") {
    musl_ = true;
  }
  if (name == "libc.so.6" || StartsWith(name, "libc-2.")) glibc_ = true;
  if (StartsWith(name, "ld-linux")) glibc_loader_ = true;
}

Allocator MapsFacts::allocator(std::string* source) const {
  Allocator a = Allocator::kUnknown;
  std::string how;
  if (mapped_ != Allocator::kUnknown) {
    a = mapped_;
    how = library_ + " mapped";
  } else if (musl_ && !glibc_) {
    a = Allocator::kMusl;
    how = "musl libc";
  } else if (glibc_) {
    a = Allocator::kGlibc;
    how = "glibc malloc (no other allocator mapped)";
  }
  if (source != nullptr) *source = how;
  return a;
}

MapsFacts MapsFactsFrom(std::string_view maps_text) {
  MapsFacts f;
  text::ForEachLineIn(maps_text, [&](std::string_view line) { f.Fold(line); });
  return f;
}

}  // namespace memtrimd::procfs

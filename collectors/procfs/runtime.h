// Which runtime a process runs on, told from the libraries in
// /proc/<pid>/maps (cheap: maps does not stall the target like smaps does).
#pragma once

#include <string>
#include <string_view>

#include "collectors/common/target.h"

namespace memtrimd::procfs {

// Folds one maps line into the verdict so far. A JVM wins over glibc (a JVM
// on glibc is a JVM); musl is only chosen when no glibc is mapped.
Runtime FoldRuntime(Runtime so_far, std::string_view maps_line);

Runtime RuntimeFromMaps(std::string_view maps_text);

// The allocator a shared object in one maps line stands for: a mapped
// libjemalloc.so*, libtcmalloc*.so* (minimal, debug, and_profiler) or
// libmimalloc*.so* serves malloc when it is preloaded or linked (the only
// ways such a library gets in before libc, and a program that dlopen()s one
// for its own use is rare: the agent, which asks the dynamic linker, says
// for certain). `library` is set to the file name. kUnknown for any other line.
Allocator AllocatorOfMapping(std::string_view maps_line, std::string* library);

// What one pass over /proc/<pid>/maps tells: the runtime and the allocator.
class MapsFacts {
 public:
  void Fold(std::string_view maps_line);
  Runtime runtime() const { return runtime_; }
  // A mapped allocator library, else musl for a musl program (a JVM on musl
  // too), glibc for a glibc program or a JVM on glibc, else unknown.
  // `source`, when given, says how it was told.
  Allocator allocator(std::string* source = nullptr) const;
  // glibc's dynamic loader is mapped but no C library yet: the process has
  // just been exec'ed and ld.so is still mapping its libraries, so what it
  // runs on cannot be told yet (a look a moment later can).
  bool StillLoading() const { return glibc_loader_ && !glibc_ && !musl_; }

 private:
  Runtime runtime_ = Runtime::kUnknown;
  Allocator mapped_ = Allocator::kUnknown;
  std::string library_;
  bool musl_ = false;
  bool glibc_ = false;
  bool glibc_loader_ = false;
};

MapsFacts MapsFactsFrom(std::string_view maps_text);

}  // namespace memtrimd::procfs

// Which runtime a process runs on, told from the libraries in
// /proc/<pid>/maps (cheap: maps does not stall the target like smaps does).
#pragma once

#include <string_view>

#include "collectors/common/target.h"

namespace memtrimd::procfs {

// Folds one maps line into the verdict so far. A JVM wins over glibc (a JVM
// on glibc is a JVM); musl is only chosen when no glibc is mapped.
Runtime FoldRuntime(Runtime so_far, std::string_view maps_line);

Runtime RuntimeFromMaps(std::string_view maps_text);

}  // namespace memtrimd::procfs

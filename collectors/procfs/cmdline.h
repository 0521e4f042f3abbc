// /proc/<pid>/cmdline: NUL-separated arguments.
#pragma once

#include <string>
#include <string_view>

namespace memtrimd::procfs {

// Arguments joined with single spaces, as `ps` shows them; what
// --target.match is applied to.
std::string CmdlineToString(std::string_view raw);

}  // namespace memtrimd::procfs

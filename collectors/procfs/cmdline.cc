#include "collectors/procfs/cmdline.h"

namespace memtrimd::procfs {

std::string CmdlineToString(std::string_view raw) {
  while (!raw.empty() && raw.back() == '\0') raw.remove_suffix(1);
  std::string out(raw);
  for (char& c : out) {
    if (c == '\0') c = ' ';
  }
  return out;
}

}  // namespace memtrimd::procfs

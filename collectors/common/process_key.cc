#include "collectors/common/process_key.h"

namespace memtrimd {

std::string ProcessKey::ToString() const {
  return "pid " + std::to_string(pid) + " (started at tick " + std::to_string(start_ticks) + ")";
}

}  // namespace memtrimd

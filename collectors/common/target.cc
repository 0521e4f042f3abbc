#include "collectors/common/target.h"

namespace memtrimd {

const char* RuntimeName(Runtime r) {
  switch (r) {
    case Runtime::kGlibc:
      return "glibc";
    case Runtime::kJvm:
      return "jvm";
    case Runtime::kMusl:
      return "musl";
    case Runtime::kUnknown:
      break;
  }
  return "unknown";
}

}  // namespace memtrimd

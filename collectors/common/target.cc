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

std::string GlibcMallocNotApplicable(const Target& t) {
  if (!IsOtherAllocator(t.allocator)) return "";
  std::string why = std::string("malloc is ") + AllocatorName(t.allocator);
  if (!t.allocator_source.empty()) why += " (" + t.allocator_source + ")";
  return why + ", not glibc's";
}

}  // namespace memtrimd

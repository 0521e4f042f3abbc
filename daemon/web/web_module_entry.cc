// The one exported symbol of libmemtrimd_web.so (see web_module.h).
#include "daemon/web/web_module.h"

extern "C" __attribute__((visibility("default"))) const memtrimd::WebModule* memtrimd_web_module() {
  return memtrimd::LinkedWebModule();
}

#include "daemon/web/web_module.h"

#include "daemon/build_info.h"

namespace memtrimd {

const WebModule* LinkedWebModule() {
  static const WebModule module{kRevision, &LoadWebState, &NewServerContext, &FreeServerContext};
  return &module;
}

}  // namespace memtrimd

#include "daemon/report/collector_note.h"

#include <string>

namespace memtrimd::report {

const CollectorOutcome* OutcomeOf(const TargetSnapshot& ts, std::string_view name) {
  for (const CollectorOutcome& o : ts.collectors) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

void ExplainFailure(TextTable& t, const TargetSnapshot& ts, std::string_view name) {
  const CollectorOutcome* o = OutcomeOf(ts, name);
  if (o == nullptr) {
    t.Say("(collector " + std::string(name) + " is switched off)");
  } else if (!o->success) {
    t.Say("could not read: " + o->error);
  }
}

}  // namespace memtrimd::report

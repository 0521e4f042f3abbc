// Configuration advice: a setting worth changing whatever the figures show
// now. Not a risk (a risk is what threatens the process now, from its
// figures: findings.h), so it is shown apart from the risks, never in red,
// and counted in no risk panel. Pure functions of one target's sample.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/sample.h"

namespace memtrimd {

struct Advice {
  std::string check;  // the risk check it goes with, e.g. nio_cache_unbounded
  std::string text;   // one line for a person: what is set, what it allows, what to set
};

// Every check AdviseJvm can return.
inline constexpr std::array<std::string_view, 1> kAdviceChecks = {"nio_cache_unbounded"};

// The JVM's settings that deserve a change: -Djdk.nio.maxCachedBufferSize
// unset, on every JVM memtrimd can attach to (the property comes from
// VM.system_properties). Empty when there is nothing to say or the settings
// are unknown.
std::vector<Advice> AdviseJvm(const TargetSample& s);

}  // namespace memtrimd

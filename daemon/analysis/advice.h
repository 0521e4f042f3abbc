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
  std::string check;  // its name: nio_cache_unbounded (the risk it goes with), nmt_off, ...
  std::string text;   // one line for a person: what is set, what it allows, what to set
};

// Every check AdviseJvm can return.
inline constexpr std::array<std::string_view, 3> kAdviceChecks = {"nio_cache_unbounded", "nmt_off",
                                                                  "jvm_trims_itself"};

// The JVM's settings worth knowing about, on every JVM memtrimd can attach
// to (from VM.flags and VM.system_properties): -Djdk.nio.maxCachedBufferSize
// unset; Native Memory Tracking off (what is native memory cannot be split
// into the JVM's categories and what is outside them); the JVM trimming its
// own heap (-XX:TrimNativeHeapInterval: memtrimd then does not trim it and
// does not see what those trims give back). Empty when there is nothing to
// say or the settings are unknown.
std::vector<Advice> AdviseJvm(const TargetSample& s);

}  // namespace memtrimd

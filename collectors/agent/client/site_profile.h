// The agent's sampled allocation sites, named: each stack's return
// addresses turned into functions outside the target (collectors/symbols),
// the largest stacks kept, and sites named short enough for a metric label
// ("hold < hold_200 < main"). What /debug/pprof/heap, the site metrics,
// /report and inspect --sites all read.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "collectors/agent/client/agent_sites.h"
#include "collectors/symbols/symbolize.h"

namespace memtrimd::agent {

struct SiteStack {
  // Lookup addresses, innermost first: each return address less one, so
  // that a call at the very end of a function is named by that function.
  std::vector<uint64_t> addresses;
  SiteValues values;
  std::size_t site = 0;  // index into SiteProfile::sites
};

// Stacks whose short names are equal, summed: what a metric row shows.
struct NamedSite {
  std::string name;
  SiteValues values;
  std::size_t stacks = 0;
  // Every stack of the site reaches malloc from libjvm.so (its innermost
  // frame outside libc and the dynamic linker lies there): the JVM's own
  // os::malloc, which NMT counts. Such memory is in the account's NMT-known
  // parts, not in "outside NMT".
  bool nmt_tracked = false;
};

// A file whose frames name sites by the file's name instead of a
// function's, and why it gave no function name (symbols::FileNamesMissing).
struct UnnamedFile {
  std::string path;  // as the target's maps name it
  std::string why;
  uint64_t live_bytes = 0;  // of the kept stacks whose site names show it
};

// Files listed in SiteProfile::unnamed_files at most.
inline constexpr std::size_t kMaxUnnamedFiles = 8;

struct SiteProfile {
  std::chrono::system_clock::time_point read_at{};
  // When the sampler was turned on (the agent's monotonic clock, mapped to
  // wall time when read): allocations before it are not seen.
  std::chrono::system_clock::time_point started_at{};
  uint64_t period = 0;  // in force at the read
  // The period asked for, the sample budget (a second; 0: none) and how
  // often the budget raised the period since sampling started.
  uint64_t base_period = 0;
  uint64_t max_rate = 0;
  uint64_t raised = 0;
  uint64_t generation = 0;
  uint64_t samples = 0;
  uint64_t dropped_live = 0;
  uint64_t dropped_stacks = 0;
  uint64_t sampler_bytes = 0;
  uint64_t hooked_objects = 0;
  // The agent's hook counts (AgentSites): hooks_counted false from an
  // agent that does not send them.
  bool hooks_counted = false;
  uint64_t hooked_entries = 0;
  uint64_t unhooked_objects = 0;
  // How memtrimd told an allocator linked into the executable (e.g.
  // "jemalloc linked into the executable", Target::allocator_source), or
  // "": its calls never reach a GOT entry, so the sampler cannot see them,
  // exported or not (the sites collector sets it).
  std::string linked_allocator;
  bool truncated = false;  // the agent's answer was cut (its buffer)
  // In a JVM (AgentSites, version 7): whether the agent walks Java frames,
  // the method ids it made, its walks and those that found no Java frame.
  // java_counted false: an agent that does not say.
  bool java_counted = false;
  bool java_frames = false;
  uint64_t java_ids = 0;
  uint64_t java_walks = 0;
  uint64_t java_walks_empty = 0;
  // Whether each value's resident_bytes is known, and how it was read.
  SiteResident resident;
  // Stacks among the --sites.max-stacks largest that the node's sites
  // memory budget left out (summed in `other` like the rest).
  std::size_t budget_cut_stacks = 0;
  // What holds this profile's bytes in the node's sites budget: released
  // when the last holder of the profile lets it go.
  std::shared_ptr<const void> charge;

  // The largest stacks (live bytes, then bytes allocated), at most the cap.
  std::vector<SiteStack> stacks;
  // Everything else: stacks beyond the cap and the agent's own "[stack
  // table full]" row.
  SiteValues other;
  SiteValues total;
  // Distinct addresses of `stacks` (Symbolize's input) and their frames.
  std::vector<uint64_t> addresses;
  symbols::Symbolization symbols;
  // By short name, live bytes descending (ties: name).
  std::vector<NamedSite> sites;
  // The files whose name stands for a function in the sites' names (a
  // frame there had no function), live bytes descending (ties: path), at
  // most kMaxUnnamedFiles: the user's next question is why.
  std::vector<UnnamedFile> unnamed_files;

  // The heap bytes the profile holds: what the sites budget charges.
  std::size_t MemoryBytes() const;
};

// How far a site's name reaches: the innermost functions of its stack.
inline constexpr std::size_t kSiteNameFrames = 3;

// The kept stacks and the rest, their addresses symbolised through `source`
// against `maps` (the target's, read right after the answer), and the
// sites named. Pure over its inputs. `monotonic_now_ns` and `now` are the
// same instant on the two clocks (for started_at); `main_code`, the
// target's start_code (0: unknown), puts its program's mapping first
// (symbols::Symbolize).
SiteProfile BuildSiteProfile(const AgentSites& raw, std::span<const procfs::MapsEntry> maps,
                             symbols::ElfSource& source, std::size_t max_stacks,
                             uint64_t monotonic_now_ns, std::chrono::system_clock::time_point now,
                             uint64_t main_code = 0);

// The short name of a stack: its innermost kSiteNameFrames functions (a
// function repeated by recursion once), innermost first, joined by " < ".
// A frame with no function is its file's name, or "[java]" for anonymous
// code (a JVM's JIT-compiled code and interpreter), or "[unknown]". A stack
// with Java frames is named by its innermost frame and its first Java frame
// outside the JDK (symbols::IsJdkJavaName; the innermost Java frame when
// all are the JDK's): "deflateInit2_ < com.acme.Uploads.compressAll", the
// code that holds the memory, whatever JDK classes lie between.
// `named`, when given, gets the frames the name shows (none for "[unknown]"
// parts of addresses that were not symbolised).
std::string SiteName(std::span<const uint64_t> addresses, const SiteProfile& profile,
                     std::vector<const symbols::Frame*>* named = nullptr);

// Whether a stack's innermost frame outside libc (libc.so.6) and the
// dynamic linker (ld-linux*) lies in a file named libjvm.so: a stack that
// NMT counts. Frames with no file (anonymous code, unknown addresses) are
// not libjvm's.
bool NmtTrackedStack(std::span<const uint64_t> addresses, const SiteProfile& profile);

// The frame of one of the profile's lookup addresses; nullptr when it was
// not symbolised.
const symbols::Frame* FrameOf(uint64_t address, const SiteProfile& profile);

// The Java frame a stack's site is named by (SiteName): its first Java
// frame outside the JDK, else its innermost Java frame; nullptr without
// Java frames.
const symbols::Frame* NamingJavaFrame(std::span<const uint64_t> addresses,
                                      const SiteProfile& profile);

}  // namespace memtrimd::agent

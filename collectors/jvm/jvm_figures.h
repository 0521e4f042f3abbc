// What a JVM target's collectors fill in a sample (collectors/sample.h):
// the attach socket's answers, hsperfdata's counters, and the buffer pools
// the preloaded agent reads inside the JVM.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectors/common/status.h"
#include "collectors/jvm/hsperfdata.h"
#include "collectors/jvm/jvm_text.h"
#include "collectors/jvm/nmt_summary.h"

namespace memtrimd {

// What the JVM says about itself through the attach socket (on --jvm.interval).
struct JvmSample {
  bool attachable = false;
  std::string attach_error;           // why not, when !attachable
  Cause attach_cause = Cause::kNone;  // the same, for the advice
  std::optional<jvm::JvmVersion> version;
  // VM.flags and VM.system_properties entries that matter for native memory,
  // by name (absent: not set / not reported).
  std::map<std::string, std::string, std::less<>> settings;
  std::optional<jvm::NmtSummary> nmt;       // nmt->enabled false: NMT off
  std::optional<jvm::HeapInfo> gc_heap;     // GC.heap_info
  std::vector<std::string> command_errors;  // commands that failed this round
  std::chrono::system_clock::time_point read_at{};
  // When NMT answered, and the target's RSS right after (0: not read): the
  // RSS account sets NMT beside a smaps read only when the two are of one
  // moment (daemon/analysis/account_moment.h).
  std::chrono::system_clock::time_point nmt_read_at{};
  uint64_t nmt_rss_bytes = 0;
  // With --jvm.load-agent: what loading memtrimd's agent into this JVM did
  // (jvm::AgentLoadResultName: loaded, present, opted_out, refused, failed)
  // and its one-line text; empty without the flag.
  std::string agent_load;
  std::string agent_load_text;
};

// hsperfdata (every sample: a file read, no attach).
struct JvmPerf {
  jvm::PerfHeap heap;
  std::string path;
  // Where the counters were read: "file" (the hsperfdata file at `path`),
  // or "memory" (the JVM's perf memory through process_vm_readv, when it
  // has no file, for the reason in `no_file`; jvm/perf_memory.h).
  std::string source = "file";
  std::string no_file;
  std::optional<jvm::PerfGc> gc;  // collectors and causes (absent: no sun.gc counters)
  // Since this JVM's previous hsperfdata read at least a second earlier
  // (on the first read: since the JVM started, see gc_rates_since_start):
  // collections per second, all collectors together, and the share of
  // wall time spent in them.
  std::optional<double> gc_per_second;
  // Full collections per second over the same window (jvm::FullCollections):
  // what System.gc() runs, young collections left out.
  std::optional<double> full_gc_per_second;
  std::optional<double> gc_time_ratio;
  // true: the rates are averages since the JVM started (no earlier read of
  // this JVM to measure a window from, e.g. a one-shot inspect).
  bool gc_rates_since_start = false;
};

// BufferPoolMXBean's figures for one pool.
struct BufferPool {
  uint64_t count = 0;           // buffers
  uint64_t total_capacity = 0;  // bytes the buffers hold
  uint64_t memory_used = 0;     // bytes reserved for them (page-aligned buffers add a page)
};

// Read inside the JVM by the preloaded agent (JNI field reads; memtrimd
// calls no Java method). The "direct" pool is what -XX:MaxDirectMemorySize limits.
struct JvmBuffers {
  BufferPool direct;
  BufferPool mapped;
  // The per-thread temporary direct buffer cache (sun.nio.ch.Util), summed
  // over threads; absent when the agent could not walk it.
  std::optional<uint64_t> temp_cache_bytes;
  std::optional<uint64_t> temp_cache_buffers;
  // temp_cache_bytes at the agent collector's previous read of this JVM
  // (one --smaps.interval earlier); absent on the first read.
  std::optional<uint64_t> temp_cache_previous_bytes;
  std::chrono::system_clock::time_point read_at{};
};

}  // namespace memtrimd

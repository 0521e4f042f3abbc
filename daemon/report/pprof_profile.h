// A heap profile in pprof's format (github.com/google/pprof, proto/
// profile.proto), gzip'd as `go tool pprof`, Pyroscope, Grafana Alloy and
// Parca read it. The protobuf encoding is written here by hand: varints
// and length-delimited fields are all the format needs, and a protobuf
// library would be a dependency for two hundred lines.
//
// Waits for the agent's allocation sampler: nothing serves a profile yet.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/symbols/symbolize.h"

namespace memtrimd::report {

// The four values of a heap sample, as Go's heap profiles order them.
// Weights are already unbiased: bytes and objects the samples stand for.
struct HeapValues {
  int64_t alloc_objects = 0;
  int64_t alloc_space = 0;  // bytes
  int64_t inuse_objects = 0;
  int64_t inuse_space = 0;  // bytes
  // Of inuse_space, the bytes on resident pages (a fifth sample type,
  // "resident_space", when the profile has it: HeapProfile::has_resident).
  int64_t resident_space = 0;
};

struct PprofMapping {
  uint64_t start = 0;
  uint64_t limit = 0;
  uint64_t offset = 0;
  std::string file;
  std::string build_id;
  bool has_functions = false;
};

struct PprofLocation {
  uint64_t address = 0;
  uint64_t mapping = 0;  // 1-based index into mappings; 0 for none
  // "" for none (pprof then shows the address). A view of the
  // Symbolization's names: a profile request copies no name. The
  // function's name demangled, and as the file has it ("" for the same).
  std::string_view function;
  std::string_view system_name;
  // A Java frame's source file and line (pprof's Function.filename and
  // Line.line); "" and 0 for native frames, which pprof names by address.
  std::string_view filename;
  int64_t line = 0;
};

struct PprofSample {
  std::vector<uint64_t> locations;  // 1-based indexes into locations, leaf first
  HeapValues values;
};

struct HeapProfile {
  std::vector<PprofMapping> mappings;
  std::vector<PprofLocation> locations;
  std::vector<PprofSample> samples;
  int64_t time_nanos = 0;
  int64_t period = 0;  // the sampler's mean bytes between samples
  // Whether the samples carry resident_space (the sites' resident estimate
  // is known): then a fifth sample type after Go's four.
  bool has_resident = false;
};

// Pure: the profile.proto bytes (not compressed). Ids are the 1-based
// indexes; functions are made one per distinct name, and the string table
// holds each string once, "" first.
std::string EncodeProfile(const HeapProfile& profile);

// EncodeProfile gzip'd; nullopt only when zlib fails (out of memory).
std::optional<std::string> GzipProfile(const HeapProfile& profile);

// One sampled site: its stack (leaf first, addresses in the target as
// Symbolize takes them: return addresses less one, but the leaf's) and its
// values.
struct SiteSample {
  std::vector<uint64_t> stack;
  HeapValues values;
};

// Pure: the profile of sites whose addresses `symbols` names (the result of
// symbols::Symbolize over AddressesOf(sites)): one location per distinct
// address, one mapping per file mapping a frame lies in.
HeapProfile HeapProfileOf(std::span<const SiteSample> sites, const symbols::Symbolization& symbols,
                          std::span<const uint64_t> addresses, int64_t period, int64_t time_nanos);

// The distinct addresses of the sites' stacks, in first-seen order.
std::vector<uint64_t> AddressesOf(std::span<const SiteSample> sites);

}  // namespace memtrimd::report

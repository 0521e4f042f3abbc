// Parsers for the small text answers of diagnostic commands: VM.version,
// VM.flags, VM.system_properties, GC.heap_info, System.trim_native_heap.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "collectors/common/status.h"

namespace memtrimd::jvm {

// VM.version: "OpenJDK 64-Bit Server VM version 17.0.15+6-Debian-1deb12u1\nJDK 17.0.15\n".
struct JvmVersion {
  std::string vm_name;  // "OpenJDK 64-Bit Server VM"
  std::string full;     // "17.0.15+6-Debian-1deb12u1"
  int feature = 0;      // 17
  int interim = 0;      // 0
  int update = 0;       // 15
};
// The numbers come from the "JDK x" line when there is one (JDK 8 prints
// HotSpot's own version, "25.392-b08", on the first line); `full` is always the
// string after "version".
Result<JvmVersion> ParseVmVersion(std::string_view text);
// A version string alone ("17.0.15+6-...", "25+36-LTS", "1.8.0_392-b08").
Result<JvmVersion> ParseVersionString(std::string_view version);

// VM.flags (or VM.flags -all is NOT supported here): "-XX:Name=Value -XX:+Bool
// -XX:-Bool ..." on one or more lines. Values as text; booleans "true"/"false".
// Only flags set on the command line or by ergonomics are listed (e.g.
// MaxDirectMemorySize only when given). kParseError when there is no -XX: token.
Result<std::map<std::string, std::string, std::less<>>> ParseVmFlags(std::string_view text);

// VM.system_properties: java.util.Properties text ("key=value" lines, '#'
// comments, backslash escapes \: \= \\ \n \t \uXXXX, continuation lines).
// \uXXXX is decoded to UTF-8 (surrogate pairs combined, a lone surrogate
// becomes U+FFFD); a malformed \u is kept as text. Never fails on any text.
Result<std::map<std::string, std::string, std::less<>>> ParseSystemProperties(
    std::string_view text);

// GC.heap_info: the Java heap's committed and used bytes and its address
// range, from the "... heap total N[K|M], used M[K] [0xA, 0xB)" line (JDK 17)
// or "... heap total reserved N, committed M, used U [0xA, 0xB)" (JDK 21+/25).
// Serial and Parallel print one such line per generation ("[low, high,
// high_boundary)"): they are summed, committed is high - low (the printed
// young "total" leaves out the to-space) and the range spans all of them.
// Shenandoah: "N max, N soft max, N committed, N used" plus the
// "Reserved region:" range. ZGC: "ZHeap used U, capacity C, max capacity M"
// (committed = capacity; no reserved size, no range; M-rounded on 17/25).
// kParseError when none of these is printed.
struct HeapInfo {
  uint64_t committed_bytes = 0;
  uint64_t used_bytes = 0;
  std::optional<uint64_t> reserved_bytes;
  std::optional<uint64_t> start;  // address range [start, end)
  std::optional<uint64_t> end;
};
Result<HeapInfo> ParseGcHeapInfo(std::string_view text);

// System.trim_native_heap, all known formats:
//   17.0.9+, 21.0.1+, 22+: "Trim native heap: RSS+Swap: 311M->304M (-6420K)"
//                          or "Trim native heap: (no details available)."
//   20 to 21.0.0:          "Done. RSS+Swap reduction: 311M->304M (-7M))"
//   17.0.2-17.0.8, 18-19:  "Attempting trim...\nDone.\nVirtual size before: ...
//                           RSS before: ... RSS after: ... Swap before: ..."
//   musl:                  "Not available."
// Sizes with B/K/M/G suffixes (truncated by the JVM) are converted to bytes.
struct TrimReport {
  enum class Outcome { kTrimmed, kNoDetails, kNotAvailable };
  Outcome outcome = Outcome::kTrimmed;
  std::optional<uint64_t> rss_swap_before;  // bytes
  std::optional<uint64_t> rss_swap_after;
  std::optional<int64_t> delta;  // after - before (negative: memory given back)
};
Result<TrimReport> ParseTrimOutput(std::string_view text);

// "123", "6420K", "311M", "2G", "512B" -> bytes.
std::optional<uint64_t> ParseJvmSize(std::string_view s);

}  // namespace memtrimd::jvm

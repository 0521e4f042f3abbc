// Who holds the RSS: one smaps read, the JVM's NMT summary and glibc's
// malloc statistics combined into parts that add up exactly to that read's
// Rss, none negative. Pure; /metrics, inspect, /report and the web page all
// print this one account.
//
//   RSS = file-backed + Java heap touched + NMT-known native (by kind)
//       + glibc free memory kept + native memory outside NMT
//
// How each part is defined (docs/rss-account.md has the long form):
// - file: pages of file-backed and shared mappings that are the file's
//   (code, mapped files, CDS archive, shmem): not native memory.
// - java_heap: resident pages of anonymous mappings inside the Java heap's
//   reserved range (committed but untouched heap is not RSS).
// - the anonymous rest is malloc space (arena heaps, [heap], mmapped malloc
//   chunks from malloc_info) plus the JVM's own mappings (metaspace, code
//   cache, GC structures, thread stacks, CDS pages it wrote).
// - NMT-known: the JVM's malloc'd bytes (NMT "malloc" and "arena" lines, at
//   most what malloc has in use) plus its mmap-committed bytes (at most the
//   resident JVM mappings: committed pages a GC has not touched yet, e.g.
//   G1's marking bitmaps, are not RSS and are taken from GC first). The CDS
//   archive ("Shared class space") is a file mapping: only the pages the
//   JVM wrote are anonymous, the rest is in `file`.
// - glibc_free: arena pages malloc keeps resident without live chunks:
//   resident arena bytes minus the bytes malloc_info says are in use.
// - allocator_free (instead of glibc_free, for a program on jemalloc,
//   tcmalloc, ...): the free memory that allocator says it keeps and its
//   release call gives back (jemalloc dirty + muzzy pages, tcmalloc's free
//   page heap), at most the anonymous memory not otherwise accounted for.
// - outside: the rest; for a JVM, native memory NMT does not know (JNI and
//   native libraries, zlib, glibc's own structures); without NMT, all native
//   memory. Without malloc statistics it also holds glibc's free memory, and
//   the JVM's malloc'd memory cannot be placed exactly (arena or mmapped
//   chunk), so it is an estimate.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectors/sample.h"
#include "daemon/analysis/account_moment.h"

namespace memtrimd {

// NMT-known native memory that is resident, by kind. Sum == total().
struct NmtKnown {
  uint64_t buffers = 0;    // NMT Other: direct buffers, temporary buffer cache, FFM, Unsafe
  uint64_t metaspace = 0;  // Metaspace, Class, Shared class space (written pages)
  uint64_t code = 0;       // Code: the JIT's code cache and its malloc'd data
  uint64_t threads = 0;    // Thread: stacks and thread structures
  uint64_t gc = 0;         // GC, GCCardSet: card tables, remembered sets, mark bitmaps
  uint64_t jvm_other = 0;  // every other category (Symbol, Internal, Compiler, ...)
  uint64_t total() const { return buffers + metaspace + code + threads + gc + jvm_other; }
};

// A read the account could have used but left out: the target's RSS right
// after it was not in step with the smaps read's (account_moment.h).
struct LeftOutRead {
  std::string what;  // "NMT", "malloc statistics"
  ReadMoment read;
};

struct RssAccount {
  uint64_t rss = 0;                        // Rss summed over the smaps read
  uint64_t file = 0;                       // file-backed pages
  std::optional<uint64_t> java_heap;       // JVM with a known heap range
  std::optional<NmtKnown> nmt;             // JVM with NMT on
  std::optional<uint64_t> glibc_free;      // malloc statistics known
  std::optional<uint64_t> allocator_free;  // another allocator's free-but-kept known
  std::string allocator = "glibc";         // the allocator's name, for the equation
  uint64_t outside = 0;                    // outside NMT (nmt set), else all native memory
  bool outside_is_estimate = false;        // no malloc statistics: see above
  // NMT committed memory with no resident page behind it (not part of RSS).
  uint64_t nmt_committed_untouched = 0;

  bool is_jvm = false;

  // The moments of the reads it combines: the smaps read's (its RSS the
  // status read right after the walk), NMT's and the malloc statistics'
  // when it uses them. A read not in step with the smaps read is left out,
  // and the parts it would have split are told as without it: an "outside
  // NMT" from NMT read at another RSS is no figure at all (0 B, once).
  ReadMoment smaps_read;
  std::optional<ReadMoment> nmt_read;
  std::optional<ReadMoment> malloc_read;
  std::vector<LeftOutRead> left_out;
  // The target's RSS in the same sample (/proc/<pid>/status, read every
  // sample: the figure the page's header and the process section show);
  // 0: not read.
  uint64_t rss_now = 0;
  // Whether the smaps read is of the sample's moment: only then may a part
  // be set against figures read now (the sites' share of "outside NMT").
  bool InStepWithNow() const { return RssInStep(smaps_read.rss, rss_now); }

  // "RSS 812 MiB = file 40 MiB + Java heap 300 MiB + ...": the equation inspect
  // and /report print.
  std::string Equation() const;
};

// Absent without a smaps read; for a JVM also without the heap range while
// NMT is on (the heap's pages could not be told from native ones).
std::optional<RssAccount> AccountRss(const TargetSample& s);

// Part names for memtrimd_rss_account_bytes{part} with their values, in
// printing order (only the parts the account has).
std::vector<std::pair<const char*, uint64_t>> AccountParts(const RssAccount& a);

// Each of AccountParts' values as printed ("0.4 MiB"), in tenths of a MiB:
// the equation's terms rounded to add up to the RSS rounded to a tenth (the
// largest remainders get the spare tenths), and the NMT parts rounded to
// add up to the equation's NMT-known term. So a part prints the same in a
// legend of the parts as in Equation(), and every figure is within a tenth.
std::vector<std::string> AccountPartsShown(const RssAccount& a);

// The glibc free memory an account holds as glibc_free: the resident bytes
// of the arenas (arena heaps and [heap], from the smaps read) less the
// bytes malloc_info says are in use there. Needs both reads, and glibc's
// malloc serving the target; nullopt otherwise.
std::optional<uint64_t> GlibcFreeResident(const TargetSample& s);

}  // namespace memtrimd

#include "daemon/analysis/rss_account.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string_view>

namespace memtrimd {
namespace {

enum Kind : std::size_t { kBuffers, kMetaspace, kCode, kThreads, kGc, kJvmOther, kKinds };
using PerKind = std::array<uint64_t, kKinds>;

Kind KindOf(std::string_view category) {
  if (category == "Other") return kBuffers;
  if (category == "Metaspace" || category == "Class" || category == "Shared class space") {
    return kMetaspace;
  }
  if (category == "Code") return kCode;
  if (category == "Thread" || category == "Thread Stack") return kThreads;
  if (category == "GC" || category == "GCCardSet") return kGc;
  return kJvmOther;
}

uint64_t Sum(const PerKind& k) {
  uint64_t s = 0;
  for (uint64_t v : k) s += v;
  return s;
}

uint64_t Sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

// Lowers the figures to add up to `target` (<= their sum): first from
// `first` (when given), then from all in proportion to their size. The
// result adds up exactly.
void ShrinkTo(PerKind& k, uint64_t target, std::optional<Kind> first) {
  uint64_t sum = Sum(k);
  if (sum <= target) return;
  uint64_t excess = sum - target;
  if (first) {
    uint64_t take = std::min(excess, k[*first]);
    k[*first] -= take;
    excess -= take;
    sum -= take;
  }
  if (excess == 0) return;
  // Proportional: keep = v * target / sum, remainders to the largest.
  std::size_t largest = static_cast<std::size_t>(std::max_element(k.begin(), k.end()) - k.begin());
  uint64_t kept = 0;
  for (uint64_t& v : k) {
    v = static_cast<uint64_t>(static_cast<long double>(v) * target / sum);
    kept += v;
  }
  k[largest] += target - kept;
}

NmtKnown ToKnown(const PerKind& k) {
  return NmtKnown{k[kBuffers], k[kMetaspace], k[kCode], k[kThreads], k[kGc], k[kJvmOther]};
}

constexpr long double kTenth = 1024.0L * 1024.0L / 10.0L;

// Tenths of a MiB, rounded so that the parts add up to `want` tenths (at
// least the sum of their floors, at most one more each): the largest
// remainders get the spare tenths, so each part is within a tenth.
std::vector<uint64_t> TenthsThatAddUpTo(const std::vector<uint64_t>& parts, uint64_t want) {
  std::vector<uint64_t> out(parts.size());
  std::vector<std::pair<long double, std::size_t>> rest;
  uint64_t floors = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    long double t = static_cast<long double>(parts[i]) / kTenth;
    out[i] = static_cast<uint64_t>(std::floor(t));
    floors += out[i];
    rest.emplace_back(t - std::floor(t), i);
  }
  std::sort(rest.begin(), rest.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (std::size_t i = 0; floors < want && i < rest.size(); ++i, ++floors) ++out[rest[i].second];
  return out;
}

std::string Mib(uint64_t tenths) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%llu.%llu MiB", static_cast<unsigned long long>(tenths / 10),
                static_cast<unsigned long long>(tenths % 10));
  return buf;
}

// The equation's terms: each a run of AccountParts (the NMT kinds are one
// term, every other part its own), with its words.
struct Term {
  std::string words;
  std::size_t first = 0, count = 0;  // AccountParts indices
};
std::vector<Term> TermsOf(const RssAccount& a,
                          const std::vector<std::pair<const char*, uint64_t>>& parts) {
  std::string rest = a.nmt ? "outside NMT" : "native";
  if (!a.glibc_free && !a.allocator_free) rest += " and " + a.allocator + " free";
  if (a.outside_is_estimate && a.nmt) rest += " (estimate)";
  std::vector<Term> terms;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string_view part = parts[i].first;
    std::string words = part == "file"               ? "file-backed"
                        : part == "java_heap"        ? "Java heap"
                        : part.rfind("nmt_", 0) == 0 ? "NMT-known native"
                        : part == "glibc_free"       ? "glibc free kept"
                        : part == "allocator_free"   ? a.allocator + " free kept"
                                                     : rest;
    if (!terms.empty() && terms.back().words == words) {
      ++terms.back().count;
    } else {
      terms.push_back({words, i, 1});
    }
  }
  return terms;
}

// Each AccountParts value in tenths: first the equation's terms, rounded
// to add up to the RSS; then the parts of the NMT term, rounded to add up
// to that term. Every printed figure is within a tenth of its value, and a
// part prints the same in a legend as in the equation.
std::vector<uint64_t> PartTenths(const RssAccount& a, std::vector<Term>* terms_out = nullptr,
                                 std::vector<uint64_t>* term_tenths_out = nullptr) {
  const std::vector<std::pair<const char*, uint64_t>> parts = AccountParts(a);
  const std::vector<Term> terms = TermsOf(a, parts);
  std::vector<uint64_t> term_values;
  for (const Term& t : terms) {
    uint64_t sum = 0;
    for (std::size_t i = t.first; i < t.first + t.count; ++i) sum += parts[i].second;
    term_values.push_back(sum);
  }
  const std::vector<uint64_t> term_tenths = TenthsThatAddUpTo(
      term_values, static_cast<uint64_t>(std::llround(static_cast<long double>(a.rss) / kTenth)));
  std::vector<uint64_t> out;
  for (std::size_t k = 0; k < terms.size(); ++k) {
    std::vector<uint64_t> members;
    for (std::size_t i = terms[k].first; i < terms[k].first + terms[k].count; ++i) {
      members.push_back(parts[i].second);
    }
    for (uint64_t t : TenthsThatAddUpTo(members, term_tenths[k])) out.push_back(t);
  }
  if (terms_out != nullptr) *terms_out = terms;
  if (term_tenths_out != nullptr) *term_tenths_out = term_tenths;
  return out;
}

uint64_t ArenaResident(const glibc::RssBreakdown& b) { return b.arena_heaps + b.main_arena; }

}  // namespace

std::optional<uint64_t> GlibcFreeResident(const TargetSample& s) {
  if (!s.glibc || !s.malloc || IsOtherAllocator(SampleAllocator(s))) return std::nullopt;
  const jvm::MallocInfo& m = s.malloc->info;
  uint64_t in_use_arenas = Sub(m.system_current, m.total_fast_bytes + m.total_rest_bytes);
  return Sub(ArenaResident(s.glibc->breakdown), in_use_arenas);
}

std::optional<RssAccount> AccountRss(const TargetSample& s) {
  if (!s.glibc) return std::nullopt;
  const glibc::RssBreakdown& b = s.glibc->breakdown;
  RssAccount a;
  a.is_jvm = s.jvm.has_value() || s.jvm_perf.has_value();
  if (a.is_jvm && !s.glibc->java_heap_known) return std::nullopt;
  a.rss = b.total;
  a.smaps_read = {s.glibc->read_at,
                  s.glibc->status_rss_bytes ? s.glibc->status_rss_bytes : b.total};
  a.rss_now = s.process ? s.process->Rss() : 0;
  a.file = b.file_and_shared;
  if (a.is_jvm) a.java_heap = b.java_heap;
  uint64_t arena_resident = ArenaResident(b);
  uint64_t anon_rest = arena_resident + b.other_anonymous;  // == rss - file - java heap

  // Written pages of file mappings: the CDS archive's (NMT "Shared class
  // space") and libraries' data. The rest of other_anonymous is anonymous
  // mappings: mmapped malloc chunks and the JVM's own mappings.
  uint64_t file_anon = std::min(b.anon_in_file, b.other_anonymous);
  uint64_t anon_maps = b.other_anonymous - file_anon;
  // malloc space: what is free in it, and where its in-use chunks are.
  uint64_t malloc_in_use = anon_rest;  // without statistics: at most all of it
  std::optional<uint64_t> jvm_maps;    // without statistics: see below
  // The agent's answer says for certain; else what maps showed.
  const Allocator allocator = SampleAllocator(s);
  const bool other_allocator = IsOtherAllocator(allocator);
  if (other_allocator) a.allocator = AllocatorName(allocator);
  // Each read beside the smaps read only when of its moment.
  auto in_step = [&](const char* what, ReadMoment read) {
    if (RssInStep(a.smaps_read.rss, read.rss)) return true;
    a.left_out.push_back({what, read});
    return false;
  };
  const MallocStats* malloc = nullptr;
  if (s.malloc && !other_allocator &&
      in_step("malloc statistics", {s.malloc->read_at, s.malloc->rss_bytes})) {
    malloc = &*s.malloc;
    a.malloc_read = ReadMoment{s.malloc->read_at, s.malloc->rss_bytes};
  }
  if (malloc != nullptr) {
    uint64_t mmapped = std::min(s.malloc->info.total_mmap_bytes, anon_maps);
    a.glibc_free = GlibcFreeResident(s);
    malloc_in_use = arena_resident - *a.glibc_free + mmapped;
    jvm_maps = anon_maps - mmapped;
  } else {
    a.outside_is_estimate = true;
  }

  // NMT's own moment; a sample made elsewhere (a replay) has the run's.
  const bool nmt_enabled = a.is_jvm && s.jvm && s.jvm->nmt && s.jvm->nmt->enabled;
  const ReadMoment nmt_read =
      nmt_enabled ? ReadMoment{s.jvm->nmt_read_at != std::chrono::system_clock::time_point{}
                                   ? s.jvm->nmt_read_at
                                   : s.jvm->read_at,
                               s.jvm->nmt_rss_bytes}
                  : ReadMoment{};
  const bool nmt_on = nmt_enabled && in_step("NMT", nmt_read);
  if (nmt_on) {
    a.nmt_read = nmt_read;
    PerKind malloced{}, mapped{};
    uint64_t cds = 0;  // the CDS archive: a file mapping
    for (const jvm::NmtCategory& c : s.jvm->nmt->categories) {
      if (c.name == "Java Heap") continue;
      uint64_t by_malloc = c.malloc_bytes.value_or(0) + c.arena_bytes.value_or(0);
      Kind k = KindOf(c.name);
      malloced[k] += std::min(by_malloc, c.committed);
      if (c.name == "Shared class space") {
        cds += Sub(c.committed, by_malloc);
      } else {
        mapped[k] += Sub(c.committed, by_malloc);
      }
    }
    uint64_t committed = Sum(malloced) + Sum(mapped) + cds;
    // The JVM's own mappings: they can only be in jvm_maps (untouched GC
    // bitmaps go first). Of the CDS archive only the pages the JVM wrote are
    // anonymous; the others are file-backed and counted there.
    // Without malloc statistics the mmapped malloc chunks cannot be told
    // from the JVM's mappings: take the JVM's malloc'd bytes as if they all
    // sat in such chunks, so that untouched committed memory never claims
    // pages that are really malloc's (which would push outside NMT to 0).
    ShrinkTo(mapped, jvm_maps ? *jvm_maps : Sub(anon_maps, Sum(malloced)), kGc);
    mapped[kMetaspace] += std::min(cds, file_anon);
    uint64_t malloc_room = malloc != nullptr ? malloc_in_use : Sub(anon_rest, Sum(mapped));
    ShrinkTo(malloced, malloc_room, std::nullopt);
    PerKind both{};
    for (std::size_t i = 0; i < kKinds; ++i) both[i] = malloced[i] + mapped[i];
    a.nmt = ToKnown(both);
    a.nmt_committed_untouched = committed - a.nmt->total();
  }
  const uint64_t known = a.glibc_free.value_or(0) + (a.nmt ? a.nmt->total() : 0);
  if (other_allocator && s.allocator) {
    if (auto kept = agent::CommonMeasures(*s.allocator).free_kept) {
      a.allocator_free = std::min(*kept, anon_rest - known);
    }
  }
  a.outside = anon_rest - known - a.allocator_free.value_or(0);
  return a;
}

std::vector<std::pair<const char*, uint64_t>> AccountParts(const RssAccount& a) {
  std::vector<std::pair<const char*, uint64_t>> p;
  p.emplace_back("file", a.file);
  if (a.java_heap) p.emplace_back("java_heap", *a.java_heap);
  if (a.nmt) {
    p.emplace_back("nmt_buffers", a.nmt->buffers);
    p.emplace_back("nmt_metaspace", a.nmt->metaspace);
    p.emplace_back("nmt_code", a.nmt->code);
    p.emplace_back("nmt_threads", a.nmt->threads);
    p.emplace_back("nmt_gc", a.nmt->gc);
    p.emplace_back("nmt_jvm_other", a.nmt->jvm_other);
  }
  if (a.glibc_free) p.emplace_back("glibc_free", *a.glibc_free);
  if (a.allocator_free) p.emplace_back("allocator_free", *a.allocator_free);
  p.emplace_back(a.nmt ? "outside_nmt" : "native", a.outside);
  return p;
}

std::vector<std::string> AccountPartsShown(const RssAccount& a) {
  std::vector<std::string> out;
  for (uint64_t t : PartTenths(a)) out.push_back(Mib(t));
  return out;
}

std::string RssAccount::Equation() const {
  std::vector<Term> terms;
  std::vector<uint64_t> tenths;
  PartTenths(*this, &terms, &tenths);
  uint64_t total_tenths = 0;
  for (uint64_t t : tenths) total_tenths += t;
  std::string line = "RSS " + Mib(total_tenths) + " =";
  for (std::size_t i = 0; i < terms.size(); ++i) {
    line += (i ? " + " : " ") + terms[i].words + " " + Mib(tenths[i]);
  }
  return line;
}

}  // namespace memtrimd

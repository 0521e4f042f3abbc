#include "collectors/jvm/malloc_info.h"

#include <cstddef>
#include <limits>
#include <string>

#include "collectors/common/text.h"

namespace memtrimd::jvm {
namespace {

constexpr uint64_t kPage = 4096;

// One element's name and attribute text: "<size from="1" to="2"/>" ->
// name "size", attrs " from=\"1\" to=\"2\"", closing false.
struct Tag {
  std::string_view name;
  std::string_view attrs;
  bool closing = false;  // "</heap>"
};

// The value of attribute `key` in `attrs` (double or single quotes).
std::optional<std::string_view> Attr(std::string_view attrs, std::string_view key) {
  std::size_t i = 0;
  while (i < attrs.size()) {
    while (i < attrs.size() && (text::IsSpace(attrs[i]) || attrs[i] == '\n' || attrs[i] == '\r'))
      ++i;
    std::size_t name_start = i;
    while (i < attrs.size() && attrs[i] != '=' && !text::IsSpace(attrs[i]) && attrs[i] != '\n' &&
           attrs[i] != '\r')
      ++i;
    std::string_view name = attrs.substr(name_start, i - name_start);
    while (i < attrs.size() && text::IsSpace(attrs[i])) ++i;
    if (i >= attrs.size() || attrs[i] != '=') {
      if (i == name_start) ++i;  // stray character: skip it
      continue;
    }
    ++i;
    while (i < attrs.size() && text::IsSpace(attrs[i])) ++i;
    if (i >= attrs.size() || (attrs[i] != '"' && attrs[i] != '\'')) continue;
    char quote = attrs[i++];
    std::size_t end = attrs.find(quote, i);
    if (end == std::string_view::npos) return std::nullopt;
    std::string_view value = attrs.substr(i, end - i);
    i = end + 1;
    if (name == key) return value;
  }
  return std::nullopt;
}

std::optional<uint64_t> UintAttr(std::string_view attrs, std::string_view key) {
  auto v = Attr(attrs, key);
  if (!v) return std::nullopt;
  return text::ParseUint(text::Trim(*v));
}

uint64_t SatAdd(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max()
                                                      : a + b;
}

// The bytes malloc_trim would madvise away from the chunks of one
// <size>/<unsorted> entry, if all were resident.
//
// glibc's __malloc_info (malloc/malloc.c) prints one <size> per non-empty
// fast bin and regular bin and one <unsorted> for the unsorted bin; for
// regular bins and the unsorted bin `from`/`to` are the smallest and largest
// chunk size found and `total` the sum of the chunk sizes (with their flag
// bits: one byte a chunk too many, which does not matter here); fast bins
// are far below a page. malloc_trim (mtrim) consolidates the fast bins, then
// for every chunk of the unsorted bin and of the bins from bin_index(page)
// up madvises the whole pages between the chunk's start + 48 (its header
// and list links stay) and its end. So a chunk of size s at address p gives
// floor_page(p + s) - ceil_page(p + 48) when that is positive: nothing below
// s = page + 48, and on average s - (page + 32) above it (p is 16-aligned
// and, over many chunks, evenly spread within a page: both ends lose half a
// page less 8 bytes on average). Only `total` and `count` are known, so an
// entry whose chunks are all that large gives total - count * (page + 32);
// one that spans the limit (`from` below it, in practice the unsorted bin)
// is taken as its `from` chunk giving nothing and the rest giving the
// average. An estimate, not a bound: a chunk differs from the average by
// less than a page, and chunks of one size laid out at one alignment can
// all differ the same way. The top chunk is not in these entries (only in
// <total type="rest">); the main arena's top is trimmed by lowering brk.
uint64_t ReleasableInEntry(uint64_t from, uint64_t to, uint64_t total, uint64_t count) {
  constexpr uint64_t kMinChunk = kPage + 48;     // smallest chunk mtrim takes a page from
  constexpr uint64_t kAverageLoss = kPage + 32;  // header, links and the two partial pages
  if (to < kMinChunk || count == 0) return 0;
  if (from < kMinChunk) {
    total = total > from ? total - from : 0;
    count -= 1;
  }
  const uint64_t loss = count > std::numeric_limits<uint64_t>::max() / kAverageLoss
                            ? std::numeric_limits<uint64_t>::max()
                            : count * kAverageLoss;
  return total > loss ? total - loss : 0;
}

}  // namespace

Result<MallocInfo> ParseMallocInfo(std::string_view xml) {
  MallocInfo out;
  bool seen_malloc = false;
  bool seen_end = false;
  bool in_heap = false;
  MallocArena arena;
  uint64_t listed_bytes = 0;  // the arena's <size> and <unsorted> totals

  auto finish_arena = [&]() {
    if (in_heap) {
      // rest = top + bins, and the listed entries are bins + fast bins.
      uint64_t bins = listed_bytes > arena.fast_bytes ? listed_bytes - arena.fast_bytes : 0;
      arena.top_bytes = arena.rest_bytes > bins ? arena.rest_bytes - bins : 0;
      out.arenas.push_back(arena);
    }
    in_heap = false;
  };
  auto bad = [](std::string_view what) {
    return Status(ErrorCode::kParseError, "malloc_info: bad <" + std::string(what) + "> element");
  };

  std::size_t pos = 0;
  while (true) {
    std::size_t open = xml.find('<', pos);
    if (open == std::string_view::npos) break;
    std::size_t close = xml.find('>', open + 1);
    if (close == std::string_view::npos) break;
    pos = close + 1;
    std::string_view inner = xml.substr(open + 1, close - open - 1);
    if (!inner.empty() && inner.back() == '/') inner.remove_suffix(1);
    Tag tag;
    if (!inner.empty() && inner.front() == '/') {
      tag.closing = true;
      inner.remove_prefix(1);
    }
    std::size_t n = 0;
    while (n < inner.size() && !text::IsSpace(inner[n]) && inner[n] != '\n' && inner[n] != '\r')
      ++n;
    tag.name = inner.substr(0, n);
    tag.attrs = inner.substr(n);

    if (tag.name == "malloc") {
      if (tag.closing) {
        finish_arena();
        seen_end = seen_malloc;
        break;
      }
      seen_malloc = true;
      continue;
    }
    if (!seen_malloc) continue;

    if (tag.name == "heap") {
      finish_arena();
      if (tag.closing) continue;
      auto nr = UintAttr(tag.attrs, "nr");
      if (!nr || *nr > static_cast<uint64_t>(std::numeric_limits<int>::max())) return bad("heap");
      arena = MallocArena{};
      listed_bytes = 0;
      arena.nr = static_cast<int>(*nr);
      in_heap = true;
      continue;
    }
    if (tag.closing) continue;

    if (tag.name == "size" || tag.name == "unsorted") {
      if (!in_heap) continue;
      auto from = UintAttr(tag.attrs, "from");
      auto to = UintAttr(tag.attrs, "to");
      auto total = UintAttr(tag.attrs, "total");
      // glibc has always printed count; a list without it counts one chunk.
      auto count = UintAttr(tag.attrs, "count");
      if (!from || !to || !total) return bad(tag.name);
      arena.bin_pages_bytes =
          SatAdd(arena.bin_pages_bytes, ReleasableInEntry(*from, *to, *total, count.value_or(1)));
      listed_bytes = SatAdd(listed_bytes, *total);
      continue;
    }

    auto type = Attr(tag.attrs, "type");
    if (tag.name == "total") {
      if (!type) return bad(tag.name);
      auto size = UintAttr(tag.attrs, "size");
      if (!size) return bad(tag.name);
      if (*type == "fast") {
        (in_heap ? arena.fast_bytes : out.total_fast_bytes) = *size;
      } else if (*type == "rest") {
        (in_heap ? arena.rest_bytes : out.total_rest_bytes) = *size;
      } else if (*type == "mmap" && !in_heap) {
        out.total_mmap_bytes = *size;
        out.total_mmap_count = UintAttr(tag.attrs, "count").value_or(0);
      }
      continue;
    }
    if (tag.name == "system") {
      if (!type) return bad(tag.name);
      auto size = UintAttr(tag.attrs, "size");
      if (!size) return bad(tag.name);
      if (*type == "current") {
        (in_heap ? arena.system_current : out.system_current) = *size;
      } else if (*type == "max") {
        (in_heap ? arena.system_max : out.system_max) = *size;
      }
      continue;
    }
    if (tag.name == "aspace") {
      if (!type) return bad(tag.name);
      auto size = UintAttr(tag.attrs, "size");
      if (!size) return bad(tag.name);
      if (*type == "total") {
        (in_heap ? arena.aspace_total : out.aspace_total) = *size;
      } else if (*type == "mprotect") {
        (in_heap ? arena.aspace_mprotect : out.aspace_mprotect) = *size;
      } else if (*type == "subheaps" && in_heap) {
        arena.subheaps = *size;
      }
      continue;
    }
    // <sizes>, unknown future elements: ignored.
  }
  if (!seen_malloc) return Status(ErrorCode::kParseError, "malloc_info: no <malloc> element");
  // A cut-off answer would give wrong totals: insist on the closing tag.
  if (!seen_end) return Status(ErrorCode::kParseError, "malloc_info: truncated (no </malloc>)");
  return out;
}

}  // namespace memtrimd::jvm

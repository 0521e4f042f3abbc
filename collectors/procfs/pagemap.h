// Which pages of the target are resident, from /proc/<pid>/pagemap: what
// splits a merged mapping's Rss between the arena heaps inside it, and what
// tells whether a heap candidate's header page exists before it is read.
//
// Opening pagemap needs the same ptrace-read access as process_vm_readv
// (same uid and a dumpable target, or CAP_SYS_PTRACE). Without
// CAP_SYS_ADMIN the page frame numbers read as 0; the flag bits used here
// are still given. Reads take the target's mmap lock like a smaps walk and
// never wait on the target itself.
//
// pagemap marks a page present that smaps' Rss does not count: the shared
// zero page, mapped where a page was read before it was ever written. In a
// glibc heap that takes a read of memory nobody wrote (calloc does not clear
// memory freshly made accessible in a non-main arena, so reading a fresh
// calloc block does it). Such pages cost no RAM; counting them would put
// bytes into a heap that Rss does not have, so a mapping's heaps are held to
// its Rss (FitResidentToMappings), and the rest of it stays other anonymous.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "collectors/common/status.h"
#include "collectors/common/unique_fd.h"

namespace memtrimd::procfs {

inline constexpr uint64_t kPagemapPresent = 1ull << 63;
inline constexpr uint64_t kPagemapSwapped = 1ull << 62;

// Pure: how many of these pagemap entries are resident pages (present; a
// swapped-out page is in smaps' Swap, not its Rss).
uint64_t CountPresent(std::span<const uint64_t> entries);

// Pure: the bytes of [start, start + length) that lie on resident pages,
// given the pagemap entries of the pages from `first_page` on (pages the
// entries do not cover count as not resident). A page only partly inside
// the range counts by its overlap, so two allocations sharing a page count
// it once between them, never twice.
uint64_t ResidentInRange(uint64_t start, uint64_t length, uint64_t first_page,
                         std::span<const uint64_t> entries, uint64_t page_size);

// Which pages of a process are resident: its pagemap, or a recording of
// the answers (tests/readme replays one).
class PageResidency {
 public:
  virtual ~PageResidency() = default;
  // Whether the page holding `address` is resident.
  virtual Result<bool> Present(uint64_t address) const = 0;
  // Resident bytes in [start, start + length), in whole pages.
  virtual Result<uint64_t> ResidentBytes(uint64_t start, uint64_t length) const = 0;
  // The raw entries of the pages from `first_page` on (out.size() of
  // them): what reads of many small ranges batch into one. A recording
  // without them answers kUnavailable.
  virtual Status Entries(uint64_t first_page, std::span<uint64_t> out) const;
  virtual uint64_t PageSize() const { return 4096; }
  // Bytes of [start, start + length) on resident pages, partial first and
  // last pages by overlap (ResidentInRange), read through Entries.
  Result<uint64_t> RangeResidentBytes(uint64_t start, uint64_t length) const;
};

// Opens the residency of the process at `proc_dir` (OpenPagemap).
using PageResidencyOpener =
    std::function<Result<std::unique_ptr<PageResidency>>(const std::string& proc_dir)>;

class Pagemap : public PageResidency {
 public:
  // Opens <proc_dir>/pagemap.
  static Result<Pagemap> Open(const std::string& proc_dir);
  Pagemap(Pagemap&& other) noexcept;
  Pagemap& operator=(Pagemap&& other) noexcept;
  Pagemap(const Pagemap&) = delete;
  Pagemap& operator=(const Pagemap&) = delete;
  ~Pagemap();

  Result<bool> Present(uint64_t address) const override;
  // Read in chunks of a fixed buffer (a 64 MiB heap is 128 KiB of pagemap).
  Result<uint64_t> ResidentBytes(uint64_t start, uint64_t length) const override;
  Status Entries(uint64_t first_page, std::span<uint64_t> out) const override {
    return ReadEntries(first_page, out);
  }
  uint64_t PageSize() const override { return page_size_; }

 private:
  Pagemap(UniqueFd fd, uint64_t page_size) : fd_(std::move(fd)), page_size_(page_size) {}
  Status ReadEntries(uint64_t first_page, std::span<uint64_t> out) const;
  UniqueFd fd_;
  uint64_t page_size_ = 4096;
};

// Pagemap::Open, as a PageResidency.
Result<std::unique_ptr<PageResidency>> OpenPagemap(const std::string& proc_dir);

}  // namespace memtrimd::procfs

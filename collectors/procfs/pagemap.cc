#include "collectors/procfs/pagemap.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include "collectors/common/access.h"

namespace memtrimd::procfs {

uint64_t CountPresent(std::span<const uint64_t> entries) {
  uint64_t n = 0;
  for (uint64_t e : entries) n += (e & kPagemapPresent) != 0 ? 1 : 0;
  return n;
}

uint64_t ResidentInRange(uint64_t start, uint64_t length, uint64_t first_page,
                         std::span<const uint64_t> entries, uint64_t page_size) {
  if (length == 0 || page_size == 0) return 0;
  const uint64_t end = start + length < start ? UINT64_MAX : start + length;
  uint64_t bytes = 0;
  for (uint64_t page = std::max(start / page_size, first_page); page * page_size < end; ++page) {
    if (page - first_page >= entries.size()) break;
    if ((entries[page - first_page] & kPagemapPresent) == 0) continue;
    const uint64_t from = std::max(start, page * page_size);
    const uint64_t to = std::min(end, page * page_size + page_size);
    bytes += to - from;
  }
  return bytes;
}

Status PageResidency::Entries(uint64_t /*first_page*/, std::span<uint64_t> /*out*/) const {
  return Status(ErrorCode::kUnavailable, "pagemap entries not recorded");
}

Result<uint64_t> PageResidency::RangeResidentBytes(uint64_t start, uint64_t length) const {
  std::array<uint64_t, 2048> buf{};  // 16 KiB: 8 MiB of address space per read
  const uint64_t size = PageSize();
  if (length == 0) return uint64_t{0};
  const uint64_t end = start + length < start ? UINT64_MAX : start + length;
  uint64_t page = start / size;
  const uint64_t end_page = (end - 1) / size + 1;
  uint64_t bytes = 0;
  while (page < end_page) {
    const std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(buf.size(), end_page - page));
    std::span<uint64_t> chunk(buf.data(), n);
    if (Status st = Entries(page, chunk); !st.ok()) return st;
    bytes += ResidentInRange(start, end - start, page, chunk, size);
    page += n;
  }
  return bytes;
}

Result<Pagemap> Pagemap::Open(const std::string& proc_dir) {
  const std::string path = proc_dir + "/pagemap";
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    return ExplainDenied(Status::FromErrno(errno, "open " + path), "open " + path, path);
  }
  long page = ::sysconf(_SC_PAGESIZE);
  return Pagemap(std::move(fd), page > 0 ? static_cast<uint64_t>(page) : 4096);
}

Result<std::unique_ptr<PageResidency>> OpenPagemap(const std::string& proc_dir) {
  Result<Pagemap> pm = Pagemap::Open(proc_dir);
  if (!pm.ok()) return pm.status();
  return std::unique_ptr<PageResidency>(new Pagemap(std::move(pm).value()));
}

Pagemap::Pagemap(Pagemap&& other) noexcept = default;
Pagemap& Pagemap::operator=(Pagemap&& other) noexcept = default;
Pagemap::~Pagemap() = default;

Status Pagemap::ReadEntries(uint64_t first_page, std::span<uint64_t> out) const {
  const std::size_t want = out.size_bytes();
  std::size_t got = 0;
  while (got < want) {
    ssize_t n = ::pread(fd_.get(), reinterpret_cast<char*>(out.data()) + got, want - got,
                        static_cast<off_t>(first_page * sizeof(uint64_t) + got));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "pread pagemap");
    }
    if (n == 0) return Status(ErrorCode::kUnavailable, "pagemap: short read");
    got += static_cast<std::size_t>(n);
  }
  return Status::Ok();
}

Result<bool> Pagemap::Present(uint64_t address) const {
  std::array<uint64_t, 1> entry{};
  if (Status st = ReadEntries(address / page_size_, entry); !st.ok()) return st;
  return (entry[0] & kPagemapPresent) != 0;
}

Result<uint64_t> Pagemap::ResidentBytes(uint64_t start, uint64_t length) const {
  std::array<uint64_t, 2048> buf{};  // 16 KiB: 8 MiB of address space per read
  uint64_t page = start / page_size_;
  const uint64_t end_page = (start + length + page_size_ - 1) / page_size_;
  uint64_t present = 0;
  while (page < end_page) {
    const std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(buf.size(), end_page - page));
    std::span<uint64_t> chunk(buf.data(), n);
    if (Status st = ReadEntries(page, chunk); !st.ok()) return st;
    present += CountPresent(chunk);
    page += n;
  }
  return present * page_size_;
}

}  // namespace memtrimd::procfs

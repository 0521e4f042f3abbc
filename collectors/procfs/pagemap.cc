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

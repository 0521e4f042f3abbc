// An ElfReader over fuzz input that checks what the ELF parsers promise of
// their reads: each inside the image and at most 64 KiB, all together within
// the budget the caller gave. Shared by the ELF fuzz targets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "collectors/elf/elf_symbols.h"
#include "tests/fuzz/fuzz_util.h"

namespace memtrimd::fuzz {

class CheckedElfReader : public elf::ElfReader {
 public:
  CheckedElfReader(std::string_view bytes, std::size_t max_bytes)
      : image_(bytes), size_(bytes.size()), max_(max_bytes) {}
  uint64_t size() const override { return size_; }
  Status Read(uint64_t offset, std::size_t len, char* out) const override {
    FUZZ_CHECK(offset <= size_ && len <= size_ - offset);
    FUZZ_CHECK(len <= 64 * 1024);
    total_ += len;
    FUZZ_CHECK(total_ <= max_);
    return image_.Read(offset, len, out);
  }
  // Bytes read so far.
  std::size_t total() const { return total_; }

 private:
  elf::ElfBytes image_;
  uint64_t size_;
  std::size_t max_;
  mutable std::size_t total_ = 0;
};

}  // namespace memtrimd::fuzz

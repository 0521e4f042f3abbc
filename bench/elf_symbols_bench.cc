// elf_symbols_bench: what telling a statically linked allocator costs, once
// per target at discovery: elf::StaticAllocator (open <proc_dir>/exe,
// pread the ELF header, section headers and symbol tables, match the
// allocator API names) on each executable named on the command line.
//
//   elf_symbols_bench [benchmark flags] EXECUTABLE...
//
// Each executable is reached as a /proc entry would be: a temporary
// directory whose `exe` links to it. The page cache is warm after the first
// iteration (a target's executable is mapped by the running process, so its
// pages are usually cached anyway). Counters: table_bytes, what the parser
// read (everything but code and data); file_bytes, the file's size.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "collectors/common/target.h"
#include "collectors/elf/elf_symbols.h"

namespace {

using memtrimd::Status;
using memtrimd::Target;
using memtrimd::elf::ElfReader;

// Counts the bytes DefinedSymbols asks for.
class CountingReader : public ElfReader {
 public:
  explicit CountingReader(std::string bytes) : bytes_(std::move(bytes)), image_(bytes_) {}
  uint64_t size() const override { return image_.size(); }
  Status Read(uint64_t offset, std::size_t len, char* out) const override {
    total += len;
    return image_.Read(offset, len, out);
  }
  mutable std::size_t total = 0;

 private:
  std::string bytes_;
  memtrimd::elf::ElfBytes image_;
};

std::string ReadAll(const std::string& path) {
  std::string out;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    char buf[1 << 16];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
    std::fclose(f);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: elf_symbols_bench [benchmark flags] EXECUTABLE...\n");
    return 2;
  }
  std::vector<std::string> dirs;
  for (int i = 1; i < argc; ++i) {
    std::string path = std::filesystem::absolute(argv[i]).string();
    char dir[] = "/tmp/elf_symbols_bench.XXXXXX";
    if (::mkdtemp(dir) == nullptr) return 1;
    dirs.emplace_back(dir);
    std::filesystem::create_symlink(path, dirs.back() + "/exe");
    std::string bytes = ReadAll(path);
    double file_bytes = static_cast<double>(bytes.size());
    CountingReader counter(std::move(bytes));
    auto names = memtrimd::elf::DefinedSymbols(counter, memtrimd::elf::AllocatorApiSymbols(),
                                               16 * 1024 * 1024);
    double table_bytes = static_cast<double>(counter.total);
    Target t;
    t.proc_dir = dirs.back();
    std::string verdict = "none";
    if (!names.ok()) {
      verdict = "error: " + names.status().message();
    } else if (auto a = memtrimd::elf::AllocatorFromSymbols(*names)) {
      verdict = memtrimd::AllocatorName(*a);
    }
    std::string label = std::filesystem::path(path).filename().string() + " (" + verdict + ")";
    benchmark::RegisterBenchmark(("StaticAllocator/" + label).c_str(),
                                 [t, file_bytes, table_bytes](benchmark::State& state) {
                                   for (auto _ : state) {
                                     auto r = memtrimd::elf::StaticAllocator(t);
                                     benchmark::DoNotOptimize(r);
                                   }
                                   state.counters["file_bytes"] = file_bytes;
                                   state.counters["table_bytes"] = table_bytes;
                                 })
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  for (const std::string& d : dirs) std::filesystem::remove_all(d);
  return 0;
}

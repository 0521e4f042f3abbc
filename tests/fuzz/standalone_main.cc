// Runs a libFuzzer-style target without libFuzzer (for gcc builds and the
// test suite): every seed file, then a fixed number of deterministic
// mutations of each (byte flips, truncations, splices, inserted digits).
//
// Usage: <target> [--iterations N] SEED_FILE_OR_DIR...
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

uint64_t Next(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

void RunOne(const std::string& input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

std::string Mutate(const std::string& seed, const std::vector<std::string>& all, uint64_t& rng) {
  std::string s = seed;
  int edits = 1 + static_cast<int>(Next(rng) % 8);
  static const char* kTokens[] = {"0",
                                  "-",
                                  "\n",
                                  " ",
                                  ":",
                                  "kB",
                                  "ffffffffffffffff",
                                  "(",
                                  ")",
                                  "max",
                                  "18446744073709551616",
                                  "\t",
                                  "---p",
                                  "rw-p",
                                  "=",
                                  "<",
                                  "/>",
                                  "\"",
                                  "0x",
                                  "#",
                                  "\\u",
                                  "->",
                                  "K",
                                  "B",
                                  "--",
                                  "{["};
  for (int e = 0; e < edits; ++e) {
    uint64_t pos = s.empty() ? 0 : Next(rng) % s.size();
    switch (Next(rng) % 5) {
      case 0:
        if (!s.empty()) s[pos] = static_cast<char>(Next(rng));
        break;
      case 1:
        s.resize(pos);
        break;
      case 2:
        s.insert(pos, kTokens[Next(rng) % (sizeof(kTokens) / sizeof(kTokens[0]))]);
        break;
      case 3:
        if (!s.empty()) s.erase(pos, Next(rng) % 64);
        break;
      case 4: {
        const std::string& other = all[Next(rng) % all.size()];
        if (!other.empty()) {
          uint64_t from = Next(rng) % other.size();
          s.insert(pos, other.substr(from, Next(rng) % 256));
        }
        break;
      }
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  long iterations = 2000;
  std::vector<std::string> seeds;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
      iterations = std::atol(argv[++i]);
      continue;
    }
    std::filesystem::path p(argv[i]);
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else {
      files.push_back(p);
    }
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      seeds.push_back(ss.str());
    }
  }
  seeds.push_back("");
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  long runs = 0;
  for (const std::string& s : seeds) {
    RunOne(s);
    ++runs;
  }
  for (long i = 0; i < iterations; ++i) {
    RunOne(Mutate(seeds[i % seeds.size()], seeds, rng));
    ++runs;
  }
  std::printf("%ld inputs from %zu seeds, no crash\n", runs, seeds.size());
  return 0;
}

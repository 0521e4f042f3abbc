// Symbolisation from outside a live program, and Go's pprof reading the
// profile made of it. tests/workloads/site_holder prints the addresses of
// its three known functions (hold_200, hold_50, hold_10), of the return
// sites inside them and in main; its /proc/<pid>/maps is read while it
// runs, and each address is named by collectors/symbols. The truth comes
// from binutils: `nm` for each function's address in its file, `readelf
// -n` for each file's build id. The profile (made-up weights on those
// stacks) must read in `go tool pprof -top` as the three functions in
// order with their values, and without a warning.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "collectors/procfs/maps.h"
#include "collectors/symbols/symbolize.h"
#include "collectors/symbols/target_elf.h"
#include "daemon/report/pprof_profile.h"
#include "tests/integration/harness.h"
#include "tests/integration/pprof_top.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;
using symbols::Frame;
using symbols::FrameKind;

struct Printed {
  std::string kind;  // function, site, caller, libc, anon
  std::string name;
  uint64_t address = 0;
};

std::vector<Printed> ParsePrinted(const std::string& text) {
  std::vector<Printed> out;
  std::istringstream in(text);
  std::string kind, name, hex;
  while (in >> kind && kind != "ready" && in >> name >> hex) {
    out.push_back(Printed{kind, name, std::stoull(hex, nullptr, 16)});
  }
  return out;
}

// `nm` of a file: symbol name -> value (the first of each name). With
// dynamic, `nm -D` (the exported table, which libc keeps stripped).
std::map<std::string, uint64_t> Nm(const std::string& path, bool dynamic) {
  std::vector<std::string> argv = {"nm", "--defined-only"};
  if (dynamic) argv.push_back("-D");
  argv.push_back(path);
  RunResult r = RunCommand(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, uint64_t> out;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string value, type, name;
    if (!(fields >> value >> type >> name)) continue;
    // nm -D prints versioned names (malloc@@GLIBC_2.2.5): the name is
    // what comes before.
    name = name.substr(0, name.find('@'));
    out.emplace(name, std::stoull(value, nullptr, 16));
  }
  return out;
}

std::string ReadelfBuildId(const std::string& path) {
  RunResult r = RunCommand({"readelf", "-n", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string key = "Build ID: ";
  std::size_t at = r.out.find(key);
  if (at == std::string::npos) return "";
  std::size_t end = r.out.find('\n', at);
  return r.out.substr(at + key.size(), end - at - key.size());
}

class SymbolizeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string out = dir_ / "site_holder.out";
    SpawnOptions o;
    o.stdout_path = out;
    // A unit of 64 KiB: 12.5 MiB, 3.1 MiB and 640 KiB held.
    holder_ = Process({WorkloadBin("site_holder"), "65536"}, o);
    ASSERT_TRUE(WaitFor(
        [&] { return ReadFile(out).find("ready\n") != std::string::npos || !holder_.running(); },
        10s));
    ASSERT_TRUE(holder_.running());
    printed_ = ParsePrinted(ReadFile(out));
    ASSERT_EQ(printed_.size(), 11u) << ReadFile(out);
    auto maps = procfs::ParseMaps(ReadFile("/proc/" + std::to_string(holder_.pid()) + "/maps"));
    ASSERT_TRUE(maps.ok()) << maps.status().message();
    maps_ = std::move(maps).value();
    target_.pid = holder_.pid();
    target_.proc_dir = "/proc/" + std::to_string(holder_.pid());
    exe_ = fs::read_symlink(target_.proc_dir + "/exe").string();
  }

  std::vector<uint64_t> Addresses() const {
    std::vector<uint64_t> out;
    for (const Printed& p : printed_) out.push_back(p.address);
    return out;
  }

  TempDir dir_;
  Process holder_;
  std::vector<Printed> printed_;
  std::vector<procfs::MapsEntry> maps_;
  Target target_;
  std::string exe_;
};

TEST_F(SymbolizeTest, NamesAndBuildIdsMatchBinutils) {
  symbols::SymbolCache cache(64u << 20);
  symbols::TargetElfSource source(target_, cache);
  const std::vector<uint64_t> addresses = Addresses();
  symbols::Symbolization s = symbols::Symbolize(addresses, maps_, source);
  ASSERT_EQ(s.frames.size(), printed_.size());

  const auto exe_symbols = Nm(exe_, false);
  const std::string exe_id = ReadelfBuildId(exe_);
  ASSERT_EQ(exe_id.size(), 40u);
  std::string libc_path;
  for (std::size_t i = 0; i < printed_.size(); ++i) {
    const Printed& p = printed_[i];
    const Frame& f = s.frames[i];
    SCOPED_TRACE(p.kind + " " + p.name);
    if (p.kind == "anon") {
      EXPECT_EQ(f.kind, FrameKind::kAnon);
      EXPECT_EQ(f.function, "[anon]");
      continue;
    }
    ASSERT_EQ(f.kind, FrameKind::kFunction) << f.function;
    ASSERT_GE(f.file, 0);
    const symbols::MappedFile& file = s.files[static_cast<std::size_t>(f.file)];
    if (p.kind == "libc") {
      // malloc has aliases in libc's table (__libc_malloc...): any name
      // nm gives at malloc's own address is right.
      libc_path = file.path;
      const auto libc = Nm(file.path, true);
      ASSERT_TRUE(libc.contains("malloc"));
      ASSERT_TRUE(libc.contains(std::string(f.function))) << f.function;
      EXPECT_EQ(libc.at(std::string(f.function)), libc.at("malloc")) << f.function;
      EXPECT_EQ(f.elf_address, libc.at("malloc"));
      EXPECT_EQ(file.build_id, ReadelfBuildId(file.path));
      continue;
    }
    EXPECT_EQ(file.path, exe_);
    EXPECT_EQ(file.build_id, exe_id);
    const std::string expected = p.kind == "caller" ? "main" : p.name;
    EXPECT_EQ(f.function, expected);
    if (p.kind == "function") {
      ASSERT_TRUE(exe_symbols.contains(p.name));
      EXPECT_EQ(f.elf_address, exe_symbols.at(p.name));
    }
  }
  EXPECT_FALSE(libc_path.empty());

  // The second look reads only the files' notes: the tables come from the
  // cache, keyed by the build id.
  const std::size_t entries = cache.entries();
  EXPECT_EQ(entries, 2u);  // the program and libc
  symbols::Symbolization again = symbols::Symbolize(addresses, maps_, source);
  EXPECT_EQ(cache.entries(), entries);
  for (std::size_t i = 0; i < again.frames.size(); ++i) {
    EXPECT_EQ(again.frames[i].function, s.frames[i].function);
  }
}

// A stripped copy of the program keeps .dynsym only, where hold_* are not
// (nothing exports them): they are named again from the debug file that
// `objcopy --only-keep-debug` makes, found by build id under the debug
// directory (resolved in the target's root, here the test's).
TEST_F(SymbolizeTest, StrippedProgramNamedFromItsDebugFile) {
  const std::string stripped = dir_ / "site_holder.stripped";
  ASSERT_EQ(RunCommand({"strip", "--strip-all", "-o", stripped, exe_}).exit_code, 0);
  const std::string id = ReadelfBuildId(exe_);
  ASSERT_EQ(id.size(), 40u);
  const std::string debug_dir = dir_ / "debug";
  fs::create_directories(debug_dir + "/.build-id/" + id.substr(0, 2));
  const std::string debug_file =
      debug_dir + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  RunResult kept = RunCommand({"objcopy", "--only-keep-debug", exe_, debug_file});
  ASSERT_EQ(kept.exit_code, 0) << kept.err;

  const std::string out = dir_ / "stripped.out";
  SpawnOptions o;
  o.stdout_path = out;
  Process p({stripped, "65536"}, o);
  ASSERT_TRUE(WaitFor(
      [&] { return ReadFile(out).find("ready\n") != std::string::npos || !p.running(); }, 10s));
  std::vector<Printed> printed = ParsePrinted(ReadFile(out));
  auto maps = procfs::ParseMaps(ReadFile("/proc/" + std::to_string(p.pid()) + "/maps"));
  ASSERT_TRUE(maps.ok());
  Target t;
  t.pid = p.pid();
  t.proc_dir = "/proc/" + std::to_string(p.pid());
  std::vector<uint64_t> addresses;
  for (const Printed& pr : printed) {
    if (pr.kind == "site") addresses.push_back(pr.address);
  }
  ASSERT_EQ(addresses.size(), 3u);

  symbols::SymbolCache without_cache(64u << 20);
  symbols::TargetElfSource without(t, without_cache, symbols::TargetElfOptions{"", 16u << 20});
  symbols::Symbolization bare = symbols::Symbolize(addresses, *maps, without);
  symbols::SymbolCache with_cache(64u << 20);
  symbols::TargetElfSource with(t, with_cache, symbols::TargetElfOptions{debug_dir, 16u << 20});
  symbols::Symbolization named = symbols::Symbolize(addresses, *maps, with);
  const char* const kNames[] = {"hold_200", "hold_50", "hold_10"};
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(bare.frames[i].function, "[unknown]");
    EXPECT_EQ(named.frames[i].function, kNames[i]);
    ASSERT_GE(named.frames[i].file, 0);
    EXPECT_EQ(named.files[static_cast<std::size_t>(named.frames[i].file)].build_id, id);
    // Why the bare frames have no name, and that the named ones need none.
    ASSERT_GE(bare.frames[i].file, 0);
    EXPECT_EQ(bare.files[static_cast<std::size_t>(bare.frames[i].file)].names_missing,
              "stripped: only the functions it exports have names; no debug file was read for "
              "its build id " +
                  id);
    EXPECT_EQ(named.files[static_cast<std::size_t>(named.frames[i].file)].names_missing, "");
  }
}

// `go tool pprof -top` rows: name -> flat value as printed, in order.
std::vector<std::pair<std::string, std::string>> TopRows(const std::string& out) {
  std::vector<std::pair<std::string, std::string>> rows;
  for (const PprofTopRow& r : PprofTopRows(out)) rows.emplace_back(r.name, r.flat);
  return rows;
}

TEST_F(SymbolizeTest, GoPprofReadsTheProfile) {
  symbols::SymbolCache cache(64u << 20);
  symbols::TargetElfSource source(target_, cache);
  // Each site's stack: the return site in hold_N (the leaf), then the one
  // in main, less one as Symbolize wants callers' return addresses.
  std::map<std::string, std::vector<uint64_t>> stacks;
  for (const Printed& p : printed_) {
    if (p.kind == "site") stacks[p.name].insert(stacks[p.name].begin(), p.address);
    if (p.kind == "caller") stacks[p.name].push_back(p.address - 1);
  }
  const std::map<std::string, int64_t> mib = {{"hold_200", 200}, {"hold_50", 50}, {"hold_10", 10}};
  std::vector<report::SiteSample> sites;
  for (const auto& [name, n] : mib) {
    ASSERT_EQ(stacks[name].size(), 2u) << name;
    sites.push_back(report::SiteSample{stacks[name], {n, n << 20, 1, n << 20}});
  }
  const std::vector<uint64_t> addresses = report::AddressesOf(sites);
  symbols::Symbolization s = symbols::Symbolize(addresses, maps_, source);
  report::HeapProfile profile = report::HeapProfileOf(sites, s, addresses, 512 * 1024, 0);
  std::optional<std::string> gz = report::GzipProfile(profile);
  ASSERT_TRUE(gz.has_value());
  const std::string file = dir_ / "heap.pb.gz";
  WriteFile(file, *gz);

  SpawnOptions env;
  env.env = {"HOME=" + dir_.path(), "PPROF_TMPDIR=" + dir_.path()};
  RunResult r = RunCommand(
      {GO_BIN, "tool", "pprof", "-top", "-sample_index=inuse_space", "-unit=MB", file}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "") << "go tool pprof warned";
  EXPECT_NE(r.out.find("Type: inuse_space"), std::string::npos) << r.out;
  auto rows = TopRows(r.out);
  ASSERT_GE(rows.size(), 3u) << r.out;
  EXPECT_EQ(rows[0], (std::pair<std::string, std::string>{"hold_200", "200MB"})) << r.out;
  EXPECT_EQ(rows[1], (std::pair<std::string, std::string>{"hold_50", "50MB"})) << r.out;
  EXPECT_EQ(rows[2], (std::pair<std::string, std::string>{"hold_10", "10MB"})) << r.out;
  // main holds nothing itself, all of it below it: cum 260MB, flat 0.
  ASSERT_EQ(rows.size(), 4u) << r.out;
  EXPECT_EQ(rows[3].first, "main");
  EXPECT_EQ(rows[3].second, "0");
}

}  // namespace
}  // namespace memtrimd::testing

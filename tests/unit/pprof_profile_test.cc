// The pprof encoder read back by a protobuf wire decoder written here from
// profile.proto (independent of the encoder), and through zlib. Go's own
// pprof reads a profile of a live program in SymbolizeTest (integration).
#include "daemon/report/pprof_profile.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tests/unit/gunzip.h"

namespace memtrimd::report {
namespace {

// One decoded field: a varint or a length-delimited payload.
struct Field {
  uint32_t number = 0;
  bool is_bytes = false;
  uint64_t varint = 0;
  std::string bytes;
};

bool ReadVarint(std::string_view& in, uint64_t& out) {
  out = 0;
  for (int shift = 0; shift < 64 && !in.empty(); shift += 7) {
    uint8_t b = static_cast<uint8_t>(in.front());
    in.remove_prefix(1);
    out |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

// Every field of a message, in order; fails the test on anything but wire
// types 0 and 2 (the encoder writes no others).
std::vector<Field> Decode(std::string_view in) {
  std::vector<Field> out;
  while (!in.empty()) {
    uint64_t key = 0;
    if (!ReadVarint(in, key)) {
      ADD_FAILURE() << "cut varint";
      return out;
    }
    Field f;
    f.number = static_cast<uint32_t>(key >> 3);
    if ((key & 7) == 0) {
      EXPECT_TRUE(ReadVarint(in, f.varint));
    } else if ((key & 7) == 2) {
      uint64_t len = 0;
      EXPECT_TRUE(ReadVarint(in, len));
      if (len > in.size()) {
        ADD_FAILURE() << "length past the end";
        return out;
      }
      f.is_bytes = true;
      f.bytes = std::string(in.substr(0, len));
      in.remove_prefix(len);
    } else {
      ADD_FAILURE() << "wire type " << (key & 7);
      return out;
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Field> All(const std::vector<Field>& fields, uint32_t number) {
  std::vector<Field> out;
  for (const Field& f : fields) {
    if (f.number == number) out.push_back(f);
  }
  return out;
}

uint64_t Varint(const std::vector<Field>& fields, uint32_t number) {
  for (const Field& f : fields) {
    if (f.number == number && !f.is_bytes) return f.varint;
  }
  return 0;  // proto3: absent is zero
}

std::vector<uint64_t> Packed(const std::vector<Field>& fields, uint32_t number) {
  std::vector<uint64_t> out;
  for (const Field& f : fields) {
    if (f.number != number) continue;
    std::string_view in = f.bytes;
    uint64_t v = 0;
    while (!in.empty() && ReadVarint(in, v)) out.push_back(v);
  }
  return out;
}

HeapProfile TwoSites() {
  HeapProfile p;
  p.period = 512 * 1024;
  p.time_nanos = 1'700'000'000'000'000'000;
  p.mappings.push_back(PprofMapping{0x400000, 0x401000, 0x1000, "/usr/bin/app", "abcd", true});
  p.locations.push_back(PprofLocation{0x400123, 1, "hold_200", "", "", 0});
  p.locations.push_back(PprofLocation{0x400456, 1, "main", "", "", 0});
  p.locations.push_back(PprofLocation{0x7f0000001000, 0, "[anon]", "", "", 0});
  p.locations.push_back(PprofLocation{0x400789, 1, "main", "", "", 0});  // main again: one function
  p.samples.push_back(PprofSample{{1, 2}, HeapValues{3, 300 << 20, 2, 200 << 20}});
  p.samples.push_back(PprofSample{{3, 4}, HeapValues{1, 10, 1, 10}});
  return p;
}

TEST(PprofProfile, DecodesBackToWhatWasGiven) {
  const std::string raw = EncodeProfile(TwoSites());
  std::vector<Field> top = Decode(raw);
  std::vector<std::string> strings;
  for (const Field& f : All(top, 6)) strings.push_back(f.bytes);
  ASSERT_FALSE(strings.empty());
  EXPECT_EQ(strings[0], "");  // profile.proto: the first string is ""
  auto str = [&](uint64_t i) { return i < strings.size() ? strings[i] : "<out of range>"; };

  // sample_type: Go's heap order, inuse_space the default.
  std::vector<std::string> types;
  for (const Field& f : All(top, 1)) {
    auto vt = Decode(f.bytes);
    types.push_back(str(Varint(vt, 1)) + "/" + str(Varint(vt, 2)));
  }
  EXPECT_EQ(types, (std::vector<std::string>{"alloc_objects/count", "alloc_space/bytes",
                                             "inuse_objects/count", "inuse_space/bytes"}));
  EXPECT_EQ(str(Varint(top, 14)), "inuse_space");
  auto period_type = Decode(All(top, 11).at(0).bytes);
  EXPECT_EQ(str(Varint(period_type, 1)), "space");
  EXPECT_EQ(str(Varint(period_type, 2)), "bytes");
  EXPECT_EQ(Varint(top, 12), 512u * 1024);
  EXPECT_EQ(Varint(top, 9), 1'700'000'000'000'000'000u);

  auto samples = All(top, 2);
  ASSERT_EQ(samples.size(), 2u);
  auto s0 = Decode(samples[0].bytes);
  EXPECT_EQ(Packed(s0, 1), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(Packed(s0, 2), (std::vector<uint64_t>{3, 300u << 20, 2, 200u << 20}));

  auto mappings = All(top, 3);
  ASSERT_EQ(mappings.size(), 1u);
  auto m = Decode(mappings[0].bytes);
  EXPECT_EQ(Varint(m, 1), 1u);
  EXPECT_EQ(Varint(m, 2), 0x400000u);
  EXPECT_EQ(Varint(m, 3), 0x401000u);
  EXPECT_EQ(Varint(m, 4), 0x1000u);
  EXPECT_EQ(str(Varint(m, 5)), "/usr/bin/app");
  EXPECT_EQ(str(Varint(m, 6)), "abcd");
  EXPECT_EQ(Varint(m, 7), 1u);

  // Locations name functions by id; functions are one per name.
  std::map<uint64_t, std::string> function_names;
  for (const Field& f : All(top, 5)) {
    auto fn = Decode(f.bytes);
    EXPECT_EQ(Varint(fn, 2), Varint(fn, 3));  // name and system_name
    EXPECT_TRUE(function_names.emplace(Varint(fn, 1), str(Varint(fn, 2))).second);
  }
  EXPECT_EQ(function_names.size(), 3u);  // hold_200, main, [anon]
  auto locations = All(top, 4);
  ASSERT_EQ(locations.size(), 4u);
  std::vector<std::string> names;
  for (const Field& f : locations) {
    auto loc = Decode(f.bytes);
    auto lines = All(loc, 4);
    ASSERT_EQ(lines.size(), 1u);
    names.push_back(function_names[Varint(Decode(lines[0].bytes), 1)]);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"hold_200", "main", "[anon]", "main"}));
  auto anon = Decode(locations[2].bytes);
  EXPECT_EQ(Varint(anon, 2), 0u);  // no mapping
  EXPECT_EQ(Varint(anon, 3), 0x7f0000001000u);
}

// Issue 33: the sites' resident estimate as a fifth sample type, after
// Go's four (inuse_space stays the default), only when it is known.
TEST(PprofProfile, ResidentSpaceIsAFifthTypeWhenKnown) {
  HeapProfile p = TwoSites();
  p.samples[0].values.resident_space = 50 << 20;
  p.has_resident = true;
  std::vector<Field> top = Decode(EncodeProfile(p));
  std::vector<std::string> strings;
  for (const Field& f : All(top, 6)) strings.push_back(f.bytes);
  std::vector<std::string> types;
  for (const Field& f : All(top, 1)) {
    auto vt = Decode(f.bytes);
    types.push_back(strings.at(Varint(vt, 1)) + "/" + strings.at(Varint(vt, 2)));
  }
  EXPECT_EQ(types, (std::vector<std::string>{"alloc_objects/count", "alloc_space/bytes",
                                             "inuse_objects/count", "inuse_space/bytes",
                                             "resident_space/bytes"}));
  EXPECT_EQ(strings.at(Varint(top, 14)), "inuse_space");
  auto s0 = Decode(All(top, 2).at(0).bytes);
  EXPECT_EQ(Packed(s0, 2), (std::vector<uint64_t>{3, 300u << 20, 2, 200u << 20, 50u << 20}));
  // Unknown: Go's four only.
  p.has_resident = false;
  EXPECT_EQ(All(Decode(EncodeProfile(p)), 1).size(), 4u);
}

TEST(PprofProfile, GzipHoldsTheEncoding) {
  HeapProfile p = TwoSites();
  std::optional<std::string> gz = GzipProfile(p);
  ASSERT_TRUE(gz.has_value());
  EXPECT_EQ(gz->substr(0, 2), "\x1f\x8b");
  EXPECT_EQ(Gunzip(*gz), EncodeProfile(p));
}

TEST(PprofProfile, NegativeValuesAreTenByteVarints) {
  HeapProfile p;
  p.samples.push_back(PprofSample{{}, HeapValues{-1, 0, 0, 0}});
  auto top = Decode(EncodeProfile(p));
  auto values = Packed(Decode(All(top, 2).at(0).bytes), 2);
  ASSERT_EQ(values.size(), 4u);
  EXPECT_EQ(static_cast<int64_t>(values[0]), -1);
}

TEST(PprofProfile, HeapProfileOfSymbolizedSites) {
  symbols::Symbolization s;
  s.files.push_back(symbols::MappedFile{"/usr/bin/app", "beef", 0x1000, 0x2000, 0, true, ""});
  const std::vector<SiteSample> sites = {{{0x1100, 0x1200}, {0, 0, 1, 100}},
                                         {{0x1300, 0x1200}, {0, 0, 1, 50}}};
  const std::vector<uint64_t> addresses = AddressesOf(sites);
  EXPECT_EQ(addresses, (std::vector<uint64_t>{0x1100, 0x1200, 0x1300}));
  for (uint64_t a : addresses) {
    symbols::Frame f;
    f.address = a;
    f.kind = symbols::FrameKind::kFunction;
    f.function = a == 0x1200 ? "main" : "leaf";
    f.file = 0;
    s.frames.push_back(f);
  }
  HeapProfile p = HeapProfileOf(sites, s, addresses, 4096, 0);
  ASSERT_EQ(p.locations.size(), 3u);
  ASSERT_EQ(p.mappings.size(), 1u);
  EXPECT_EQ(p.mappings[0].build_id, "beef");
  EXPECT_TRUE(p.mappings[0].has_functions);
  EXPECT_EQ(p.locations[1].function, "main");
  EXPECT_EQ(p.locations[1].mapping, 1u);
  ASSERT_EQ(p.samples.size(), 2u);
  EXPECT_EQ(p.samples[1].locations, (std::vector<uint64_t>{3, 2}));  // main shared
  EXPECT_EQ(p.samples[1].values.inuse_space, 50);
}

// A function's name is what pprof prints; its system_name the symbol as
// the file has it (pprof demangles neither when both are given).
TEST(PprofProfile, FunctionsKeepTheirSymbolAsSystemName) {
  HeapProfile p;
  p.locations.push_back(PprofLocation{0x1000, 0, "std::vector<int>::push_back(int const&)",
                                      "_ZNSt6vectorIiSaIiEE9push_backERKi", "", 0});
  p.locations.push_back(PprofLocation{0x2000, 0, "main", "", "", 0});
  auto top = Decode(EncodeProfile(p));
  std::vector<std::string> strings;
  for (const Field& f : All(top, 6)) strings.push_back(f.bytes);
  auto functions = All(top, 5);
  ASSERT_EQ(functions.size(), 2u);
  auto f0 = Decode(functions[0].bytes), f1 = Decode(functions[1].bytes);
  EXPECT_EQ(strings.at(Varint(f0, 2)), "std::vector<int>::push_back(int const&)");
  EXPECT_EQ(strings.at(Varint(f0, 3)), "_ZNSt6vectorIiSaIiEE9push_backERKi");
  EXPECT_EQ(strings.at(Varint(f1, 2)), "main");
  EXPECT_EQ(strings.at(Varint(f1, 3)), "main");
}

}  // namespace
}  // namespace memtrimd::report

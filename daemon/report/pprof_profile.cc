#include "daemon/report/pprof_profile.h"

#include <array>
#include <deque>
#include <string_view>
#include <unordered_map>

#include "daemon/exposition/gzip.h"

namespace memtrimd::report {
namespace {

// Protobuf wire types.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kLengthDelimited = 2;

void Varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

void Tag(std::string& out, uint32_t field, uint32_t wire) {
  Varint(out, (static_cast<uint64_t>(field) << 3) | wire);
}

// A scalar field; proto3 leaves zero out.
void Uint(std::string& out, uint32_t field, uint64_t v) {
  if (v == 0) return;
  Tag(out, field, kVarint);
  Varint(out, v);
}

// int64 is a plain varint of the two's complement (ten bytes when negative).
void Int(std::string& out, uint32_t field, int64_t v) {
  Uint(out, field, static_cast<uint64_t>(v));
}

void Bytes(std::string& out, uint32_t field, std::string_view bytes) {
  Tag(out, field, kLengthDelimited);
  Varint(out, bytes.size());
  out.append(bytes);
}

// Every string once; index 0 is "" (profile.proto requires it). The index
// views the stored copy, so a string is held once per request.
class StringTable {
 public:
  StringTable() { Index(""); }
  int64_t Index(std::string_view s) {
    auto it = index_.find(s);
    if (it != index_.end()) return it->second;
    const std::string& kept = strings_.emplace_back(s);
    const auto id = static_cast<int64_t>(strings_.size() - 1);
    index_.emplace(kept, id);
    return id;
  }
  const std::deque<std::string>& strings() const { return strings_; }

 private:
  std::unordered_map<std::string_view, int64_t> index_;
  std::deque<std::string> strings_;
};

// Field numbers of profile.proto.
namespace profile_field {
constexpr uint32_t kSampleType = 1, kSample = 2, kMapping = 3, kLocation = 4, kFunction = 5,
                   kStringTable = 6, kTimeNanos = 9, kPeriodType = 11, kPeriod = 12,
                   kDefaultSampleType = 14;
}

std::string ValueType(StringTable& strings, const std::string& type, const std::string& unit) {
  std::string m;
  Int(m, 1, strings.Index(type));
  Int(m, 2, strings.Index(unit));
  return m;
}

}  // namespace

std::string EncodeProfile(const HeapProfile& p) {
  namespace f = profile_field;
  StringTable strings;
  std::string out;
  // Go's order: pprof shows the last type unless told otherwise, and
  // default_sample_type says so too.
  static constexpr std::array<std::array<const char*, 2>, 4> kTypes = {{{"alloc_objects", "count"},
                                                                        {"alloc_space", "bytes"},
                                                                        {"inuse_objects", "count"},
                                                                        {"inuse_space", "bytes"}}};
  for (const auto& [type, unit] : kTypes)
    Bytes(out, f::kSampleType, ValueType(strings, type, unit));
  // Ours, after Go's four: tools that know only those read them as ever
  // (default_sample_type below keeps inuse_space the default).
  if (p.has_resident) Bytes(out, f::kSampleType, ValueType(strings, "resident_space", "bytes"));

  for (const PprofSample& s : p.samples) {
    std::string m;
    std::string ids;
    for (uint64_t id : s.locations) Varint(ids, id);
    Bytes(m, 1, ids);  // packed
    std::string values;
    for (int64_t v : {s.values.alloc_objects, s.values.alloc_space, s.values.inuse_objects,
                      s.values.inuse_space}) {
      Varint(values, static_cast<uint64_t>(v));
    }
    if (p.has_resident) Varint(values, static_cast<uint64_t>(s.values.resident_space));
    Bytes(m, 2, values);  // packed
    Bytes(out, f::kSample, m);
  }

  for (std::size_t i = 0; i < p.mappings.size(); ++i) {
    const PprofMapping& mp = p.mappings[i];
    std::string m;
    Uint(m, 1, i + 1);
    Uint(m, 2, mp.start);
    Uint(m, 3, mp.limit);
    Uint(m, 4, mp.offset);
    Int(m, 5, strings.Index(mp.file));
    Int(m, 6, strings.Index(mp.build_id));
    Uint(m, 7, mp.has_functions ? 1 : 0);
    Bytes(out, f::kMapping, m);
  }

  // Functions one per name, numbered as first met.
  std::unordered_map<std::string_view, uint64_t> function_ids;
  std::vector<std::string_view> function_names;
  std::vector<std::string_view> system_names;
  std::vector<std::string_view> filenames;
  for (std::size_t i = 0; i < p.locations.size(); ++i) {
    const PprofLocation& l = p.locations[i];
    std::string m;
    Uint(m, 1, i + 1);
    Uint(m, 2, l.mapping);
    Uint(m, 3, l.address);
    if (!l.function.empty()) {
      auto [it, fresh] = function_ids.try_emplace(l.function, function_names.size() + 1);
      if (fresh) {
        function_names.push_back(it->first);
        system_names.push_back(l.system_name.empty() ? l.function : l.system_name);
        filenames.push_back(l.filename);
      }
      std::string line;
      Uint(line, 1, it->second);
      Int(line, 2, l.line);
      Bytes(m, 4, line);
    }
    Bytes(out, f::kLocation, m);
  }
  for (std::size_t i = 0; i < function_names.size(); ++i) {
    std::string m;
    Uint(m, 1, i + 1);
    Int(m, 2, strings.Index(function_names[i]));
    Int(m, 3, strings.Index(system_names[i]));  // the symbol as the file has it
    if (!filenames[i].empty()) Int(m, 4, strings.Index(filenames[i]));
    Bytes(out, f::kFunction, m);
  }

  Int(out, f::kTimeNanos, p.time_nanos);
  Bytes(out, f::kPeriodType, ValueType(strings, "space", "bytes"));
  Int(out, f::kPeriod, p.period);
  Int(out, f::kDefaultSampleType, strings.Index("inuse_space"));
  // The string table last: every index above is taken by now.
  for (const std::string& s : strings.strings()) Bytes(out, f::kStringTable, s);
  return out;
}

std::optional<std::string> GzipProfile(const HeapProfile& profile) {
  std::optional<DeflatedPart> part = DeflatePart(EncodeProfile(profile));
  if (!part) return std::nullopt;
  const DeflatedPart* parts[] = {&*part};
  return GzipJoin(parts);
}

std::vector<uint64_t> AddressesOf(std::span<const SiteSample> sites) {
  std::vector<uint64_t> out;
  std::unordered_map<uint64_t, bool> seen;
  for (const SiteSample& s : sites) {
    for (uint64_t a : s.stack) {
      if (seen.try_emplace(a, true).second) out.push_back(a);
    }
  }
  return out;
}

HeapProfile HeapProfileOf(std::span<const SiteSample> sites, const symbols::Symbolization& symbols,
                          std::span<const uint64_t> addresses, int64_t period, int64_t time_nanos) {
  HeapProfile p;
  p.period = period;
  p.time_nanos = time_nanos;
  for (const symbols::MappedFile& file : symbols.files) {
    p.mappings.push_back(PprofMapping{file.start, file.end, file.offset, file.path, file.build_id,
                                      // pprof would look for the file on the viewer's machine
                                      // otherwise, and warn when it is not there: names are given
                                      // for every frame (or none can be).
                                      true});
  }
  std::unordered_map<uint64_t, uint64_t> location_of;  // address -> location id
  for (std::size_t i = 0; i < addresses.size() && i < symbols.frames.size(); ++i) {
    const symbols::Frame& fr = symbols.frames[i];
    if (location_of.contains(addresses[i])) continue;
    PprofLocation l;
    l.address = addresses[i];
    l.mapping = fr.file >= 0 ? static_cast<uint64_t>(fr.file) + 1 : 0;
    l.function = fr.function;
    l.system_name = fr.system_name;
    l.filename = fr.source_file;
    l.line = fr.line;
    p.locations.push_back(std::move(l));
    location_of.emplace(addresses[i], p.locations.size());
  }
  for (const SiteSample& s : sites) {
    PprofSample out;
    out.values = s.values;
    for (uint64_t a : s.stack) {
      auto it = location_of.find(a);
      if (it == location_of.end()) {
        // An address the symbolisation was not given: still a location.
        p.locations.push_back(PprofLocation{a, 0, "", "", "", 0});
        it = location_of.emplace(a, p.locations.size()).first;
      }
      out.locations.push_back(it->second);
    }
    p.samples.push_back(std::move(out));
  }
  return p;
}

}  // namespace memtrimd::report

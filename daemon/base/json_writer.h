// A minimal JSON writer (objects, arrays, strings, numbers) for `inspect
// --json` and the logs; no parsing, no dependencies.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memtrimd {

// Appends `s` as a JSON string literal (with quotes) to `out`.
void AppendJsonString(std::string& out, std::string_view s);

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view k);
  JsonWriter& String(std::string_view v);
  JsonWriter& Uint(uint64_t v);
  JsonWriter& Int(int64_t v);
  JsonWriter& Double(double v);
  JsonWriter& Bool(bool v);
  JsonWriter& Null();
  const std::string& str() const { return out_; }

 private:
  void BeforeValue();
  std::string out_;
  // One entry per open container: whether it already has an element.
  std::vector<bool> has_element_;
  bool after_key_ = false;
};

}  // namespace memtrimd

// A small JSON reader for tests that check memtrimd's JSON answers field by
// field (nested objects, arrays). Numbers keep their text, so byte counts
// compare exactly (a double holds integers only up to 2^53).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memtrimd::testing {

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  std::string text;  // a string's value, or a number as written
  std::vector<JsonValue> items;
  std::vector<std::pair<std::string, JsonValue>> members;

  // Out of line, where JsonValue is complete: a member that holds the type
  // itself in a pair may not be instantiated inside the class (clang with
  // libstdc++ refuses it; the fuzz build uses clang).
  JsonValue();
  JsonValue(const JsonValue&);
  JsonValue(JsonValue&&) noexcept;
  JsonValue& operator=(const JsonValue&);
  JsonValue& operator=(JsonValue&&) noexcept;
  ~JsonValue();

  // The member `key` of an object; nullptr when absent or not an object.
  const JsonValue* Get(std::string_view key) const;
  // Follows a path of keys: Path({"jvm", "buffer_pools", "direct"}).
  const JsonValue* Path(std::initializer_list<std::string_view> keys) const;
  bool IsNumber() const { return kind == Kind::kNumber; }
  // The number as a signed integer, when it is one.
  std::optional<int64_t> Int() const;
  double Number() const;
};

// Parses one JSON document (trailing whitespace allowed); nullopt when it is
// not valid JSON.
std::optional<JsonValue> ParseJson(std::string_view text);

}  // namespace memtrimd::testing

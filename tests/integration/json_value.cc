#include "tests/integration/json_value.h"

#include <cctype>
#include <charconv>
#include <cstdlib>

namespace memtrimd::testing {

JsonValue::JsonValue() = default;
JsonValue::JsonValue(const JsonValue&) = default;
JsonValue::JsonValue(JsonValue&&) noexcept = default;
JsonValue& JsonValue::operator=(const JsonValue&) = default;
JsonValue& JsonValue::operator=(JsonValue&&) noexcept = default;
JsonValue::~JsonValue() = default;
namespace {

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  bool Document(JsonValue& out) {
    if (!Value(out, 0)) return false;
    Space();
    return at_ == s_.size();
  }

 private:
  // Deeper than any answer memtrimd gives; bounds the recursion.
  static constexpr int kMaxDepth = 64;

  void Space() {
    while (at_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[at_]))) ++at_;
  }
  bool Eat(char c) {
    Space();
    if (at_ < s_.size() && s_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  bool Word(std::string_view w) {
    if (s_.substr(at_, w.size()) != w) return false;
    at_ += w.size();
    return true;
  }

  bool Value(JsonValue& v, int depth) {
    if (depth > kMaxDepth) return false;
    Space();
    if (at_ >= s_.size()) return false;
    char c = s_[at_];
    if (c == '{') return Object(v, depth);
    if (c == '[') return Array(v, depth);
    if (c == '"') {
      v.kind = JsonValue::Kind::kString;
      return String(v.text);
    }
    if (Word("true")) {
      v.kind = JsonValue::Kind::kBool;
      v.boolean = true;
      return true;
    }
    if (Word("false")) {
      v.kind = JsonValue::Kind::kBool;
      return true;
    }
    if (Word("null")) return true;
    return Number(v);
  }

  bool Number(JsonValue& v) {
    std::size_t start = at_;
    while (at_ < s_.size() &&
           (std::isdigit(static_cast<unsigned char>(s_[at_])) || s_[at_] == '-' || s_[at_] == '+' ||
            s_[at_] == '.' || s_[at_] == 'e' || s_[at_] == 'E')) {
      ++at_;
    }
    if (at_ == start) return false;
    v.kind = JsonValue::Kind::kNumber;
    v.text = std::string(s_.substr(start, at_ - start));
    char* end = nullptr;
    std::strtod(v.text.c_str(), &end);
    return end == v.text.c_str() + v.text.size();
  }

  bool String(std::string& out) {
    if (!Eat('"')) return false;
    while (at_ < s_.size()) {
      char c = s_[at_++];
      if (c == '"') return true;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= s_.size()) return false;
      char e = s_[at_++];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          if (at_ + 4 > s_.size()) return false;
          unsigned code = 0;
          auto r = std::from_chars(s_.data() + at_, s_.data() + at_ + 4, code, 16);
          if (r.ptr != s_.data() + at_ + 4) return false;
          at_ += 4;
          // Tests compare ASCII text; anything else is kept as '?'.
          out += code < 0x80 ? static_cast<char>(code) : '?';
          break;
        }
        default:
          out += e;
      }
    }
    return false;
  }

  bool Array(JsonValue& v, int depth) {
    v.kind = JsonValue::Kind::kArray;
    Eat('[');
    if (Eat(']')) return true;
    do {
      JsonValue item;
      if (!Value(item, depth + 1)) return false;
      v.items.push_back(std::move(item));
    } while (Eat(','));
    return Eat(']');
  }

  bool Object(JsonValue& v, int depth) {
    v.kind = JsonValue::Kind::kObject;
    Eat('{');
    if (Eat('}')) return true;
    do {
      std::string key;
      Space();
      if (!String(key) || !Eat(':')) return false;
      JsonValue member;
      if (!Value(member, depth + 1)) return false;
      v.members.emplace_back(std::move(key), std::move(member));
    } while (Eat(','));
    return Eat('}');
  }

  std::string_view s_;
  std::size_t at_ = 0;
};

}  // namespace

const JsonValue* JsonValue::Get(std::string_view key) const {
  if (kind != Kind::kObject) return nullptr;
  for (const auto& [k, v] : members) {
    if (k == key) return &v;
  }
  return nullptr;
}

const JsonValue* JsonValue::Path(std::initializer_list<std::string_view> keys) const {
  const JsonValue* v = this;
  for (std::string_view k : keys) {
    if (v == nullptr) return nullptr;
    v = v->Get(k);
  }
  return v;
}

std::optional<int64_t> JsonValue::Int() const {
  if (kind != Kind::kNumber) return std::nullopt;
  int64_t out = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), out);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) return std::nullopt;
  return out;
}

double JsonValue::Number() const {
  return kind == Kind::kNumber ? std::strtod(text.c_str(), nullptr) : 0;
}

std::optional<JsonValue> ParseJson(std::string_view text) {
  JsonValue v;
  Parser p(text);
  if (!p.Document(v)) return std::nullopt;
  return v;
}

}  // namespace memtrimd::testing

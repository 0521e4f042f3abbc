#include "collectors/symbols/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <memory>

namespace memtrimd::symbols {
namespace {

bool Upper(char c) { return c >= 'A' && c <= 'Z'; }
bool Digit(char c) { return c >= '0' && c <= '9'; }

// Back-references: S_, S<seq>_ (seq in 0-9A-Z) and T_, T<n>_. Counted on
// the raw text, so an identifier that happens to hold such a pattern
// counts too: a count too high only leaves the name mangled.
std::size_t BackReferences(std::string_view name) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name[i] != 'S' && name[i] != 'T') continue;
    std::size_t j = i + 1;
    while (j < name.size() && (Digit(name[j]) || (name[i] == 'S' && Upper(name[j])))) ++j;
    if (j < name.size() && name[j] == '_') ++n;
  }
  return n;
}

bool IdentifierChar(char c) {
  return (c >= 'a' && c <= 'z') || Upper(c) || Digit(c) || c == '_' || c == '$' || c == '~' ||
         c == '.';
}

bool OperatorChar(char c) { return std::strchr("+-*/%^&|!=<>,[]()~", c) != nullptr && c != '\0'; }

char Opening(char c) {
  switch (c) {
    case ')':
      return '(';
    case '>':
      return '<';
    case ']':
      return '[';
    case '}':
      return '{';
    default:
      return '\0';
  }
}

// Where the bracketed group that ends just before `end` starts (s[end-1]
// is its closing bracket), every kind of bracket counted; npos when they
// do not match.
std::size_t GroupStart(std::string_view s, std::size_t end) {
  std::string closers;
  std::size_t i = end;
  while (i > 0) {
    const char c = s[--i];
    if (Opening(c) != '\0') {
      closers.push_back(c);
    } else if (c == '(' || c == '<' || c == '[' || c == '{') {
      if (closers.empty() || Opening(closers.back()) != c) return std::string_view::npos;
      closers.pop_back();
    }
    if (closers.empty()) return i;
  }
  return std::string_view::npos;
}

// The start of the qualified name that ends at s.size() (scopes, template
// arguments, "operator<" and the like); npos when it cannot be told.
std::size_t NameStart(std::string_view s) {
  std::size_t i = s.size();
  for (;;) {
    while (i > 0 && Opening(s[i - 1]) != '\0') {
      i = GroupStart(s, i);
      if (i == std::string_view::npos) return i;
      // "operator< <int>": an operator's name ends in punctuation and the
      // template arguments follow it after a space.
      const std::size_t before = i > 0 && s[i - 1] == ' ' ? i - 1 : i;
      const std::size_t op = s.substr(0, before).rfind("operator");
      if (op != std::string_view::npos && op + 8 < before) {
        bool all = true;
        for (std::size_t k = op + 8; k < before; ++k) all = all && OperatorChar(s[k]);
        if (all) i = op;
      }
    }
    while (i > 0 && IdentifierChar(s[i - 1])) --i;
    if (i >= 2 && s[i - 1] == ':' && s[i - 2] == ':') {
      i -= 2;
      continue;
    }
    return i;
  }
}

bool OnlyQualifiers(std::string_view rest) {
  std::size_t i = 0;
  while (i < rest.size()) {
    if (rest[i] == ' ') {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < rest.size() && rest[j] != ' ') ++j;
    const std::string_view word = rest.substr(i, j - i);
    if (word != "const" && word != "volatile" && word != "&" && word != "&&" &&
        word != "noexcept" && word != "transaction_safe") {
      return false;
    }
    i = j;
  }
  return true;
}

}  // namespace

std::string Demangle(std::string_view name) {
  if (!name.starts_with("_Z") || name.size() > kMaxMangledBytes ||
      name.find('\0') != std::string_view::npos || BackReferences(name) > kMaxBackReferences) {
    return std::string(name);
  }
  const std::string terminated(name);
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(terminated.c_str(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || out == nullptr) return std::string(name);
  const std::size_t n = ::strnlen(out.get(), kMaxDemangledBytes + 1);
  if (n == 0 || n > kMaxDemangledBytes) return std::string(name);
  return std::string(out.get(), n);
}

std::string ShortFunctionName(std::string_view demangled) {
  std::string_view s = demangled;
  // gcc's parts of a function split off by an optimisation: "foo() [clone
  // .cold]" is foo's code.
  while (s.ends_with("]")) {
    const std::size_t clone = s.rfind(" [clone ");
    if (clone == std::string_view::npos) break;
    s = s.substr(0, clone);
  }
  const std::size_t close = s.rfind(')');
  if (close == std::string_view::npos || !OnlyQualifiers(s.substr(close + 1))) {
    return std::string(demangled);
  }
  const std::size_t open = GroupStart(s, close + 1);
  if (open == std::string_view::npos || open == 0) return std::string(demangled);
  const std::string_view head = s.substr(0, open);
  // Only a function template's name has its return type before it.
  if (!head.ends_with(">")) return std::string(head);
  const std::size_t start = NameStart(head);
  if (start == std::string_view::npos || start == head.size()) return std::string(head);
  if (start > 0 && head[start - 1] != ' ') return std::string(head);
  return std::string(head.substr(start));
}

}  // namespace memtrimd::symbols

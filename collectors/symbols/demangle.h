// C++ names as a reader knows them. The symbol tables hold Itanium-mangled
// names (_ZNSt6vectorIiSaIiEE9push_backERKi); site labels and profiles show
// them demangled, by the C++ runtime's own demangler (abi::__cxa_demangle),
// within bounds a hostile target's symbol tables cannot push past: a
// mangled name's back-references can make its demangled text exponentially
// long, so a name too long or with too many of them is left as it is.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace memtrimd::symbols {

// Longest mangled name demangled (real ones of large template libraries
// stay under it: 1,042 bytes was the longest of some 18,800 names in
// Debian's abseil, protobuf and gRPC).
inline constexpr std::size_t kMaxMangledBytes = 2048;
// Most back-references (S<seq>_ and T<n>_) a demangled name may have: each
// may repeat what came before, so the output's length can double every two
// of them. At 40 the worst name is some megabytes and milliseconds of work;
// real names stay under it (5 of those 18,800 names had more than 32).
inline constexpr std::size_t kMaxBackReferences = 40;
// Longest demangled text kept; longer is left mangled.
inline constexpr std::size_t kMaxDemangledBytes = 8192;

// The demangled name of a mangled C++ symbol ("_Z..."), parameters and
// all; `name` unchanged when it is not one, is over a bound above, or the
// demangler refuses it. Never throws (but for std::bad_alloc of the
// result).
std::string Demangle(std::string_view name);

// A demangled function name without its parameter list, the qualifiers
// after it (const, &, noexcept), gcc's " [clone .cold]" suffixes and a
// function template's return type: "std::vector<int>::push_back" for
// "std::vector<int>::push_back(int const&)". Pure; `demangled` unchanged
// when it has no parameter list (a C name, a variable) or when what is
// before it is not plainly a name.
std::string ShortFunctionName(std::string_view demangled);

}  // namespace memtrimd::symbols

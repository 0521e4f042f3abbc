// C++ names as sites and profiles show them: symbols::Demangle within its
// bounds, and ShortFunctionName's label form. The mangled names are real
// ones (Debian's libstdc++, abseil and gRPC builds) or written by hand
// where a shape is rare.
#include "collectors/symbols/demangle.h"

#include <gtest/gtest.h>

#include <string>

namespace memtrimd::symbols {
namespace {

TEST(Demangle, NamesCxxFunctionsAsTheirSourceDoes) {
  EXPECT_EQ(Demangle("_ZNSt6vectorIiSaIiEE9push_backERKi"),
            "std::vector<int, std::allocator<int> >::push_back(int const&)");
  EXPECT_EQ(Demangle("_ZN12_GLOBAL__N_16helperEi.cold"),
            "(anonymous namespace)::helper(int) [clone .cold]");
  EXPECT_EQ(Demangle("_ZNKR1A3getEv"), "A::get() const &");
}

TEST(Demangle, LeavesWhatItCannotOrMustNotDemangle) {
  EXPECT_EQ(Demangle("malloc"), "malloc");
  EXPECT_EQ(Demangle(""), "");
  EXPECT_EQ(Demangle("_Zjunk"), "_Zjunk");  // refused by the demangler
  EXPECT_EQ(Demangle(std::string("_Z1fv\0x", 7)), std::string("_Z1fv\0x", 7));
  // Over the input cap: a valid name, left as it is.
  std::string long_name =
      "_Z" + std::to_string(kMaxMangledBytes) + std::string(kMaxMangledBytes, 'a') + "v";
  EXPECT_EQ(Demangle(long_name), long_name);
  // Each template argument list twice the one before, by back-references:
  // 148 bytes that demangle to 139 KB, over the output cap.
  const std::string doubling =
      "_Z1f1x3cbbIS_S_ES0_IS1_S1_ES0_IS2_S2_ES0_IS3_S3_ES0_IS4_S4_ES0_IS5_S5_ES0_IS6_S6_E"
      "S0_IS7_S7_ES0_IS8_S8_ES0_IS9_S9_ES0_ISA_SA_ES0_ISB_SB_ES0_ISC_SC_E";
  EXPECT_EQ(Demangle(doubling), doubling);
  // Its first few levels are short enough to demangle.
  EXPECT_EQ(Demangle("_Z1f1x3cbbIS_S_ES0_IS1_S1_E"), "f(x, cbb<x, x>, cbb<cbb<x, x>, cbb<x, x> >)");
  // More back-references than the bound: not even tried.
  std::string many = "_Z1f1x";
  for (std::size_t i = 0; i <= kMaxBackReferences; ++i) many += "PS_";
  EXPECT_EQ(Demangle(many), many);
}

TEST(ShortFunctionName, DropsParametersQualifiersClonesAndReturnTypes) {
  EXPECT_EQ(ShortFunctionName("std::vector<int, std::allocator<int> >::push_back(int const&)"),
            "std::vector<int, std::allocator<int> >::push_back");
  EXPECT_EQ(ShortFunctionName("A::get() const &"), "A::get");
  EXPECT_EQ(ShortFunctionName("(anonymous namespace)::helper(int) [clone .cold]"),
            "(anonymous namespace)::helper");
  EXPECT_EQ(ShortFunctionName("foo(int)::{lambda(int)#1}::operator()(int) const"),
            "foo(int)::{lambda(int)#1}::operator()");
  // Function templates: the demangler prints their return type first.
  EXPECT_EQ(ShortFunctionName("void foo<int>(int)"), "foo<int>");
  EXPECT_EQ(ShortFunctionName("void std::__cxx11::basic_string<char, std::char_traits<char>, "
                              "std::allocator<char> >::_M_construct<char const*>(char const*, "
                              "char const*, std::forward_iterator_tag)"),
            "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> "
            ">::_M_construct<char const*>");
  EXPECT_EQ(ShortFunctionName("bool operator< <int>(A<int> const&, A<int> const&)"),
            "operator< <int>");
  EXPECT_EQ(ShortFunctionName("grpc_generator::File::GetImportNames[abi:cxx11]() const"),
            "grpc_generator::File::GetImportNames[abi:cxx11]");
}

TEST(ShortFunctionName, KeepsWhatHasNoParameterList) {
  EXPECT_EQ(ShortFunctionName("malloc"), "malloc");
  EXPECT_EQ(ShortFunctionName("typeinfo for grpc::ServerBuilderOption"),
            "typeinfo for grpc::ServerBuilderOption");
  EXPECT_EQ(ShortFunctionName("_Zjunk"), "_Zjunk");
  EXPECT_EQ(ShortFunctionName("(int)"), "(int)");              // nothing before the list
  EXPECT_EQ(ShortFunctionName("f(int) junk"), "f(int) junk");  // not qualifiers after it
  EXPECT_EQ(ShortFunctionName("g(a))"), "g(a))");              // unbalanced
  EXPECT_EQ(ShortFunctionName(""), "");
}

}  // namespace
}  // namespace memtrimd::symbols

// The tables `memtrimd inspect` and /report print: headings, and rows of
// "label  value  note" with aligned columns, for a person reading them
// during an incident. Every text section writes into one.
#pragma once

#include <cstdint>
#include <string>

namespace memtrimd::report {

class TextTable {
 public:
  // A heading line, after a blank line unless it is the first.
  void Heading(const std::string& text);
  // "  label ........ value  note".
  void Row(const std::string& label, const std::string& value, const std::string& note = "");
  // A sentence, indented as the rows are.
  void Say(const std::string& text);
  // The text; names from a target are bytes, so invalid UTF-8 becomes
  // U+FFFD, as in every writer (text::ToValidUtf8).
  std::string Take();

 private:
  std::string out_;
};

// The figures of a table: "1.5 GiB", "-3.0 MiB" (memory grew), "12.5 %".
std::string Bytes(uint64_t b);
std::string SignedBytes(int64_t v);
std::string Percent(double ratio);

}  // namespace memtrimd::report

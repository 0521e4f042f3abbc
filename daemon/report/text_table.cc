#include "daemon/report/text_table.h"

#include <cstdio>

#include "collectors/common/text.h"
#include "daemon/base/units.h"

namespace memtrimd::report {

void TextTable::Heading(const std::string& text) {
  if (!out_.empty()) out_ += '\n';
  out_ += text + '\n';
}

void TextTable::Row(const std::string& label, const std::string& value, const std::string& note) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), "  %-26s %12s", label.c_str(), value.c_str());
  out_ += buf;
  if (!note.empty()) out_ += "  " + note;
  out_ += '\n';
}

void TextTable::Say(const std::string& text) { out_ += "  " + text + '\n'; }

std::string TextTable::Take() { return text::ToValidUtf8(out_); }

std::string Bytes(uint64_t b) { return FormatBytes(static_cast<double>(b)); }

std::string SignedBytes(int64_t v) { return FormatBytes(static_cast<double>(v)); }

std::string Percent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f %%", ratio * 100);
  return buf;
}

}  // namespace memtrimd::report

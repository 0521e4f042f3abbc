#include "daemon/base/units.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>

namespace memtrimd {
namespace {

struct Unit {
  std::string_view name;
  uint64_t factor;
};

// Longest names first so "ms" is tried before "m".
constexpr Unit kDurationUnits[] = {{"ms", 1},        {"s", 1000},       {"m", 60'000},
                                   {"h", 3'600'000}, {"d", 86'400'000}, {"w", 604'800'000}};

constexpr Unit kSizeUnits[] = {
    {"KiB", 1ull << 10},
    {"MiB", 1ull << 20},
    {"GiB", 1ull << 30},
    {"TiB", 1ull << 40},
    {"Ki", 1ull << 10},
    {"Mi", 1ull << 20},
    {"Gi", 1ull << 30},
    {"Ti", 1ull << 40},
    {"KB", 1000ull},
    {"MB", 1000'000ull},
    {"GB", 1000'000'000ull},
    {"TB", 1000'000'000'000ull},
    {"k", 1000ull},
    {"K", 1000ull},
    {"M", 1000'000ull},
    {"G", 1000'000'000ull},
    {"T", 1000'000'000'000ull},
    {"B", 1},
};

bool MulAdd(uint64_t& acc, uint64_t n, uint64_t factor) {
  if (factor != 0 && n > std::numeric_limits<uint64_t>::max() / factor) return false;
  uint64_t add = n * factor;
  if (acc > std::numeric_limits<uint64_t>::max() - add) return false;
  acc += add;
  return true;
}

}  // namespace

std::optional<std::chrono::milliseconds> ParseDuration(std::string_view s) {
  if (s == "0") return std::chrono::milliseconds(0);
  if (s.empty()) return std::nullopt;
  uint64_t total = 0;
  int last_unit = -1;  // units must go from largest to smallest: "1m30s"
  while (!s.empty()) {
    uint64_t n = 0;
    std::size_t digits = 0;
    while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') {
      if (n > (std::numeric_limits<uint64_t>::max() - 9) / 10) return std::nullopt;
      n = n * 10 + static_cast<uint64_t>(s[digits] - '0');
      ++digits;
    }
    if (digits == 0) return std::nullopt;
    s.remove_prefix(digits);
    int matched = -1;
    for (int i = 0; i < static_cast<int>(std::size(kDurationUnits)); ++i) {
      if (s.substr(0, kDurationUnits[i].name.size()) == kDurationUnits[i].name) {
        matched = i;
        break;
      }
    }
    if (matched < 0) return std::nullopt;
    uint64_t factor = kDurationUnits[matched].factor;
    if (last_unit >= 0 && factor >= kDurationUnits[last_unit].factor) return std::nullopt;
    last_unit = matched;
    if (!MulAdd(total, n, factor)) return std::nullopt;
    s.remove_prefix(kDurationUnits[matched].name.size());
  }
  if (total > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
  return std::chrono::milliseconds(static_cast<int64_t>(total));
}

std::string FormatDuration(std::chrono::milliseconds d) {
  int64_t ms = d.count();
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  struct Part {
    int64_t factor;
    const char* name;
  };
  const Part parts[] = {{86'400'000, "d"}, {3'600'000, "h"}, {60'000, "m"}, {1000, "s"}, {1, "ms"}};
  for (const Part& p : parts) {
    if (ms >= p.factor) {
      out += std::to_string(ms / p.factor) + p.name;
      ms %= p.factor;
    }
  }
  return out;
}

std::optional<uint64_t> ParseByteSize(std::string_view s) {
  std::size_t digits = 0;
  uint64_t n = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') {
    if (n > (std::numeric_limits<uint64_t>::max() - 9) / 10) return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(s[digits] - '0');
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  std::string_view suffix = s.substr(digits);
  if (suffix.empty()) return n;
  for (const Unit& u : kSizeUnits) {
    if (suffix == u.name) {
      uint64_t total = 0;
      if (!MulAdd(total, n, u.factor)) return std::nullopt;
      return total;
    }
  }
  return std::nullopt;
}

std::string FormatBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  bool negative = bytes < 0;
  double v = std::fabs(bytes);
  int i = 0;
  while (v >= 1024 && i < 4) {
    v /= 1024;
    ++i;
  }
  char buf[48];
  if (i == 0) {
    std::snprintf(buf, sizeof(buf), "%s%.0f B", negative ? "-" : "", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%s%.1f %s", negative ? "-" : "", v, units[i]);
  }
  return buf;
}

std::string FormatByteSize(uint64_t bytes) {
  const char* units[] = {"TiB", "GiB", "MiB", "KiB"};
  for (int i = 0; i < 4; ++i) {
    const uint64_t unit = 1ull << (10 * (4 - i));
    if (bytes != 0 && bytes % unit == 0) return std::to_string(bytes / unit) + units[i];
  }
  return std::to_string(bytes);
}

std::optional<pid_t> ParsePid(std::string_view s) {
  std::size_t digits = 0;
  long long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9' || ++digits > 9) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (digits == 0 || v <= 0) return std::nullopt;
  return static_cast<pid_t>(v);
}

std::string FormatMib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

double UnixSeconds(std::chrono::system_clock::time_point at) {
  return std::chrono::duration<double>(at.time_since_epoch()).count();
}

int64_t UnixMs(std::chrono::system_clock::time_point at) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
}

std::string FormatUtc(double unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string ClockUtc(int64_t t_ms) {
  std::time_t t = static_cast<std::time_t>(t_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof(buf), "%H:%M:%S", &tm);
  return buf;
}

}  // namespace memtrimd

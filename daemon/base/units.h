// Durations, byte sizes and times as users write them in flags and print
// them in tables and pages: each written once, so that every renderer says
// the same figure the same way. Pure functions.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memtrimd {

// Prometheus-style durations: "500ms", "15s", "1m30s", "2h", "1d". A bare
// "0" means zero. nullopt for anything else (negative, unknown unit, empty,
// overflow).
std::optional<std::chrono::milliseconds> ParseDuration(std::string_view s);
std::string FormatDuration(std::chrono::milliseconds d);

// Byte sizes: plain bytes ("1073741824", what the Downward API writes), or
// with a Kubernetes suffix (Ki Mi Gi Ti, k M G T) or a B form (KiB MiB GiB,
// KB MB GB).
std::optional<uint64_t> ParseByteSize(std::string_view s);
// "1.5 GiB", "512 KiB", "37 B".
std::string FormatBytes(double bytes);
// What ParseByteSize reads back exactly, as a flag is written: "64MiB",
// "1GiB", "4097".
std::string FormatByteSize(uint64_t bytes);

// "12.5 MiB": the page and its charts print every size in one unit, so that
// figures side by side compare at a glance.
std::string FormatMib(uint64_t bytes);

// A time as JSON serves it (Unix seconds) and as the charts place it (Unix
// milliseconds).
double UnixSeconds(std::chrono::system_clock::time_point at);
int64_t UnixMs(std::chrono::system_clock::time_point at);
// "2026-01-31 12:00:00 UTC" of Unix seconds (sub-second part dropped).
std::string FormatUtc(double unix_seconds);
// "HH:MM:SS" UTC of a Unix ms time.
std::string ClockUtc(int64_t t_ms);

// A positive decimal count of at most nine digits (a pid, a run count).
std::optional<pid_t> ParsePid(std::string_view s);

}  // namespace memtrimd

// Bounded readers for /proc and /sys files. Readers own the I/O; parsers
// only ever see text. Nothing here reads more than the caller's cap.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "collectors/common/status.h"

namespace memtrimd {

// Reads a whole (small) file. Fails with kTooLarge past `max_bytes`.
Result<std::string> ReadSmallFile(const std::string& path, std::size_t max_bytes = 64 * 1024);

// Streams a file line by line (without the '\n') through a fixed buffer, so
// a large file such as smaps never sits in memory whole. Stops with kTooLarge
// after `max_bytes` or when one line exceeds the buffer.
Status ForEachLine(const std::string& path, std::size_t max_bytes,
                   const std::function<void(std::string_view line)>& on_line);

}  // namespace memtrimd

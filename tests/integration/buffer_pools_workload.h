// The BufferPools workload (tests/workloads/BufferPools.java) in the shape
// the agent's JVM tests run it: 3 direct buffers, a mapped file, and
// kReaders threads that each read kReadBytes into a heap buffer through a
// FileChannel (each thread then keeps a temporary direct buffer of
// kReadBytes in its cache). The workload prints its own BufferPoolMXBean
// figures to its ready file.
#pragma once

#include <string>
#include <vector>

namespace memtrimd::testing {

inline constexpr int kDirect = 3;
inline constexpr int kDirectBytes = 100000;
inline constexpr int kMapBytes = 4 << 20;
inline constexpr int kReaders = 4;
inline constexpr int kReadBytes = 3000000;

// What follows the JVM's own flags on its command line: the class path,
// the class, and its arguments (ready file, the directory of the mapped
// file, the shape above).
inline std::vector<std::string> BufferPoolsArgs(const std::string& ready, const std::string& dir) {
  return {"-cp",
          JAVA_WORKLOADS_CLASSPATH,
          "BufferPools",
          "--ready-file",
          ready,
          "--dir",
          dir,
          "--direct",
          std::to_string(kDirect),
          "--direct-bytes",
          std::to_string(kDirectBytes),
          "--map-bytes",
          std::to_string(kMapBytes),
          "--readers",
          std::to_string(kReaders),
          "--read-bytes",
          std::to_string(kReadBytes)};
}

}  // namespace memtrimd::testing

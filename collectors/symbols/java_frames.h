// Java frames in a sampled stack (a JVM's agent walks them above the native
// frames: collectors/agent/in_target/agent_java.c). Each is one word among
// the stack's addresses, bit 63 set, which no native address has; the agent
// names each distinct word ("java" lines of its "sites" answer): there is
// nothing to read outside the JVM that would name it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace memtrimd::symbols {

inline constexpr uint64_t kJavaFrameTag = 1ull << 63;

inline bool IsJavaFrame(uint64_t address) { return (address & kJavaFrameTag) != 0; }

// How the agent named one Java frame.
struct JavaFrameName {
  uint64_t frame = 0;  // the word, as it stands in the stack
  std::string name;    // "java.util.zip.Deflater.<init>", or "[java: unknown method]"
  std::string file;    // the class's source file ("Deflater.java"); "" unknown
  uint32_t line = 0;   // of the frame's bytecode index; 0 unknown (a native method)
};

// What a Java frame is called when the agent sent no name for it (its
// class unloaded since the sample, or the answer's room ran out).
inline constexpr const char* kUnknownJavaMethod = "[java: unknown method]";

// Whether a Java method's class belongs to the JDK itself: a site is named
// by its first frame outside it (the application's code that holds the
// memory), not by java.util.zip.Deflater.<init>.
inline bool IsJdkJavaName(std::string_view name) {
  for (std::string_view p : {"java.", "javax.", "jdk.", "sun.", "com.sun."}) {
    if (name.starts_with(p)) return true;
  }
  return false;
}

}  // namespace memtrimd::symbols

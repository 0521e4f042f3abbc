// The JniSiteHolder workload (tests/workloads/JniSiteHolder.java and its
// JNI library libsite_holder_jni.so) run on one JDK and spoken to through
// its stdin: a JVM whose native allocation sites are known (jni_hold_200,
// jni_hold_50 and jni_hold_10 hold 200, 50 and 10 units, jni_churn churns),
// for the allocation sampler's tests (issue 25).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace memtrimd::testing {

// What the workload printed (its protocol is in JniSiteHolder.java).
struct JniSiteHolderOutput {
  pid_t pid = -1;                              // "pid <n>"
  std::map<std::string, uint64_t> functions;   // "function <name> <0x hex>"
  std::string library;                         // "library <path>"
  std::map<std::string, uint64_t> held_bytes;  // "held <name> <bytes> <blocks>"
  std::map<std::string, uint64_t> held_blocks;
  bool ready = false;  // "ready"
  int freed50 = 0;     // how many "freed50" lines
};
JniSiteHolderOutput ParseJniSiteHolderOutput(const std::string& text);

// libsite_holder_jni.so as built ("" when the build skipped it: no jni.h).
std::string SiteHolderJniLib();

class JniSiteHolder {
 public:
  // Starts `java_home`'s java on the workload with `workload_args` (e.g.
  // {"--unit", "65536"}) after `jvm_flags`, its stdin a pipe held here, its
  // output in `dir` (declare it before this); waits (up to 60 s) for its
  // "pid" line. started() tells. The JVM is killed by pid when this goes.
  JniSiteHolder(const TempDir& dir, const std::string& java_home,
                std::vector<std::string> workload_args = {},
                std::vector<std::string> jvm_flags = {}, SpawnOptions options = {});
  bool started() const { return started_; }
  Process& process() { return process_; }
  pid_t pid() const { return process_.pid(); }

  // What it printed so far.
  JniSiteHolderOutput Output() const { return ParseJniSiteHolderOutput(ReadFile(out_path_)); }
  // Its stdout and stderr, for failure messages.
  std::string Log() const;

  // Sends "hold" and waits (up to `timeout`) for "ready".
  bool Hold(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Waits (up to `timeout`) for "ready" without sending anything (--hold-now).
  bool WaitReady(std::chrono::milliseconds timeout = std::chrono::seconds(60));
  // Sends "free50" and waits (up to `timeout`) for its "freed50".
  bool Free50(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Closes its stdin: the workload exits 0.
  void CloseStdin() { stdin_.Close(); }

 private:
  bool Running();

  std::string out_path_;
  std::string err_path_;
  StdinPipe stdin_;
  Process process_;
  bool started_ = false;
};

}  // namespace memtrimd::testing

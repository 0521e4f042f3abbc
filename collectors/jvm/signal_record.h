// JVM instances memtrimd sent SIGQUIT to whose attach listener did not come
// up. Such a JVM printed a thread dump instead (attach disabled in a way
// memtrimd could not see, or a listener that cannot start); signalling it
// again would print another one. One record for every attach a process
// makes (the daemon makes one, and hands it to each attach through
// AttachOptions), for that process's lifetime; thread-safe.
#pragma once

#include <mutex>
#include <set>
#include <string>

#include "collectors/common/process_key.h"

namespace memtrimd::jvm {

class SignalRecord {
 public:
  // `proc_root` is "/proc" in production: where gone instances are looked
  // for when the record is pruned.
  explicit SignalRecord(std::string proc_root = "/proc") : proc_root_(std::move(proc_root)) {}
  SignalRecord(const SignalRecord&) = delete;
  SignalRecord& operator=(const SignalRecord&) = delete;

  // Whether `key` was signalled without its listener coming up.
  bool SignalledWithoutListener(const ProcessKey& key) const;

  // Records `key` for good. Entries of processes that are gone are dropped
  // when the record grows, so it stays small.
  void RecordSignalWithoutListener(const ProcessKey& key);

 private:
  const std::string proc_root_;
  mutable std::mutex mu_;
  std::set<ProcessKey> instances_;
};

}  // namespace memtrimd::jvm

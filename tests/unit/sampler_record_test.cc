// SamplerRecord: the clean stop tells every target it turned on "sampling
// off", and a target that never answers cannot hold the stop past its cap.
#include "collectors/agent/client/sampler_record.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace memtrimd::agent {
namespace {

using namespace std::chrono_literals;

Target TargetWithPid(pid_t pid) {
  Target t;
  t.pid = pid;
  t.start_ticks = 100;
  t.proc_dir = "/proc/" + std::to_string(pid);
  return t;
}

TEST(SamplerRecord, TurnsEveryRecordedTargetOffOnceAndForgetsThem) {
  SamplerRecord record;
  record.TurnedOn(TargetWithPid(11));
  record.TurnedOn(TargetWithPid(12));
  record.TurnedOn(TargetWithPid(12));  // the same process again: one entry
  record.TurnedOn(TargetWithPid(13));
  record.TurnedOff(TargetWithPid(13));
  EXPECT_EQ(record.Size(), 2u);
  std::mutex mu;
  std::multiset<pid_t> asked;
  AgentCommander fake = [&](const Target& t, std::string_view command, const AgentOptions& o,
                            AgentFailure*) -> Result<std::string> {
    EXPECT_EQ(command, "sampling off");
    EXPECT_GT(o.timeout.count(), 0);
    std::lock_guard lock(mu);
    asked.insert(t.pid);
    return std::string("was_on=1\n");
  };
  SamplerRecord::Stopped off = record.TurnAllOff(2s, 8, fake);
  EXPECT_EQ(off.asked, 2u);
  EXPECT_EQ(off.off, 2u);
  EXPECT_EQ(off.missed, 0u);
  EXPECT_EQ(asked, (std::multiset<pid_t>{11, 12}));
  EXPECT_EQ(record.Size(), 0u);
}

TEST(SamplerRecord, AHungTargetCannotHoldTheStop) {
  SamplerRecord record;
  for (pid_t pid = 20; pid < 24; ++pid) record.TurnedOn(TargetWithPid(pid));
  // pid 20 never answers (a call no deadline reaches) until the test lets
  // it go; the others do.
  struct Hung {
    std::atomic<bool> release{false};
    std::atomic<bool> ended{false};
  };
  auto hung = std::make_shared<Hung>();
  AgentCommander fake = [hung](const Target& t, std::string_view, const AgentOptions&,
                               AgentFailure*) -> Result<std::string> {
    if (t.pid == 20) {
      const auto give_up = std::chrono::steady_clock::now() + 20s;  // a test that failed
      while (!hung->release.load() && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(1ms);
      }
      hung->ended.store(true);
      return Status(ErrorCode::kUnavailable, "gave up");
    }
    return std::string("was_on=1\n");
  };
  SamplerRecord::Stopped off = record.TurnAllOff(300ms, 2, fake);
  // Returned while the hung call still waits: it was left behind.
  EXPECT_FALSE(hung->ended.load());
  EXPECT_EQ(off.asked, 4u);
  EXPECT_EQ(off.off, 3u);
  EXPECT_EQ(off.missed, 1u);
  hung->release.store(true);
  while (!hung->ended.load()) std::this_thread::sleep_for(1ms);  // its worker ends too
}

}  // namespace
}  // namespace memtrimd::agent

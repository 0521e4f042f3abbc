// The collector registry is the one place a collector is declared: these
// hold the rules the flags, the collector set and the scheduler rely on.
#include "daemon/sampling/collector_registry.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace memtrimd {
namespace {

TEST(CollectorRegistry, NamesAreUniqueAndUsableAsFlagsAndLabels) {
  std::set<std::string> seen;
  for (const CollectorDecl& d : CollectorRegistry()) {
    const std::string name = d.name;
    EXPECT_TRUE(seen.insert(name).second) << "two collectors named " << name;
    ASSERT_FALSE(name.empty());
    for (char c : name) EXPECT_TRUE((c >= 'a' && c <= 'z') || c == '_') << name;
    EXPECT_NE(std::string(d.help), "") << name;
  }
  EXPECT_GE(seen.size(), 6u);
}

TEST(CollectorRegistry, ACollectorComesAfterTheOneItNeeds) {
  std::set<std::string> before;
  for (const CollectorDecl& d : CollectorRegistry()) {
    const std::string needs = d.needs;
    if (!needs.empty()) {
      EXPECT_NE(FindCollector(needs), nullptr) << d.name << " needs unknown " << needs;
      EXPECT_TRUE(before.count(needs)) << d.name << " runs before " << needs << ", which it needs";
    }
    before.insert(d.name);
  }
}

TEST(CollectorRegistry, EachMakesTheCollectorOfItsName) {
  const CollectorOptions options;
  for (const CollectorDecl& d : CollectorRegistry()) {
    ASSERT_NE(d.make, nullptr) << d.name;
    ASSERT_NE(d.carry, nullptr) << d.name;
    std::shared_ptr<Collector> c = d.make(options);
    ASSERT_NE(c, nullptr) << d.name;
    EXPECT_EQ(c->Name(), d.name);
  }
}

TEST(CollectorRegistry, SocketCollectorsRunOnTheirOwnThreadAndOnlyWhereTheyApply) {
  // A stopped or hung target makes a socket collector wait out its
  // deadlines; the jvm and agent collectors must never run on the sampling
  // thread, and never for a target that cannot have what they ask.
  for (const char* name : {"jvm", "agent"}) {
    const CollectorDecl* d = FindCollector(name);
    ASSERT_NE(d, nullptr) << name;
    EXPECT_TRUE(d->own_thread) << name;
    ASSERT_NE(d->applies, nullptr) << name;
    // This test program: glibc, without the agent.
    Target glibc_program;
    glibc_program.runtime = Runtime::kGlibc;
    glibc_program.proc_dir = "/proc/self";
    EXPECT_FALSE(d->applies(glibc_program)) << name;
    Target jvm;
    jvm.runtime = Runtime::kJvm;
    EXPECT_TRUE(d->applies(jvm)) << name;
  }
}

TEST(CollectorRegistry, IntervalsComeFromTheOptions) {
  CollectorOptions o;
  o.smaps_interval = std::chrono::milliseconds(1234);
  o.jvm_interval = std::chrono::milliseconds(5678);
  EXPECT_EQ(FindCollector("glibc")->Interval(o), o.smaps_interval);
  EXPECT_EQ(FindCollector("agent")->Interval(o), o.smaps_interval);
  EXPECT_EQ(FindCollector("jvm")->Interval(o), o.jvm_interval);
  // Every sample: no interval of its own.
  EXPECT_EQ(FindCollector("process")->Interval(o), std::chrono::milliseconds(0));
}

TEST(CollectorRegistry, SwitchesOverrideTheDeclaredDefault) {
  EXPECT_EQ(FindCollector("no-such-collector"), nullptr);
  const CollectorDecl& glibc = *FindCollector("glibc");
  EXPECT_EQ(CollectorEnabled({}, glibc), glibc.default_on);
  EXPECT_FALSE(CollectorEnabled({{"glibc", false}}, glibc));
  EXPECT_TRUE(CollectorEnabled({{"glibc", true}}, glibc));
  EXPECT_EQ(CollectorEnabled({{"jvm", !glibc.default_on}}, glibc), glibc.default_on);
}

}  // namespace
}  // namespace memtrimd

#include "daemon/findings.h"

#include <gtest/gtest.h>

namespace memtrimd {
namespace {

TargetSample Jvm(int feature) {
  TargetSample s;
  JvmSample j;
  j.attachable = true;
  jvm::JvmVersion v;
  v.feature = feature;
  v.full = std::to_string(feature) + ".0.1";
  j.version = v;
  j.settings["MaxHeapSize"] = "1073741824";
  j.settings["NativeMemoryTracking"] = "summary";
  jvm::NmtSummary n;
  n.enabled = true;
  n.total_committed = 600u << 20;
  jvm::NmtCategory heap;
  heap.name = "Java Heap";
  heap.committed = 512u << 20;
  jvm::NmtCategory other;
  other.name = "Other";
  other.committed = 100u << 20;
  n.categories = {heap, other};
  j.nmt = n;
  s.jvm = j;
  procfs::ProcStatus p;
  p.rss_anon = 700u << 20;
  p.rss_file = 20u << 20;
  s.process = p;
  return s;
}

const RiskFinding* FindCheck(const std::vector<RiskFinding>& v, const std::string& check) {
  for (const RiskFinding& f : v) {
    if (f.check == check) return &f;
  }
  return nullptr;
}

TEST(Findings, NioCacheUnboundedOnJdk18AndLaterOnly) {
  auto r25 = AssessJvmRisks(Jvm(25));
  ASSERT_NE(FindCheck(r25, "nio_cache_unbounded"), nullptr);
  EXPECT_TRUE(FindCheck(r25, "nio_cache_unbounded")->at_risk);
  auto r17 = AssessJvmRisks(Jvm(17));
  EXPECT_FALSE(FindCheck(r17, "nio_cache_unbounded")->at_risk);
  TargetSample bounded = Jvm(21);
  bounded.jvm->settings["jdk.nio.maxCachedBufferSize"] = "262144";
  EXPECT_FALSE(FindCheck(AssessJvmRisks(bounded), "nio_cache_unbounded")->at_risk);
}

TEST(Findings, NmtOffAndSelfTrimming) {
  TargetSample s = Jvm(21);
  EXPECT_FALSE(FindCheck(AssessJvmRisks(s), "nmt_off")->at_risk);
  s.jvm->settings["NativeMemoryTracking"] = "off";
  EXPECT_TRUE(FindCheck(AssessJvmRisks(s), "nmt_off")->at_risk);
  EXPECT_FALSE(FindCheck(AssessJvmRisks(s), "jvm_trims_itself")->at_risk);
  s.jvm->settings["TrimNativeHeapInterval"] = "5000";
  EXPECT_TRUE(FindCheck(AssessJvmRisks(s), "jvm_trims_itself")->at_risk);
  s.jvm->settings["TrimNativeHeapInterval"] = "0";
  EXPECT_FALSE(FindCheck(AssessJvmRisks(s), "jvm_trims_itself")->at_risk);
}

TEST(Findings, DirectMemoryAgainstItsLimit) {
  TargetSample s = Jvm(21);
  DirectMemory d = DirectMemoryOf(s);
  EXPECT_EQ(d.used_bytes, 100u << 20);
  EXPECT_EQ(d.limit_bytes, 1u << 30);  // MaxDirectMemorySize unset: max heap
  EXPECT_TRUE(d.limit_is_max_heap);
  EXPECT_FALSE(FindCheck(AssessJvmRisks(s), "direct_memory_high")->at_risk);
  s.jvm->settings["MaxDirectMemorySize"] = std::to_string(105u << 20);
  d = DirectMemoryOf(s);
  EXPECT_EQ(d.limit_bytes, 105u << 20);
  EXPECT_FALSE(d.limit_is_max_heap);
  EXPECT_GT(*d.ratio, 0.9);
  EXPECT_TRUE(FindCheck(AssessJvmRisks(s), "direct_memory_high")->at_risk);
}

TEST(Findings, NmtGapCanBeNegative) {
  TargetSample s = Jvm(21);
  EXPECT_EQ(NmtGapBytes(s), static_cast<int64_t>(120u << 20));
  s.process->rss_anon = 100u << 20;
  EXPECT_LT(*NmtGapBytes(s), 0);
  s.jvm->nmt->enabled = false;
  EXPECT_FALSE(NmtGapBytes(s).has_value());
}

TEST(Findings, NothingIsClaimedWithoutAttach) {
  TargetSample s = Jvm(25);
  s.jvm->attachable = false;
  EXPECT_TRUE(AssessJvmRisks(s).empty());
  EXPECT_FALSE(DirectMemoryOf(s).used_bytes.has_value());
}

}  // namespace
}  // namespace memtrimd

// The node's sites memory budget: each target's profile charged once (a
// newer profile replaces its own), a share per target, the rest refused,
// and bytes given back when the profile goes.
#include "collectors/agent/client/sites_budget.h"

#include <gtest/gtest.h>

namespace memtrimd::agent {
namespace {

constexpr std::size_t kMiB = 1u << 20;

TEST(SitesBudget, ChargesEachTargetOnceWithinItsShare) {
  auto budget = std::make_shared<SitesBudget>(16 * kMiB, 8 * kMiB);
  EXPECT_EQ(budget->TargetShare(), 1 * kMiB);
  const ProcessKey a{100, 1}, b{200, 2};
  EXPECT_EQ(budget->AvailableFor(a), 1 * kMiB);
  EXPECT_EQ(budget->Charge(a, 2 * kMiB), nullptr);  // over its share

  auto first = budget->Charge(a, 600 * 1024);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(budget->State().held_bytes, 8 * kMiB + 600 * 1024);
  // A newer profile of the same target replaces the older one's charge,
  // and the older one's release does not give the newer one's back.
  auto second = budget->Charge(a, 900 * 1024);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(budget->State().held_bytes, 8 * kMiB + 900 * 1024);
  first.reset();
  EXPECT_EQ(budget->State().held_bytes, 8 * kMiB + 900 * 1024);
  EXPECT_EQ(budget->State().targets, 1u);
  second.reset();
  EXPECT_EQ(budget->State().held_bytes, 8 * kMiB);
  EXPECT_EQ(budget->State().targets, 0u);

  // Eight full shares fill the budget: a ninth target finds no room.
  std::vector<std::shared_ptr<const void>> held;
  for (pid_t p = 1; p <= 8; ++p) {
    held.push_back(budget->Charge(ProcessKey{p, 0}, 1 * kMiB));
    ASSERT_NE(held.back(), nullptr) << p;
  }
  EXPECT_EQ(budget->AvailableFor(b), 0u);
  EXPECT_EQ(budget->Charge(b, 1), nullptr);
  held.pop_back();
  EXPECT_EQ(budget->AvailableFor(b), 1 * kMiB);

  budget->CountDroppedTarget();
  budget->CountDroppedStacks(12);
  EXPECT_EQ(budget->State().dropped_targets, 1u);
  EXPECT_EQ(budget->State().dropped_stacks, 12u);
  EXPECT_EQ(budget->State().limit_bytes, 16 * kMiB);
}

TEST(SitesBudget, AChargeOutlivingItsBudgetIsHarmless) {
  auto budget = std::make_shared<SitesBudget>(16 * kMiB, 0);
  auto charge = budget->Charge(ProcessKey{1, 1}, 100);
  ASSERT_NE(charge, nullptr);
  budget.reset();
  charge.reset();  // no budget to give back to: nothing happens
}

}  // namespace
}  // namespace memtrimd::agent

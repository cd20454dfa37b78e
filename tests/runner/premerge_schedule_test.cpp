// The sampling order of gptbench-premerge (runner/premerge_schedule.h).
#include "premerge_schedule.h"

#include <gtest/gtest.h>

#include <set>

namespace gptbench::runner {
namespace {

TEST(PremergeSchedule, EveryRoundAsksEachSideOnce) {
  for (uint64_t seed : {0ULL, 1ULL, 42ULL, ~0ULL})
    for (size_t benchmark = 0; benchmark < 5; ++benchmark)
      for (const SideOrder& order : round_orders(seed, benchmark, 64)) {
        EXPECT_NE(order[0], order[1]);
        EXPECT_EQ(order[1], other_side(order[0]));
      }
}

TEST(PremergeSchedule, BothOrdersAppearAndEachPairOfRoundsHoldsBoth) {
  const std::vector<SideOrder> orders = round_orders(7, 0, 40);
  size_t base_first = 0;
  for (size_t r = 0; r < orders.size(); ++r) {
    base_first += orders[r][0] == Side::kBase;
    if (r % 2 == 1) EXPECT_NE(orders[r][0], orders[r - 1][0]) << "rounds " << r - 1 << " and " << r;
  }
  EXPECT_EQ(base_first, orders.size() / 2);
  // The pairs themselves are drawn: both "AB BA" and "BA AB" occur.
  std::set<Side> pair_starts;
  for (size_t r = 0; r < orders.size(); r += 2) pair_starts.insert(orders[r][0]);
  EXPECT_EQ(pair_starts.size(), 2u);
}

TEST(PremergeSchedule, ReproducibleFromTheSeedAndDifferentAcrossSeedsAndBenchmarks) {
  EXPECT_EQ(round_orders(123, 4, 50), round_orders(123, 4, 50));
  EXPECT_NE(round_orders(123, 4, 50), round_orders(124, 4, 50));
  EXPECT_NE(round_orders(123, 4, 50), round_orders(123, 5, 50));
  for (size_t r = 0; r < 50; ++r) EXPECT_EQ(round_order(123, 4, r), round_orders(123, 4, 50)[r]);
}

TEST(PremergeSchedule, PrepareOrderIsDrawnToo) {
  std::set<Side> firsts;
  for (size_t benchmark = 0; benchmark < 32; ++benchmark) {
    const SideOrder order = prepare_order(99, benchmark);
    EXPECT_NE(order[0], order[1]);
    EXPECT_EQ(order, prepare_order(99, benchmark));
    firsts.insert(order[0]);
  }
  EXPECT_EQ(firsts.size(), 2u);
}

TEST(PremergeSchedule, SideNames) {
  EXPECT_STREQ(side_name(Side::kBase), "base");
  EXPECT_STREQ(side_name(Side::kNew), "new");
  EXPECT_EQ(index_of(Side::kNew), 1u);
}

}  // namespace
}  // namespace gptbench::runner

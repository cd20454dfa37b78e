// The one median and quantile of the project (runjson/median.h).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "runjson/median.h"

namespace gptbench::runjson {
namespace {

TEST(Median, MiddleValueOrHalfwayBetweenTheTwoMiddleOnes) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({7}), 7);
  EXPECT_TRUE(std::isnan(median({})));
  // lower + (upper - lower) / 2, so two huge middle values do not overflow.
  const double big = std::numeric_limits<double>::max();
  EXPECT_DOUBLE_EQ(median({big, big}), big);
}

TEST(Median, QuantileInterpolatesLinearly) {
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4, 5}, 0.25), 2);
  EXPECT_DOUBLE_EQ(quantile({1, 2}, 0.5), 1.5);
  EXPECT_DOUBLE_EQ(quantile({10, 0}, 0.75), 7.5);
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3}, 0), 1);
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3}, 1), 3);
  EXPECT_TRUE(std::isnan(quantile({}, 0.5)));
}

}  // namespace
}  // namespace gptbench::runjson

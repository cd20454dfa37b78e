#include "progress.h"

#include <gtest/gtest.h>

namespace gptbench::runner {
namespace {

TEST(Progress, Durations) {
  EXPECT_EQ(format_duration(0), "0:00");
  EXPECT_EQ(format_duration(61.4), "1:01");
  EXPECT_EQ(format_duration(3725), "1:02:05");
  EXPECT_EQ(format_duration(-1), "0:00");
}

TEST(Progress, LineShowsDoneTotalElapsedEstimateAndCurrent) {
  // 3 of 12 in 30 s: 10 s each, 9 left -> ~1:30.
  EXPECT_EQ(format_progress(3, 12, 30, "gemm/torch/fp32", 200),
            "[ 3/12]  25% | elapsed 0:30 | left ~1:30 | gemm/torch/fp32");
  EXPECT_EQ(format_progress(0, 5, 2, "", 200), "[0/5]   0% | elapsed 0:02 | left ?");
  EXPECT_EQ(format_progress(5, 5, 2, "", 200), "[5/5] 100% | elapsed 0:02");
  EXPECT_EQ(format_progress(3, 12, 30, "gemm/torch/fp32", 20).size(), 20u);
}

}  // namespace
}  // namespace gptbench::runner

// Tests of ops/fp8/scaling.h: the amax scaling math (scale = 448 / amax; zero, non-finite and
// tiny amax), the scale layouts and the element → scale index every quantizer and GEMM uses.
#include "ops/fp8/scaling.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>

namespace gptbench {
namespace {

TEST(Fp8Scaling, ScaleIs448OverAmax) {
  EXPECT_EQ(fp8_scale_from_amax(448.f), 1.f);
  EXPECT_EQ(fp8_scale_from_amax(1.f), 448.f);
  EXPECT_EQ(fp8_scale_from_amax(4.f), 112.f);
  EXPECT_EQ(fp8_scale_from_amax(1e3f), 448.f / 1e3f);  // one correctly rounded fp32 division
  // amax itself lands on 448 within rounding of the product: saturation clamps the rest.
  for (float amax : {3.f, 0.7f, 1e-20f, 12345.f})
    EXPECT_NEAR(amax * fp8_scale_from_amax(amax), 448.f, 448.f * FLT_EPSILON) << amax;
}

TEST(Fp8Scaling, ZeroAndNonFiniteAmaxGiveUnitScale) {
  EXPECT_EQ(fp8_scale_from_amax(0.f), 1.f);  // an all-zero group stays zero
  EXPECT_EQ(fp8_scale_from_amax(-0.f), 1.f);
  EXPECT_EQ(fp8_scale_from_amax(-3.f), 1.f);
  EXPECT_EQ(fp8_scale_from_amax(std::numeric_limits<float>::infinity()), 1.f);
  EXPECT_EQ(fp8_scale_from_amax(std::numeric_limits<float>::quiet_NaN()), 1.f);
}

TEST(Fp8Scaling, TinyAmaxSaturatesTheScaleAtFltMax) {
  const float tiny = 1e-38f;  // 448 / 1e-38 overflows fp32
  ASSERT_TRUE(std::isinf(448.f / tiny));
  EXPECT_EQ(fp8_scale_from_amax(tiny), FLT_MAX);
  EXPECT_EQ(fp8_scale_from_amax(std::numeric_limits<float>::denorm_min()), FLT_MAX);
  EXPECT_TRUE(std::isfinite(1.f / fp8_scale_from_amax(tiny)));
}

TEST(Fp8Scaling, ScaleShapes) {
  // 300 rows × 520 columns: 3 row blocks, 5 column blocks of 128 (the last partial).
  auto shape = [](Fp8Granularity g) {
    const Fp8ScaleShape s = fp8_scale_shape(g, 300, 520);
    return std::pair<int64_t, int64_t>(s.dim0, s.dim1);
  };
  EXPECT_EQ(shape(Fp8Granularity::kTensor), std::make_pair(int64_t{1}, int64_t{1}));
  EXPECT_EQ(shape(Fp8Granularity::kRow), std::make_pair(int64_t{300}, int64_t{1}));
  EXPECT_EQ(shape(Fp8Granularity::kBlock1x128), std::make_pair(int64_t{5}, int64_t{300}));
  EXPECT_EQ(shape(Fp8Granularity::kBlock128x128), std::make_pair(int64_t{3}, int64_t{8}));  // 5 → 8
  EXPECT_EQ(fp8_block_ld(512), 4);
  EXPECT_EQ(fp8_block_ld(768), 8);  // GPT-2 small's d_model: 6 blocks, padded to 16 bytes
}

TEST(Fp8Scaling, ScaleIndexFollowsTheLayouts) {
  const int64_t rows = 300, cols = 520;
  EXPECT_EQ(fp8_scale_index(Fp8Granularity::kTensor, 299, 519, rows, cols), 0);
  EXPECT_EQ(fp8_scale_index(Fp8Granularity::kRow, 17, 400, rows, cols), 17);
  // 1×128: rows fastest within a column of blocks.
  EXPECT_EQ(fp8_scale_index(Fp8Granularity::kBlock1x128, 17, 127, rows, cols), 17);
  EXPECT_EQ(fp8_scale_index(Fp8Granularity::kBlock1x128, 17, 128, rows, cols), 300 + 17);
  EXPECT_EQ(fp8_scale_index(Fp8Granularity::kBlock1x128, 299, 519, rows, cols), 4 * 300 + 299);
  // 128×128: column blocks fastest, rows of 8 (5 padded to 4-float multiples).
  EXPECT_EQ(fp8_scale_index(Fp8Granularity::kBlock128x128, 127, 127, rows, cols), 0);
  EXPECT_EQ(fp8_scale_index(Fp8Granularity::kBlock128x128, 128, 0, rows, cols), 8);
  EXPECT_EQ(fp8_scale_index(Fp8Granularity::kBlock128x128, 299, 519, rows, cols), 2 * 8 + 4);
  // Every element's index lies inside the scale tensor.
  for (Fp8Granularity g : {Fp8Granularity::kTensor, Fp8Granularity::kRow, Fp8Granularity::kBlock1x128,
                           Fp8Granularity::kBlock128x128}) {
    const Fp8ScaleShape s = fp8_scale_shape(g, rows, cols);
    for (int64_t r : {int64_t{0}, int64_t{129}, rows - 1})
      for (int64_t c : {int64_t{0}, int64_t{300}, cols - 1}) {
        const int64_t i = fp8_scale_index(g, r, c, rows, cols);
        EXPECT_GE(i, 0);
        EXPECT_LT(i, s.dim0 * s.dim1) << fp8_granularity_name(g);
      }
  }
}

TEST(Fp8Scaling, GemmScalingsPairTheGranularities) {
  EXPECT_EQ(fp8_a_granularity(Fp8GemmScaling::kTensor), Fp8Granularity::kTensor);
  EXPECT_EQ(fp8_b_granularity(Fp8GemmScaling::kTensor), Fp8Granularity::kTensor);
  EXPECT_EQ(fp8_a_granularity(Fp8GemmScaling::kRow), Fp8Granularity::kRow);
  EXPECT_EQ(fp8_b_granularity(Fp8GemmScaling::kRow), Fp8Granularity::kRow);
  EXPECT_EQ(fp8_a_granularity(Fp8GemmScaling::kBlock), Fp8Granularity::kBlock1x128);
  EXPECT_EQ(fp8_b_granularity(Fp8GemmScaling::kBlock), Fp8Granularity::kBlock128x128);
  EXPECT_STREQ(fp8_gemm_scaling_name(Fp8GemmScaling::kBlock), "block");
  EXPECT_STREQ(fp8_granularity_name(Fp8Granularity::kBlock1x128), "block1x128");
}

}  // namespace
}  // namespace gptbench

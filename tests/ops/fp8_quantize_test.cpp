// Tests of ops/fp8/quantize.*: the CPU reference against hand-computed values (exact scales,
// e4m3 rounding, saturation, zero groups), the LibTorch composition against the reference bit
// for bit on every granularity and on shapes with partial blocks, dequantization within half an
// e4m3 step, argument errors; on a GPU (skipped without one) our kernels against the reference
// bit for bit. Exactness is the tolerance throughout: every implementation does the same
// correctly rounded fp32 operations (448 / amax, x · scale, round to nearest even), so one
// differing value is a bug.
#include "ops/fp8/quantize.h"

#include <ATen/ATen.h>
#include <c10/util/Float8_e4m3fn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "tests/ops/have_gpu.h"

namespace gptbench {
namespace {

const Fp8Granularity kAll[] = {Fp8Granularity::kTensor, Fp8Granularity::kRow,
                               Fp8Granularity::kBlock1x128, Fp8Granularity::kBlock128x128};

// "" when a and b hold the same scales and e4m3 bytes.
std::string bit_diff(const Fp8Tensor& a, const Fp8Tensor& b) {
  const at::Tensor sa = a.scale_inv.to(at::kCPU), sb = b.scale_inv.to(at::kCPU);
  if (sa.sizes() != sb.sizes()) return "scale shapes " + c10::str(sa.sizes()) + " vs " + c10::str(sb.sizes());
  if (!at::equal(sa, sb)) return "scales differ";
  if (a.data.sizes() != b.data.sizes()) return "data shapes differ";
  const int64_t n = (a.data.view(at::kByte).to(at::kCPU) != b.data.view(at::kByte).to(at::kCPU))
                        .sum()
                        .item<int64_t>();
  return n == 0 ? "" : std::to_string(n) + " e4m3 values differ";
}

std::vector<float> values(const Fp8Tensor& q) {
  const at::Tensor f = q.data.to(at::kFloat).contiguous();
  return std::vector<float>(f.data_ptr<float>(), f.data_ptr<float>() + f.numel());
}

TEST(Fp8Quantize, ReferenceMatchesHandComputedValues) {
  // amax 4: scale 112; every product is an e4m3 value (112 = 1.75·2⁶ ...).
  const at::Tensor x = at::tensor({1.f, -2.f, 0.5f, 4.f}).reshape({1, 4});
  const Fp8Tensor q = quantize_fp8_reference(x, Fp8Granularity::kTensor);
  EXPECT_EQ(values(q), (std::vector<float>{112.f, -224.f, 56.f, 448.f}));
  EXPECT_EQ(q.scale_inv.item<float>(), 1.f / 112.f);
  // Per row: each row on its own amax.
  const at::Tensor y = at::tensor({1.f, 2.f, -10.f, 5.f}).reshape({2, 2});
  const Fp8Tensor r = quantize_fp8_reference(y, Fp8Granularity::kRow);
  EXPECT_EQ(values(r), (std::vector<float>{224.f, 448.f, -448.f, 224.f}));
  EXPECT_EQ(r.scale_inv[0][0].item<float>(), 1.f / 224.f);
  EXPECT_EQ(r.scale_inv[1][0].item<float>(), 1.f / 44.8f);
}

TEST(Fp8Quantize, RoundsToNearestEven) {
  // amax 448 (scale 1): 17 lies halfway between the e4m3 values 16 and 18 (step 2 in [16, 32)):
  // ties go to the even mantissa, 16; 19 is a tie between 18 and 20 → 20; 17.5 → 18.
  const at::Tensor x = at::tensor({448.f, 17.f, 19.f, 17.5f}).reshape({1, 4});
  EXPECT_EQ(values(quantize_fp8_reference(x, Fp8Granularity::kTensor)),
            (std::vector<float>{448.f, 16.f, 20.f, 18.f}));
}

TEST(Fp8Quantize, SaturatesWhereTheScaledAmaxRoundsAbove448) {
  // Find amax values whose fp32 product amax · (448 / amax) rounds above 448: without the clamp
  // they would become NaN in float8_e4m3fn (which has no infinity).
  int found = 0;
  for (int i = 1; i < 2000 && found < 3; ++i) {
    const float amax = 1.f + i * 0.001f;
    if (amax * fp8_scale_from_amax(amax) <= 448.f) continue;
    ++found;
    const at::Tensor x = at::tensor({amax, -amax, amax / 2}).reshape({1, 3});
    for (Fp8Granularity g : kAll) {
      const std::vector<float> v = values(quantize_fp8_reference(x, g));
      EXPECT_EQ(v[0], 448.f) << amax;
      EXPECT_EQ(v[1], -448.f) << amax;
      EXPECT_EQ(bit_diff(quantize_fp8_torch(x, g), quantize_fp8_reference(x, g)), "") << amax;
    }
  }
  EXPECT_GT(found, 0) << "no amax in the search rounds above 448";
}

TEST(Fp8Quantize, ZeroGroupsStayZeroWithUnitScale) {
  at::Tensor x = at::zeros({130, 256});
  x.narrow(0, 0, 2).fill_(3.f);  // rows 0-1 non-zero; the rest (and block row 1) zero
  for (Fp8Granularity g : kAll) {
    const Fp8Tensor q = quantize_fp8_reference(x, g);
    EXPECT_EQ(q.data.narrow(0, 2, 128).to(at::kFloat).abs().max().item<float>(), 0.f);
    EXPECT_FALSE(q.scale_inv.isnan().any().item<bool>());
    EXPECT_EQ(bit_diff(quantize_fp8_torch(x, g), q), "") << fp8_granularity_name(g);
  }
  const Fp8Tensor rows = quantize_fp8_reference(x, Fp8Granularity::kRow);
  EXPECT_EQ(rows.scale_inv[100][0].item<float>(), 1.f);
  const Fp8Tensor tiles = quantize_fp8_reference(x, Fp8Granularity::kBlock128x128);
  EXPECT_EQ(tiles.scale_inv[1][0].item<float>(), 1.f);  // rows 128-129: zero
  EXPECT_EQ(tiles.scale_inv[0][2].item<float>(), 1.f);  // padding of the row of scales
}

// Random inputs of every granularity, on shapes with partial blocks in both dimensions: the
// LibTorch composition (the benchmark's peer) equals the reference bit for bit.
TEST(Fp8Quantize, TorchCompositionMatchesReference) {
  at::manual_seed(1);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{200, 392}, {130, 264}, {1, 8}, {256, 512}})
    for (Fp8Granularity g : kAll) {
      const at::Tensor x = fp8_test_input(rows, cols, at::TensorOptions().dtype(at::kBFloat16));
      EXPECT_EQ(bit_diff(quantize_fp8_torch(x, g), quantize_fp8_reference(x, g)), "")
          << rows << "x" << cols << " " << fp8_granularity_name(g);
    }
}

// Dequantized values are within half an e4m3 step of the input: relative 2⁻⁴ for normal e4m3
// values, absolute 2⁻¹⁰ · scale_inv (half the subnormal step 2⁻⁹) below 2⁻⁶; and the scales are
// each group's amax / 448 (to one fp32 rounding of the reciprocal).
TEST(Fp8Quantize, DequantizesWithinHalfAStep) {
  at::manual_seed(2);
  const int64_t rows = 260, cols = 384;
  const at::Tensor x = fp8_test_input(rows, cols, at::TensorOptions().dtype(at::kBFloat16));
  const at::Tensor xd = x.to(at::kDouble);
  for (Fp8Granularity g : kAll) {
    const Fp8Tensor q = quantize_fp8(x, g);  // a CPU tensor: the reference path
    const at::Tensor deq = dequantize_fp8(q);
    const at::Tensor inv = dequantize_fp8(Fp8Tensor{at::ones({rows, cols}).to(at::kFloat8_e4m3fn),
                                                    q.scale_inv, g});  // each element's scale_inv
    const at::Tensor bound = at::maximum(xd.abs() * std::ldexp(1.0, -4), inv * std::ldexp(1.0, -10));
    EXPECT_TRUE(((deq - xd).abs() <= bound * (1 + 1e-6)).all().item<bool>()) << fp8_granularity_name(g);
    // amax of every group maps to ±448 (saturated or exact).
    EXPECT_NEAR(q.data.to(at::kFloat).abs().max().item<float>(), 448.f, 0.f);
  }
  const Fp8Tensor blocks = quantize_fp8_reference(x, Fp8Granularity::kBlock1x128);
  for (int64_t r : {int64_t{0}, int64_t{259}})
    for (int64_t kb : {int64_t{0}, int64_t{2}}) {
      const float amax = x.narrow(0, r, 1).narrow(1, kb * 128, 128).to(at::kFloat).abs().max().item<float>();
      EXPECT_NEAR(blocks.scale_inv[kb][r].item<float>(), amax / 448.f, amax / 448.f * 1e-6) << r << " " << kb;
    }
}

TEST(Fp8Quantize, RejectsBadInput) {
  EXPECT_THROW(quantize_fp8_reference(at::ones({4}), Fp8Granularity::kTensor), std::invalid_argument);
  EXPECT_THROW(quantize_fp8(at::ones({2, 2}).to(at::kFloat8_e4m3fn), Fp8Granularity::kRow),
               std::invalid_argument);
  EXPECT_THROW(quantize_fp8_torch(at::ones({2, 2, 2}), Fp8Granularity::kRow), std::invalid_argument);
  EXPECT_NE(quantize_fp8_unsupported(at::ones({4})), "");
}

TEST(Fp8Quantize, BytesMoved) {
  // 8192 × 768: 2 B read + 1 B written per element, plus 4 B per scale.
  EXPECT_DOUBLE_EQ(fp8_quantize_bytes(8192, 768, Fp8Granularity::kTensor), 3.0 * 8192 * 768 + 4);
  EXPECT_DOUBLE_EQ(fp8_quantize_bytes(8192, 768, Fp8Granularity::kRow), 3.0 * 8192 * 768 + 4.0 * 8192);
  EXPECT_DOUBLE_EQ(fp8_quantize_bytes(8192, 768, Fp8Granularity::kBlock1x128), 3.0 * 8192 * 768 + 4.0 * 6 * 8192);
  EXPECT_DOUBLE_EQ(fp8_quantize_bytes(8192, 768, Fp8Granularity::kBlock128x128), 3.0 * 8192 * 768 + 4.0 * 64 * 8);
}

// Our kernels against the CPU reference, bit for bit: partial blocks in both dimensions, rows
// not a multiple of the 8 a block takes, a single vector per row, a tensor large enough for the
// per-tensor pass to use many partial maxima, and an all-zero tensor.
TEST(Fp8QuantizeGpu, KernelsMatchReference) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or built without CUDA kernels)";
  at::manual_seed(3);
  const auto opts = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{200, 392}, {130, 264}, {1, 8}, {13, 8},
                            {8192, 768}, {300, 3072}, {2048, 4104}})
    for (Fp8Granularity g : kAll) {
      const at::Tensor x = fp8_test_input(rows, cols, opts);
      const Fp8Tensor q = quantize_fp8(x, g);
      EXPECT_TRUE(q.data.is_cuda());
      EXPECT_EQ(bit_diff(q, quantize_fp8_reference(x, g)), "") << rows << "x" << cols << " " << fp8_granularity_name(g);
      EXPECT_EQ(bit_diff(quantize_fp8_torch(x, g), quantize_fp8_reference(x, g)), "")
          << "torch " << rows << "x" << cols << " " << fp8_granularity_name(g);
    }
  const at::Tensor zeros = at::zeros({256, 512}, opts);
  for (Fp8Granularity g : kAll) EXPECT_EQ(bit_diff(quantize_fp8(zeros, g), quantize_fp8_reference(zeros, g)), "");
}

TEST(Fp8QuantizeGpu, RejectsWhatTheKernelsDoNotTake) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or built without CUDA kernels)";
  const auto opts = at::TensorOptions().device(at::kCUDA);
  EXPECT_THROW(quantize_fp8(at::ones({4, 12}, opts.dtype(at::kBFloat16)), Fp8Granularity::kRow),
               std::invalid_argument);  // 12 columns: not a multiple of 8
  EXPECT_THROW(quantize_fp8(at::ones({4, 16}, opts.dtype(at::kFloat)), Fp8Granularity::kRow),
               std::invalid_argument);  // fp32: the kernels take bf16
  // A strided view is made contiguous first.
  const at::Tensor x = fp8_test_input(64, 256, opts.dtype(at::kBFloat16));
  const at::Tensor view = x.narrow(1, 128, 128);
  EXPECT_EQ(bit_diff(quantize_fp8(view, Fp8Granularity::kRow), quantize_fp8_reference(view, Fp8Granularity::kRow)), "");
}

}  // namespace
}  // namespace gptbench

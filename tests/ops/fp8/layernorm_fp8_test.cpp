// Tests of ops/fp8/layernorm_fp8.*: LayerNorm quantized in the pass that produces it. On the CPU
// the composition (at::layer_norm to bf16, then the quantizer's reference), the argument checks
// and the reasons ours cannot run; on a GPU (skipped without one) our one-pass kernel against
// the two passes (our LayerNorm to bf16, then quantize_fp8) and against the reference applied to
// its own bf16 output, bit for bit: the quantization is the same correctly rounded fp32
// operations on the same bf16 values, so any difference is a bug. Shapes cover rows that do not
// fill a block, GPT-2 widths, and a width the kernel's 1×128 path does not take.
#include "ops/fp8/layernorm_fp8.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "fixtures/verify.h"
#include "tests/ops/have_gpu.h"

namespace gptbench {
namespace {

constexpr double kEps = 1e-5;

struct Inputs {
  at::Tensor x, gamma, beta;
};

Inputs inputs(int64_t rows, int64_t cols, c10::Device device) {
  const auto f32 = at::TensorOptions().device(device).dtype(at::kFloat);
  return {at::randn({rows, cols}, f32) * at::exp2(at::rand({rows, 1}, f32) * 4 - 2),
          1 + 0.1 * at::randn({cols}, f32), 0.1 * at::randn({cols}, f32)};
}

at::Tensor torch_y(const Inputs& in) {
  return at::layer_norm(in.x, {in.x.size(1)}, in.gamma, in.beta, kEps).to(at::kBFloat16);
}

TEST(Fp8LayerNorm, OnTheCpuTheCompositionAndTheReferenceAgree) {
  const Inputs in = inputs(37, 256, c10::kCPU);
  for (Fp8Granularity g : {Fp8Granularity::kRow, Fp8Granularity::kBlock1x128}) {
    const LayerNormFp8 ours = layernorm_fp8(in.x, in.gamma, in.beta, kEps, g, /*keep_y=*/true);
    EXPECT_TRUE(at::equal(ours.y, torch_y(in)));
    EXPECT_EQ(fp8_bitwise_difference(ours.q, quantize_fp8_reference(torch_y(in), g)), "");
    EXPECT_FALSE(layernorm_fp8(in.x, in.gamma, in.beta, kEps, g).y.defined());  // keep_y off
    const LayerNormFp8 peer = layernorm_fp8_torch(in.x, in.gamma, in.beta, kEps, g);
    EXPECT_EQ(fp8_bitwise_difference(peer.q, ours.q), "") << fp8_granularity_name(g);
  }
}

TEST(Fp8LayerNorm, SaysWhyItsKernelCannotRun) {
  const Inputs in = inputs(4, 256, c10::kCPU);
  EXPECT_NE(layernorm_fp8_unsupported(in.x, in.gamma, Fp8Granularity::kRow).find("CUDA GPU"), std::string::npos);
  EXPECT_THROW(layernorm_fp8(in.x, in.gamma, in.beta, kEps, Fp8Granularity::kTensor), std::invalid_argument);
  EXPECT_THROW(layernorm_fp8(in.x, in.gamma.narrow(0, 0, 8), in.beta, kEps, Fp8Granularity::kRow),
               std::invalid_argument);
  const Inputs odd = inputs(4, 100, c10::kCPU);  // not a multiple of 8
  EXPECT_THROW(layernorm_fp8(odd.x, odd.gamma, odd.beta, kEps, Fp8Granularity::kRow), std::invalid_argument);
  EXPECT_THROW(layernorm_fp8(in.x.reshape({2, 2, 256}), in.gamma, in.beta, kEps, Fp8Granularity::kRow),
               std::invalid_argument);
}

TEST(Fp8LayerNormGpu, OnePassEqualsTwoPassesBitForBit) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU and a CUDA build";
  const c10::Device gpu(c10::kCUDA, 0);
  struct Shape {
    int64_t rows, cols;
  };
  for (Shape s : {Shape{1, 128}, Shape{33, 768}, Shape{1000, 1024}, Shape{8192, 768}, Shape{257, 1280}, Shape{64, 200}})
    for (Fp8Granularity g : {Fp8Granularity::kRow, Fp8Granularity::kBlock1x128}) {
      const std::string what = std::to_string(s.rows) + "x" + std::to_string(s.cols) + " " + fp8_granularity_name(g);
      const Inputs in = inputs(s.rows, s.cols, gpu);
      const bool fused = layernorm_fp8_unsupported(in.x, in.gamma, g).empty();
      EXPECT_EQ(fused, !(g == Fp8Granularity::kBlock1x128 && s.cols % 128 != 0)) << what;
      const LayerNormFp8 ours = layernorm_fp8(in.x, in.gamma, in.beta, kEps, g, /*keep_y=*/true);
      const LayerNormFp8 two = layernorm_fp8_composed(in.x, in.gamma, in.beta, kEps, g);
      // The same LayerNorm arithmetic, the same bf16 rounding: the same y and the same bytes.
      EXPECT_TRUE(at::equal(ours.y, two.y)) << what;
      EXPECT_EQ(fp8_bitwise_difference(ours.q, two.q), "") << what;
      EXPECT_EQ(fp8_bitwise_difference(ours.q, quantize_fp8_reference(ours.y, g)), "") << what;
      // y against LibTorch's: both round fp32 values that agree to ~1e-6, so at most one bf16
      // rounding apart (relative 2^-8 at worst, far less in the Frobenius norm).
      EXPECT_EQ(check_close(ours.y.to(at::kFloat), torch_y(in).to(at::kFloat), 4e-3), "") << what;
      // Without keep_y the kernel writes the e4m3 values alone, the same ones.
      EXPECT_EQ(fp8_bitwise_difference(layernorm_fp8(in.x, in.gamma, in.beta, kEps, g).q, ours.q), "") << what;
    }
}

}  // namespace
}  // namespace gptbench

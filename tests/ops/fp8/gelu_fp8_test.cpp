// Tests of ops/fp8/gelu_fp8.*: GELU's output quantized in the pass that produces it. On the CPU
// the composition (LibTorch's bias add and GELU in bf16, then the quantizer's reference) against
// a float64 GELU and the eager peer, the argument checks and the reasons ours cannot run; on a
// GPU (skipped without one) our one-pass kernel: its e4m3 bytes and scales bit for bit against
// the reference applied to its own bf16 output (the same correctly rounded fp32 operations on the
// same bf16 values, so any difference is a bug), and that output against LibTorch's GELU within
// one bf16 rounding (both compute the tanh form in fp32; the two tanhf need not agree in the
// last bit). Shapes cover rows that do not fill a block, GPT-2 widths and a partial 1×128 block.
#include "ops/fp8/gelu_fp8.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "fixtures/verify.h"
#include "tests/ops/have_gpu.h"

namespace gptbench {
namespace {

struct Inputs {
  at::Tensor u, bias;
};

Inputs inputs(int64_t rows, int64_t cols, c10::Device device) {
  const auto f32 = at::TensorOptions().device(device).dtype(at::kFloat);
  return {(at::randn({rows, cols}, f32) * at::exp2(at::rand({rows, 1}, f32) * 4 - 2)).to(at::kBFloat16),
          (0.1 * at::randn({cols}, f32)).to(at::kBFloat16)};
}

TEST(Fp8Gelu, LibTorchsBf16GeluIsTheTanhFormOfTheRoundedSum) {
  const Inputs in = inputs(16, 64, c10::kCPU);
  // float64: h = bf16(u + bias), GELU's tanh form; LibTorch's bf16 result rounds its fp32 value,
  // so it is within one bf16 rounding (2^-8 relative) of the exact one.
  const at::Tensor h = (in.u.to(at::kFloat) + in.bias.to(at::kFloat)).to(at::kBFloat16).to(at::kDouble);
  const at::Tensor exact = 0.5 * h * (1 + at::tanh(std::sqrt(2.0 / M_PI) * (h + 0.044715 * h.pow(3))));
  EXPECT_EQ(check_close(gelu_bf16_torch(in.u, in.bias).to(at::kDouble), exact, 4e-3), "");
  EXPECT_TRUE(at::equal(gelu_bf16_torch(in.u, at::Tensor()), at::gelu(in.u, "tanh")));
}

TEST(Fp8Gelu, OnTheCpuTheCompositionAndTheReferenceAgree) {
  const Inputs in = inputs(37, 256, c10::kCPU);
  for (Fp8Granularity g : {Fp8Granularity::kRow, Fp8Granularity::kBlock1x128})
    for (bool with_bias : {true, false}) {
      const at::Tensor bias = with_bias ? in.bias : at::Tensor();
      const Fp8Produced ours = gelu_fp8(in.u, bias, g, /*keep_y=*/true);
      EXPECT_TRUE(at::equal(ours.y, gelu_bf16_torch(in.u, bias)));
      EXPECT_EQ(fp8_bitwise_difference(ours.q, quantize_fp8_reference(ours.y, g)), "");
      EXPECT_FALSE(gelu_fp8(in.u, bias, g).y.defined());  // keep_y off
      EXPECT_EQ(fp8_bitwise_difference(gelu_fp8_torch(in.u, bias, g).q, ours.q), "") << fp8_granularity_name(g);
    }
}

TEST(Fp8Gelu, SaysWhyItsKernelCannotRun) {
  const Inputs in = inputs(4, 256, c10::kCPU);
  EXPECT_NE(gelu_fp8_unsupported(in.u, in.bias, Fp8Granularity::kRow).find("CUDA GPU"), std::string::npos);
  EXPECT_THROW(gelu_fp8(in.u, in.bias, Fp8Granularity::kTensor), std::invalid_argument);
  EXPECT_THROW(gelu_fp8(in.u, in.bias, Fp8Granularity::kBlock128x128), std::invalid_argument);
  EXPECT_THROW(gelu_fp8(in.u, in.bias.narrow(0, 0, 8), Fp8Granularity::kRow), std::invalid_argument);
  const Inputs odd = inputs(4, 100, c10::kCPU);  // not a multiple of 8
  EXPECT_THROW(gelu_fp8(odd.u, odd.bias, Fp8Granularity::kRow), std::invalid_argument);
  EXPECT_THROW(gelu_fp8(in.u.reshape({2, 2, 256}), in.bias, Fp8Granularity::kRow), std::invalid_argument);
}

TEST(Fp8GeluGpu, OnePassQuantizesItsOwnGeluOutput) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU and a CUDA build";
  const c10::Device gpu(c10::kCUDA, 0);
  struct Shape {
    int64_t rows, cols;
  };
  for (Shape s : {Shape{1, 8}, Shape{33, 3072}, Shape{1000, 4096}, Shape{8192, 3072}, Shape{257, 5120}, Shape{64, 200}})
    for (Fp8Granularity g : {Fp8Granularity::kRow, Fp8Granularity::kBlock1x128})
      for (bool with_bias : {true, false}) {
        const std::string what = std::to_string(s.rows) + "x" + std::to_string(s.cols) + " " +
                                 fp8_granularity_name(g) + (with_bias ? " bias" : "");
        const Inputs in = inputs(s.rows, s.cols, gpu);
        const at::Tensor bias = with_bias ? in.bias : at::Tensor();
        ASSERT_EQ(gelu_fp8_unsupported(in.u, bias, g), "") << what;
        const Fp8Produced ours = gelu_fp8(in.u, bias, g, /*keep_y=*/true);
        EXPECT_EQ(fp8_bitwise_difference(ours.q, quantize_fp8_reference(ours.y, g)), "") << what;
        const at::Tensor torch = gelu_bf16_torch(in.u, bias);
        EXPECT_EQ(check_close(ours.y.to(at::kFloat), torch.to(at::kFloat), 4e-3), "") << what;
        // Elements whose bf16 rounding the two tanhf tip differently: rare.
        const double differ = (ours.y != torch).to(at::kDouble).mean().item<double>();
        EXPECT_LT(differ, 0.01) << what;
        // Without keep_y the kernel writes the e4m3 values alone, the same ones.
        EXPECT_EQ(fp8_bitwise_difference(gelu_fp8(in.u, bias, g).q, ours.q), "") << what;
      }
}

}  // namespace
}  // namespace gptbench

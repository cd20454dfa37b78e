// model/fp8_linear (the FP8 Linear layer as an autograd function): the bf16 fallback and the
// argument checks on the CPU; on a GPU with FP8 tensor cores the FP8 path against float64
// at::linear, the gradients' dtypes, the no-grad forward and the fallback on unaligned shapes.
#include "model/fp8_linear.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "fixtures/verify.h"
#include "model/fused_linear.h"
#include "ops/fp8/linear.h"
#include "tests/ops/have_gpu.h"
#include "train/step.h"

namespace gptbench {
namespace {

// x (B, T, in), w (out, in), b (out): fp32 leaves requiring gradients, fresh N(0, 1) values.
struct Layer {
  at::Tensor x, w, b;
};
Layer layer(int64_t batch, int64_t seq, int64_t in, int64_t out, c10::Device device) {
  auto opts = at::TensorOptions().device(device);
  return {at::randn({batch, seq, in}, opts).requires_grad_(),
          (at::randn({out, in}, opts) / 16).requires_grad_(), at::randn({out}, opts).requires_grad_()};
}

TEST(Fp8LinearFunction, ShapeRule) {
  EXPECT_TRUE(fp8_linear_shape_supported(8192, 768, 2304));
  EXPECT_TRUE(fp8_linear_shape_supported(16, 16, 16));
  EXPECT_FALSE(fp8_linear_shape_supported(8, 768, 2304));   // rows: the backward's reduction
  EXPECT_FALSE(fp8_linear_shape_supported(8192, 24, 2304)); // in
  EXPECT_FALSE(fp8_linear_shape_supported(8192, 768, 50257));  // out: an unpadded vocabulary
  EXPECT_FALSE(fp8_linear_shape_supported(0, 768, 2304));
}

// On the CPU the function is at::linear (linear_fused's fallback), value and gradients, with a
// bias and without.
TEST(Fp8LinearFunction, FallsBackToLinearOnTheCpu) {
  at::manual_seed(1);
  for (bool bias : {true, false}) {
    Layer a = layer(2, 5, 24, 40, at::kCPU);
    const at::Tensor b = bias ? a.b : at::Tensor();
    EXPECT_FALSE(fp8_linear_available(a.x, a.w));
    const at::Tensor y = linear_fp8(a.x, a.w, b);
    const at::Tensor ref = at::linear(a.x, a.w, b);
    ASSERT_TRUE(at::equal(y, ref)) << "bias " << bias;
    const at::Tensor g = at::randn_like(y);
    const auto grads = torch::autograd::grad({y}, {a.x, a.w}, {g});
    const auto ref_grads = torch::autograd::grad({ref}, {a.x, a.w}, {g});
    EXPECT_TRUE(at::allclose(grads[0], ref_grads[0]));
    EXPECT_TRUE(at::allclose(grads[1], ref_grads[1]));
  }
  // (N, C) input, shapes the FP8 layer would take too: still at::linear on the CPU.
  Layer a = layer(1, 32, 64, 64, at::kCPU);
  const at::Tensor x2 = a.x.squeeze(0);
  EXPECT_TRUE(at::equal(linear_fp8(x2, a.w, a.b), at::linear(x2, a.w, a.b)));
}

TEST(Fp8LinearFunction, ShapesThatDoNotFitThrow) {
  Layer a = layer(2, 4, 16, 32, at::kCPU);
  EXPECT_THROW(linear_fp8(a.x, a.w.narrow(1, 0, 8), a.b), std::invalid_argument);       // in
  EXPECT_THROW(linear_fp8(a.x, a.w, a.b.narrow(0, 0, 8)), std::invalid_argument);       // bias
  EXPECT_THROW(linear_fp8(a.x.unsqueeze(0), a.w, a.b), std::invalid_argument);          // 4-D x
  EXPECT_THROW(linear_fp8(at::Tensor(), a.w, a.b), std::invalid_argument);
}

// ------------------------------------------------------------------ GPU

// Why the FP8 path cannot be tested here ("" when it can).
std::string no_fp8() {
  if (!have_gpu()) return "no CUDA GPU (or a build without CUDA kernels)";
  return linear_unsupported(LinearImpl::kFp8, c10::Device(c10::kCUDA, 0));
}

// Relative Frobenius error of the FP8 layer against float64 at::linear on the fp32 values.
// e4m3 rounds x and W to nearest with a relative error ≤ 2^-4 (3 mantissa bits), ≈ 2^-4/√3 ≈
// 3.6% in RMS for values spread over the binade; a dot product's error is then ≈ √2·3.6% ≈ 5%
// of its size. The backward's dŶ is e5m2 (2 mantissa bits: 7.2% RMS), with ≈ 8% for dX and dW.
// Bounds of 10% and 15%; a scale of the wrong tensor, or a transposed copy read as plain, gives
// errors of order 1. The bias gradient is Σrows dy in fp32 from bf16 dy: exact to fp32's sum.
constexpr double kYTolerance = 0.10;
constexpr double kGradTolerance = 0.15;

TEST(Fp8LinearFunctionGpu, ForwardAndBackwardAgreeWithLinear) {
  if (auto why = no_fp8(); !why.empty()) GTEST_SKIP() << why;
  const c10::Device gpu(c10::kCUDA, 0);
  at::manual_seed(2);
  for (bool bias : {true, false}) {
    Layer a = layer(4, 64, 256, 384, gpu);
    const at::Tensor b = bias ? a.b : at::Tensor();
    at::Tensor y;
    {
      PrecisionScope bf16(Precision::kBf16, gpu);
      ASSERT_TRUE(fp8_linear_available(a.x, a.w));
      y = linear_fp8(a.x, a.w, b);
    }
    EXPECT_EQ(y.scalar_type(), at::kBFloat16);
    ASSERT_EQ(y.sizes(), (std::vector<int64_t>{4, 64, 384}));
    const at::Tensor g = at::randn(y.sizes(), y.options());  // bf16 dy
    y.backward(g);
    const at::Tensor x64 = a.x.detach().to(at::kDouble), w64 = a.w.detach().to(at::kDouble),
                     g64 = g.to(at::kDouble).reshape({-1, 384});
    const at::Tensor ref = at::linear(x64, w64, bias ? a.b.detach().to(at::kDouble) : at::Tensor());
    EXPECT_EQ(check_close(y, ref, kYTolerance), "") << "y, bias " << bias;
    ASSERT_EQ(a.w.grad().scalar_type(), at::kFloat);  // in the master weight's dtype
    ASSERT_EQ(a.x.grad().scalar_type(), at::kFloat);  // through autocast's cast of x
    EXPECT_EQ(check_close(a.x.grad(), at::matmul(g64, w64).view(a.x.sizes()), kGradTolerance), "");
    EXPECT_EQ(check_close(a.w.grad(), at::matmul(g64.t(), x64.reshape({-1, 256})), kGradTolerance), "");
    if (bias) {
      ASSERT_EQ(a.b.grad().scalar_type(), at::kFloat);
      EXPECT_EQ(check_close(a.b.grad(), g64.sum(0), 1e-6), "");
    }
    for (auto* t : {&a.x, &a.w, &a.b}) t->mutable_grad().reset();
  }
}

// Delayed scaling: three steps of one layer's scales, each on fresh operands of the same spread,
// agree with the float64 layer within the bounds current scaling meets (a multiplier from the
// earlier steps' amax saturates at most the few values above it, by a fraction of an FP8 step),
// and each tensor's history takes one cast a step.
TEST(Fp8LinearFunctionGpu, DelayedScalingAgreesWithLinear) {
  if (auto why = no_fp8(); !why.empty()) GTEST_SKIP() << why;
  const c10::Device gpu(c10::kCUDA, 0);
  at::manual_seed(3);
  const Fp8Scales scales = c10::make_intrusive<Fp8LayerScales>();
  for (int step = 1; step <= 3; ++step) {
    Layer a = layer(4, 64, 256, 384, gpu);
    at::Tensor y;
    {
      PrecisionScope bf16(Precision::kBf16, gpu);
      y = linear_fp8(a.x, a.w, a.b, scales);
    }
    const at::Tensor g = at::randn(y.sizes(), y.options());
    y.backward(g);
    const at::Tensor x64 = a.x.detach().to(at::kDouble), w64 = a.w.detach().to(at::kDouble),
                     g64 = g.to(at::kDouble).reshape({-1, 384});
    EXPECT_EQ(check_close(y, at::linear(x64, w64, a.b.detach().to(at::kDouble)), kYTolerance), "") << step;
    EXPECT_EQ(check_close(a.x.grad(), at::matmul(g64, w64).view(a.x.sizes()), kGradTolerance), "") << step;
    EXPECT_EQ(check_close(a.w.grad(), at::matmul(g64.t(), x64.reshape({-1, 256})), kGradTolerance), "") << step;
    for (const Fp8DelayedScale* d : {&scales->x, &scales->w, &scales->dy}) EXPECT_EQ(d->casts, step);
  }
  EXPECT_EQ(scales->dy.format, Fp8Format::kE5m2);
}

// Without gradients the forward writes no transposed copies and records no autograd node; the
// output is the same, bit for bit (the same quantization, GEMM and bias add).
TEST(Fp8LinearFunctionGpu, NoGradForwardIsTheSame) {
  if (auto why = no_fp8(); !why.empty()) GTEST_SKIP() << why;
  const c10::Device gpu(c10::kCUDA, 0);
  Layer a = layer(2, 128, 128, 256, gpu);
  PrecisionScope bf16(Precision::kBf16, gpu);
  const at::Tensor y = linear_fp8(a.x, a.w, a.b);
  EXPECT_TRUE(y.requires_grad());
  at::Tensor y0;
  {
    at::NoGradGuard no_grad;
    y0 = linear_fp8(a.x, a.w, a.b);
  }
  EXPECT_FALSE(y0.requires_grad());
  EXPECT_TRUE(at::equal(y, y0));
}

// Rows, in or out features not multiples of 16: the bf16 path (linear_fused), exactly.
TEST(Fp8LinearFunctionGpu, FallsBackToBf16OnUnalignedShapes) {
  if (auto why = no_fp8(); !why.empty()) GTEST_SKIP() << why;
  const c10::Device gpu(c10::kCUDA, 0);
  PrecisionScope bf16(Precision::kBf16, gpu);
  for (auto [rows, in, out] : {std::tuple{24, 64, 64}, std::tuple{32, 40, 64}, std::tuple{32, 64, 72}}) {
    Layer a = layer(1, rows, in, out, gpu);
    EXPECT_FALSE(fp8_linear_available(a.x, a.w)) << rows << " " << in << " " << out;
    EXPECT_TRUE(at::equal(linear_fp8(a.x, a.w, a.b), linear_fused(a.x, a.w, a.b)));
    EXPECT_TRUE(at::equal(linear_fp8(a.x, a.w, at::Tensor()), at::linear(a.x, a.w)));
  }
}

}  // namespace
}  // namespace gptbench

// Tests of ops/layernorm.*: the LibTorch composition (CPU path) against a float64 LayerNorm,
// argument errors, and the fused kernels on a GPU (skipped without one) against float64
// autograd of the same composition on fresh random data: with and without the residual branch
// (fp32 and bf16), fp32 and bf16 (autocast) outputs, widths from 4 to the largest the kernels
// hold, row counts that leave partial warps and blocks.
#include "ops/layernorm.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>
#include <torch/cuda.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "train/step.h"
#include "tests/ops/have_gpu.h"

namespace gptbench {
namespace {

// max over elements of |a - b| / (atol + rtol·|b|): <= 1 means within tolerance.
double worst(const at::Tensor& a, const at::Tensor& b, double atol, double rtol) {
  const auto ad = a.detach().to(at::kCPU, at::kDouble), bd = b.detach().to(at::kCPU, at::kDouble);
  return ((ad - bd).abs() / (bd.abs() * rtol + atol)).max().item<double>();
}

struct Inputs {
  at::Tensor x, branch, gamma, beta, gh, gy;  // gh, gy: upstream gradients of h and y (fp64)
};
// x ~ 3 + 2·N(0,1) (an offset, so the mean matters), branch ~ N(0,1), gamma ~ 1 + 0.2·N,
// beta ~ 0.2·N, upstream gradients ~ N(0,1).
Inputs make_inputs(int64_t rows, int64_t c, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const auto d = at::TensorOptions().dtype(at::kDouble);
  Inputs in;
  in.x = 3 + 2 * at::randn({rows, c}, gen, d);
  in.branch = at::randn({rows, c}, gen, d);
  in.gamma = 1 + 0.2 * at::randn({c}, gen, d);
  in.beta = 0.2 * at::randn({c}, gen, d);
  in.gh = at::randn({rows, c}, gen, d);
  in.gy = at::randn({rows, c}, gen, d);
  return in;
}

TEST(LayerNorm, TorchCompositionMatchesFloat64Formula) {
  auto in = make_inputs(9, 48, 1);
  const auto x = in.x.to(at::kFloat), b = in.branch.to(at::kFloat);
  auto out = torch_add_layernorm(x, b, in.gamma.to(at::kFloat), in.beta.to(at::kFloat), 1e-5);
  const auto h = x.to(at::kDouble) + b.to(at::kDouble);
  const auto mean = h.mean(-1, true);
  const auto var = (h - mean).pow(2).mean(-1, true);
  const auto y = (h - mean) / (var + 1e-5).sqrt() * in.gamma + in.beta;
  EXPECT_TRUE(at::equal(out.h, x + b));
  EXPECT_LE(worst(out.y, y, 1e-5, 1e-5), 1.0);  // fp32 LayerNorm of 48 values: ~1e-6
  EXPECT_EQ(out.y.scalar_type(), at::kFloat);
}

TEST(LayerNorm, CpuTakesTheCompositionAndGivesItsValues) {
  auto in = make_inputs(5, 32, 2);
  const auto x = in.x.to(at::kFloat), b = in.branch.to(at::kFloat);
  const auto g = in.gamma.to(at::kFloat), be = in.beta.to(at::kFloat);
  EXPECT_FALSE(layernorm_uses_kernels(x, b, g));
  auto fused = fused_add_layernorm(x, b, g, be, 1e-5);
  auto ref = torch_add_layernorm(x, b, g, be, 1e-5);
  EXPECT_TRUE(at::equal(fused.h, ref.h));
  EXPECT_TRUE(at::equal(fused.y, ref.y));
  EXPECT_TRUE(at::equal(fused_layernorm(x, g, be, 1e-5), at::layer_norm(x, {32}, g, be, 1e-5)));
}

TEST(LayerNorm, BadArgumentsThrow) {
  const auto x = at::randn({4, 8});
  const auto g = at::ones({8}), b = at::zeros({8});
  EXPECT_THROW(fused_layernorm(x, at::ones({7}), b, 1e-5), std::invalid_argument);
  EXPECT_THROW(fused_layernorm(x, g, at::zeros({2, 4}), 1e-5), std::invalid_argument);
  EXPECT_THROW(fused_add_layernorm(x, at::randn({4, 7}), g, b, 1e-5), std::invalid_argument);
  EXPECT_THROW(fused_layernorm(at::Tensor(), g, b, 1e-5), std::invalid_argument);
}

// One GPU case: rows × c, branch none / fp32 / bf16, output fp32 or bf16 (autocast on).
struct GpuCase {
  int64_t rows, c;
  at::ScalarType branch;  // kDouble: no branch
  bool autocast;
};

std::string case_name(const GpuCase& k) {
  return std::to_string(k.rows) + "x" + std::to_string(k.c) + " branch " +
         (k.branch == at::kDouble ? "none" : at::toString(k.branch)) +
         (k.autocast ? " bf16 autocast" : " fp32");
}

void check_gpu_case(const GpuCase& k, uint64_t seed) {
  SCOPED_TRACE(case_name(k));
  auto in = make_inputs(k.rows, k.c, seed);
  const bool has_branch = k.branch != at::kDouble;
  const auto cuda = at::TensorOptions().device(at::kCUDA);
  // Inputs as the kernel sees them (fp32 / bf16), then the float64 reference from those values.
  auto x = in.x.to(cuda.dtype(at::kFloat)).requires_grad_(true);
  auto br = has_branch ? in.branch.to(cuda.dtype(k.branch)).requires_grad_(true) : at::Tensor();
  auto g = in.gamma.to(cuda.dtype(at::kFloat)).requires_grad_(true);
  auto be = in.beta.to(cuda.dtype(at::kFloat)).requires_grad_(true);
  ASSERT_TRUE(layernorm_uses_kernels(x, br, g));
  AddLayerNorm out;
  {
    PrecisionScope precision(k.autocast ? Precision::kBf16 : Precision::kFp32, x.device());
    out = fused_add_layernorm(x, br, g, be, 1e-5);
  }
  ASSERT_EQ(out.y.scalar_type(), k.autocast ? at::kBFloat16 : at::kFloat);
  // Upstream gradients enter through fp32 products; the bf16 output's gradient reaches the
  // kernel rounded to bf16 (the cast's backward), so the reference uses the rounded values.
  auto loss = (out.y.to(at::kFloat) * in.gy.to(cuda.dtype(at::kFloat))).sum();
  if (has_branch) loss = loss + (out.h * in.gh.to(cuda.dtype(at::kFloat))).sum();
  loss.backward();

  auto xr = x.detach().to(at::kCPU, at::kDouble).requires_grad_(true);
  auto brr = has_branch ? br.detach().to(at::kCPU, at::kDouble).requires_grad_(true) : at::Tensor();
  auto gr = g.detach().to(at::kCPU, at::kDouble).requires_grad_(true);
  auto ber = be.detach().to(at::kCPU, at::kDouble).requires_grad_(true);
  const auto hr = has_branch ? xr + brr : xr;
  const auto yr = at::layer_norm(hr, {k.c}, gr, ber, 1e-5);
  const auto gy = k.autocast ? in.gy.to(at::kBFloat16).to(at::kDouble) : in.gy.to(at::kFloat).to(at::kDouble);
  auto lr = (yr * gy).sum();
  if (has_branch) lr = lr + (hr * in.gh.to(at::kFloat).to(at::kDouble)).sum();
  lr.backward();

  // Forward: h is one fp32 add of the same operands (exact); y is an fp32 LayerNorm of c values
  // (mean and variance sums: relative error ~1e-6) stored in fp32 or rounded to bf16 (half an
  // ulp: 2^-9 relative; 2^-8 allowed).
  if (has_branch) EXPECT_TRUE(at::equal(out.h, x.detach() + br.detach().to(at::kFloat)));
  const double ry = k.autocast ? 1.0 / 256 : 2e-5;
  EXPECT_LE(worst(out.y, yr, 1e-4, ry), 1.0) << "y";
  // Backward, fp32 arithmetic over c columns (dx) or over the rows (dgamma, dbeta): relative
  // error ~1e-6·sqrt(terms); the tolerance scales the absolute part with the sums' size. A bf16
  // branch's gradient is dx rounded to bf16.
  const double rows_scale = std::sqrt(static_cast<double>(k.rows));
  EXPECT_LE(worst(x.grad(), xr.grad(), 1e-4, 1e-4), 1.0) << "dx";
  if (has_branch)
    EXPECT_LE(worst(br.grad(), brr.grad(), 1e-4, k.branch == at::kBFloat16 ? 1.0 / 256 : 1e-4), 1.0)
        << "dbranch";
  EXPECT_LE(worst(g.grad(), gr.grad(), 1e-4 * rows_scale, 1e-4), 1.0) << "dgamma";
  EXPECT_LE(worst(be.grad(), ber.grad(), 1e-4 * rows_scale, 1e-4), 1.0) << "dbeta";
}

TEST(LayerNormGpu, FusedMatchesFloat64AutogradAcrossShapesAndDtypes) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU";
  uint64_t seed = 100;
  // Widths: 4 (one group), 64, 768 (GPT-2 small), 1,000 (not a multiple of 128), 1,024, 1,280,
  // 1,600 (xl) and 1,664 (the largest); rows: 1, partial warps and blocks, several waves.
  const GpuCase cases[] = {
      {1, 4, at::kDouble, false},         {37, 64, at::kFloat, false},
      {37, 64, at::kBFloat16, true},      {130, 768, at::kDouble, true},
      {130, 768, at::kBFloat16, true},    {4099, 768, at::kFloat, false},
      {4099, 768, at::kBFloat16, true},   {61, 1000, at::kBFloat16, true},
      {257, 1024, at::kFloat, true},      {129, 1280, at::kBFloat16, true},
      {300, 1600, at::kBFloat16, true},   {33, 1664, at::kDouble, false},
  };
  for (const auto& k : cases) check_gpu_case(k, seed++);
}

// A contiguous view at an offset that breaks the kernels' 16-byte vectors (one float in) gives
// the same result as the same values in their own allocation (the wrapper copies it).
TEST(LayerNormGpu, MisalignedContiguousInputsGiveTheAlignedResult) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU";
  const auto cuda = at::TensorOptions().device(at::kCUDA);
  const int64_t rows = 5, c = 64;
  auto store = at::randn({rows * c + 1}, cuda);
  auto x = store.narrow(0, 1, rows * c).view({rows, c});
  ASSERT_TRUE(x.is_contiguous());
  ASSERT_NE(reinterpret_cast<uintptr_t>(x.data_ptr()) % 16, 0u);
  const auto b = at::randn({rows, c}, cuda), g = at::ones({c}, cuda), be = at::zeros({c}, cuda);
  auto odd = fused_add_layernorm(x, b, g, be, 1e-5);
  auto even = fused_add_layernorm(x.clone(), b, g, be, 1e-5);
  EXPECT_TRUE(at::equal(odd.h, even.h));
  EXPECT_TRUE(at::equal(odd.y, even.y));
}

TEST(LayerNormGpu, WidthsTheKernelsDoNotHoldTakeTheComposition) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU";
  const auto cuda = at::TensorOptions().device(at::kCUDA);
  for (int64_t c : {6, 2048}) {
    const auto x = at::randn({3, c}, cuda), g = at::ones({c}, cuda), b = at::zeros({c}, cuda);
    EXPECT_FALSE(layernorm_uses_kernels(x, at::Tensor(), g)) << c;
    EXPECT_TRUE(at::allclose(fused_layernorm(x, g, b, 1e-5), at::layer_norm(x, {c}, g, b, 1e-5)));
  }
}

}  // namespace
}  // namespace gptbench

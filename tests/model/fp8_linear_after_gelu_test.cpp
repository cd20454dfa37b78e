// model/fp8_linear.h's linear_fp8_after_gelu (the MLP's c_proj reading GELU(u + b_pre) without
// it being written) and what it is built from: quantize_per_tensor_gelu_fp8
// (ops/fp8/quantize_transpose.h) and gelu_backward_column_sum with a bias (ops/column_sum.h).
// On the CPU each is its composition; on a GPU with FP8 tensor cores ours against the
// composition that writes bf16(u + b_pre) and GELU's output.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "fixtures/verify.h"
#include "model/fp8_linear.h"
#include "ops/column_sum.h"
#include "ops/fp8/gelu_fp8.h"
#include "ops/fp8/linear.h"
#include "ops/fp8/quantize_transpose.h"
#include "tests/ops/have_gpu.h"
#include "train/step.h"

namespace gptbench {
namespace {

// u (B, T, hidden): an MLP-up output before its bias; b_pre (hidden), w (out, hidden), b (out):
// fp32 leaves requiring gradients, fresh random values in GELU's curved range.
struct Mlp {
  at::Tensor u, b_pre, w, b;
};
Mlp mlp(int64_t batch, int64_t seq, int64_t hidden, int64_t out, c10::Device device) {
  auto opts = at::TensorOptions().device(device);
  return {(at::randn({batch, seq, hidden}, opts) * 2).requires_grad_(), at::randn({hidden}, opts).requires_grad_(),
          (at::randn({out, hidden}, opts) / 16).requires_grad_(), at::randn({out}, opts).requires_grad_()};
}

// The composition the function stands for. b_pre is rounded to u's dtype before the add, as
// autocast rounds a linear layer's bias to bf16 before its GEMM adds it.
at::Tensor composed(const Mlp& m, const at::Tensor& b) {
  return linear_fp8(at::gelu(m.u + m.b_pre.to(m.u.scalar_type()), "tanh"), m.w, b);
}

// On the CPU it is the composition: value and every gradient, with c_proj's bias and without.
TEST(Fp8LinearAfterGelu, IsTheCompositionOnTheCpu) {
  at::manual_seed(3);
  for (bool bias : {true, false}) {
    Mlp m = mlp(2, 8, 48, 24, at::kCPU);
    const at::Tensor b = bias ? m.b : at::Tensor();
    const at::Tensor y = linear_fp8_after_gelu(m.u, m.b_pre, m.w, b), ref = composed(m, b);
    ASSERT_TRUE(at::equal(y, ref)) << "bias " << bias;
    const at::Tensor g = at::randn_like(y);
    const auto grads = torch::autograd::grad({y}, {m.u, m.b_pre, m.w}, {g});
    const auto ref_grads = torch::autograd::grad({ref}, {m.u, m.b_pre, m.w}, {g});
    for (size_t i = 0; i < grads.size(); ++i) EXPECT_TRUE(at::allclose(grads[i], ref_grads[i])) << i;
  }
}

TEST(Fp8LinearAfterGelu, ArgumentsThatDoNotFitThrow) {
  Mlp m = mlp(1, 4, 32, 16, at::kCPU);
  EXPECT_THROW(linear_fp8_after_gelu(m.u, at::Tensor(), m.w, m.b), std::invalid_argument);           // no b_pre
  EXPECT_THROW(linear_fp8_after_gelu(m.u, m.b_pre.narrow(0, 0, 8), m.w, m.b), std::invalid_argument);
  EXPECT_THROW(linear_fp8_after_gelu(m.u, m.b_pre, m.w.narrow(1, 0, 8), m.b), std::invalid_argument);
  const at::Tensor u2 = at::randn({16, 32}).to(at::kBFloat16);
  EXPECT_THROW(quantize_per_tensor_gelu_fp8(u2, at::zeros({8}), Fp8Format::kE4m3, Fp8Copies::kBoth),
               std::invalid_argument);
  EXPECT_THROW(gelu_backward_column_sum(u2, u2, at::zeros({8})), std::invalid_argument);
}

// The fallbacks on the CPU: the quantizer is the reference applied to LibTorch's bf16 GELU, bit
// for bit; the backward with a bias is at::gelu_backward at bf16(pre + bias) and its column sum.
TEST(Fp8LinearAfterGelu, BuildingBlocksAreTheirCompositionsOnTheCpu) {
  at::manual_seed(4);
  const at::Tensor u = (at::randn({32, 64}) * 3).to(at::kBFloat16), bias = at::randn({64}).to(at::kBFloat16);
  const Fp8PerTensor q = quantize_per_tensor_gelu_fp8(u, bias, Fp8Format::kE4m3, Fp8Copies::kBoth);
  const Fp8PerTensor r = quantize_per_tensor_fp8_reference(gelu_bf16_torch(u, bias), Fp8Format::kE4m3, Fp8Copies::kBoth);
  EXPECT_TRUE(at::equal(q.scale_inv, r.scale_inv));
  EXPECT_TRUE(at::equal(q.data.view(at::kByte), r.data.view(at::kByte)));
  EXPECT_TRUE(at::equal(q.data_t.view(at::kByte), r.data_t.view(at::kByte)));

  const at::Tensor dh = at::randn({32, 64}).to(at::kBFloat16);
  const auto [d_pre, sums] = gelu_backward_column_sum(dh, u, bias);
  const at::Tensor ref = at::gelu_backward(dh, u + bias, "tanh");
  EXPECT_TRUE(at::equal(d_pre, ref));
  EXPECT_TRUE(at::allclose(sums, ref.to(at::kFloat).sum(0), 1e-5, 1e-5));
  EXPECT_EQ(sums.scalar_type(), at::kFloat);
}

// ------------------------------------------------------------------ GPU

std::string no_fp8() {
  if (!have_gpu()) return "no CUDA GPU (or a build without CUDA kernels)";
  return linear_unsupported(LinearImpl::kFp8, c10::Device(c10::kCUDA, 0));
}

// Ours computes GELU with CUDA's tanhf, the reference with LibTorch's tanh: the two may differ
// by an ulp of fp32, which tips the bf16 rounding of GELU's output for a rare value (about 1 in
// 2^16 of values spread evenly over a bf16 ulp). A bf16 ulp (2^-8 relative) is less than half
// an e4m3 ulp (2^-3), so such a value's e4m3 byte moves by at most one code. So: at most 1 in
// 1,000 bytes differ, each by one code, and the scale is the same unless the amax element
// tipped (then by one bf16 ulp, 2^-7 relative at most).
void expect_one_code_apart(const at::Tensor& a, const at::Tensor& b, const char* what) {
  const at::Tensor d = (a.view(at::kByte).to(at::kInt) - b.view(at::kByte).to(at::kInt)).cpu();
  const int64_t differ = d.ne(0).sum().item<int64_t>();
  EXPECT_LE(differ * 1000, d.numel()) << what << ": " << differ << " of " << d.numel() << " bytes differ";
  EXPECT_LE(d.abs().max().item<int>(), 1) << what;
}

TEST(Fp8LinearAfterGeluGpu, QuantizerMatchesTheCompositionsBytes) {
  if (auto why = no_fp8(); !why.empty()) GTEST_SKIP() << why;
  at::manual_seed(5);
  const auto bf = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  const at::Tensor u = at::randn({512, 768}, bf) * 3, bias = at::randn({768}, bf);
  for (Fp8Format f : {Fp8Format::kE4m3, Fp8Format::kE5m2}) {
    const Fp8PerTensor q = quantize_per_tensor_gelu_fp8(u, bias, f, Fp8Copies::kBoth);
    const Fp8PerTensor r = quantize_per_tensor_fp8_reference(gelu_bf16_torch(u, bias), f, Fp8Copies::kBoth);
    EXPECT_NEAR(q.scale_inv.item<float>(), r.scale_inv.item<float>(), r.scale_inv.item<float>() / 128);
    expect_one_code_apart(q.data.cpu(), r.data, "plain");
    expect_one_code_apart(q.data_t.cpu(), r.data_t, "transposed");
    // The transposed copy is the plain one transposed, exactly (one pass writes both).
    EXPECT_TRUE(at::equal(q.data_t.view(at::kByte), q.data.view(at::kByte).t().contiguous()));
  }
}

// The function against the composition on the FP8 path: both quantize the same GELU values
// (up to the rare one-code moves above) with the same scales and run the same GEMMs, so they
// agree far inside FP8's own error: 5e-3 relative Frobenius for y and every gradient (a wrong
// bias, a GELU at the wrong input or a missing b_pre gradient give errors of order 1).
TEST(Fp8LinearAfterGeluGpu, AgreesWithTheComposition) {
  if (auto why = no_fp8(); !why.empty()) GTEST_SKIP() << why;
  const c10::Device gpu(c10::kCUDA, 0);
  at::manual_seed(7);
  Mlp m = mlp(2, 128, 768, 256, gpu);
  PrecisionScope bf16(Precision::kBf16, gpu);
  const at::Tensor u = m.u.to(at::kBFloat16).detach().requires_grad_();  // c_fc's bf16 output
  Mlp a{u, m.b_pre, m.w, m.b};
  const at::Tensor y = linear_fp8_after_gelu(a.u, a.b_pre, a.w, a.b), ref = composed(a, a.b);
  ASSERT_EQ(y.scalar_type(), at::kBFloat16);
  EXPECT_EQ(check_close(y, ref.to(at::kDouble), 5e-3), "") << "y";
  const at::Tensor g = at::randn(y.sizes(), y.options());
  const auto grads = torch::autograd::grad({y}, {a.u, a.b_pre, a.w, a.b}, {g});
  const auto ref_grads = torch::autograd::grad({ref}, {a.u, a.b_pre, a.w, a.b}, {g});
  const char* names[] = {"du", "db_pre", "dw", "db"};
  for (size_t i = 0; i < grads.size(); ++i) {
    EXPECT_EQ(grads[i].scalar_type(), ref_grads[i].scalar_type()) << names[i];
    EXPECT_EQ(check_close(grads[i], ref_grads[i].to(at::kDouble), 5e-3), "") << names[i];
  }
  at::Tensor y0;
  {
    at::NoGradGuard no_grad;
    y0 = linear_fp8_after_gelu(a.u, a.b_pre, a.w, a.b);
  }
  EXPECT_TRUE(at::equal(y, y0));  // the no-grad forward: the same quantization and GEMM
}

// With delayed scaling, against the composition with scales of its own: two steps, each
// quantizing GELU's output with the multiplier of the amaxes before it; y and the gradients agree
// as above, and both histories hold the same amaxes (up to GELU's rare one-ulp tips).
TEST(Fp8LinearAfterGeluGpu, DelayedScalingAgreesWithTheComposition) {
  if (auto why = no_fp8(); !why.empty()) GTEST_SKIP() << why;
  const c10::Device gpu(c10::kCUDA, 0);
  at::manual_seed(8);
  const Fp8Scales ours = c10::make_intrusive<Fp8LayerScales>(), theirs = c10::make_intrusive<Fp8LayerScales>();
  PrecisionScope bf16(Precision::kBf16, gpu);
  for (int step = 1; step <= 2; ++step) {
    Mlp m = mlp(2, 128, 768, 256, gpu);
    const at::Tensor u = m.u.to(at::kBFloat16).detach().requires_grad_();
    const at::Tensor y = linear_fp8_after_gelu(u, m.b_pre, m.w, m.b, ours);
    const at::Tensor ref = linear_fp8(at::gelu(u + m.b_pre.to(u.scalar_type()), "tanh"), m.w, m.b, theirs);
    EXPECT_EQ(check_close(y, ref.to(at::kDouble), 5e-3), "") << "y, step " << step;
    const at::Tensor g = at::randn(y.sizes(), y.options());
    const auto grads = torch::autograd::grad({y}, {u, m.w}, {g});
    const auto ref_grads = torch::autograd::grad({ref}, {u, m.w}, {g});
    for (size_t i = 0; i < grads.size(); ++i)
      EXPECT_EQ(check_close(grads[i], ref_grads[i].to(at::kDouble), 5e-3), "") << i << ", step " << step;
    EXPECT_EQ(ours->x.casts, step);
    EXPECT_EQ(ours->dy.casts, step);
    EXPECT_TRUE(at::allclose(ours->x.state, theirs->x.state, 1.0 / 128, 0)) << ours->x.state << theirs->x.state;
  }
}

}  // namespace
}  // namespace gptbench

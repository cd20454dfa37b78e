// Tests of the attention implementations the attention and backward families time
// (ops/attention_ref.*): they agree with each other and with float64 on the CPU, in fp32 and
// fp64, causal and not, forward and backward; the SDPA backend guard restores LibTorch's flags;
// on a GPU (skipped without one) every backend that supports a point agrees within its dtype.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cstdio>
#include <string>
#include <vector>

#include "ops/attention_ref.h"
#include "ops/tf32_guard.h"

namespace gptbench {
namespace {

double max_rel(const at::Tensor& a, const at::Tensor& b) {
  auto x = a.detach().to(at::kCPU, at::kDouble), y = b.detach().to(at::kCPU, at::kDouble);
  return ((x - y).norm() / y.norm()).item<double>();
}

struct Grads {
  at::Tensor out, dq, dk, dv;
};

Grads run(AttnBackend backend, const at::Tensor& q0, const at::Tensor& k0, const at::Tensor& v0,
          const at::Tensor& dout, bool causal) {
  auto q = q0.clone().requires_grad_(true), k = k0.clone().requires_grad_(true),
       v = v0.clone().requires_grad_(true);
  auto out = attention_forward(q, k, v, causal, backend);
  out.backward(dout);
  return {out.detach(), q.grad(), k.grad(), v.grad()};
}

TEST(AttentionCpu, NamesRoundTrip) {
  for (const auto& n : attn_backend_names()) EXPECT_EQ(attn_backend_name(parse_attn_backend(n)), n);
  EXPECT_THROW(parse_attn_backend("flash3"), std::invalid_argument);
}

TEST(AttentionCpu, GuardForcesOneBackendAndRestores) {
  auto& ctx = at::globalContext();
  const bool f = ctx.userEnabledFlashSDP(), e = ctx.userEnabledMemEfficientSDP(),
             m = ctx.userEnabledMathSDP(), c = ctx.userEnabledCuDNNSDP();
  {
    SdpBackendGuard g(AttnBackend::kSdpaMath);
    EXPECT_TRUE(ctx.userEnabledMathSDP());
    EXPECT_FALSE(ctx.userEnabledFlashSDP());
    EXPECT_FALSE(ctx.userEnabledMemEfficientSDP());
    EXPECT_FALSE(ctx.userEnabledCuDNNSDP());
  }
  EXPECT_EQ(ctx.userEnabledFlashSDP(), f);
  EXPECT_EQ(ctx.userEnabledMemEfficientSDP(), e);
  EXPECT_EQ(ctx.userEnabledMathSDP(), m);
  EXPECT_EQ(ctx.userEnabledCuDNNSDP(), c);
}

// naive, sdpa_math and sdpa_flash (LibTorch's CPU flash kernel) against the float64 reference,
// forward and gradients. float64: rounding only (1e-12). fp32: reassociation across ≤ 47 keys
// and the blocked online softmax of the flash kernel, ~1e-6 relative; 1e-5.
TEST(AttentionCpu, ImplementationsAgree) {
  for (auto dtype : {at::kDouble, at::kFloat}) {
    const double tol = dtype == at::kDouble ? 1e-12 : 1e-5;
    for (bool causal : {true, false}) {
      at::manual_seed(11);
      auto opts = at::TensorOptions().dtype(dtype);
      auto q = at::randn({2, 3, 47, 16}, opts), k = at::randn_like(q), v = at::randn_like(q);
      auto dout = at::randn_like(q);
      auto ref = run(AttnBackend::kNaive, q.to(at::kDouble), k.to(at::kDouble),
                     v.to(at::kDouble), dout.to(at::kDouble), causal);
      EXPECT_LT(max_rel(attention_reference(q, k, v, causal), ref.out), 1e-15);
      for (auto b : {AttnBackend::kNaive, AttnBackend::kSdpaMath, AttnBackend::kSdpaFlash}) {
        const std::string tag = std::string(attn_backend_name(b)) + " " +
                                c10::toString(dtype) + (causal ? " causal" : " noncausal");
        Grads g;
        std::string why = attention_unsupported_reason(
            [&] { g = run(b, q, k, v, dout, causal); });
        ASSERT_EQ(why, "") << tag;
        EXPECT_LT(max_rel(g.out, ref.out), tol) << tag;
        EXPECT_LT(max_rel(g.dq, ref.dq), tol) << tag << " dq";
        EXPECT_LT(max_rel(g.dk, ref.dk), tol) << tag << " dk";
        EXPECT_LT(max_rel(g.dv, ref.dv), tol) << tag << " dv";
      }
    }
  }
}

// Causality: the first query sees only the first key, so its output is v[..., 0, :].
TEST(AttentionCpu, CausalFirstRowIsFirstValue) {
  at::manual_seed(12);
  auto q = at::randn({1, 2, 9, 8}, at::kDouble), k = at::randn_like(q), v = at::randn_like(q);
  auto out = attention_forward(q, k, v, true, AttnBackend::kNaive);
  EXPECT_LT((out.select(2, 0) - v.select(2, 0)).abs().max().item<double>(), 1e-15);
}

// A backend that cannot run a problem reports why instead of aborting.
TEST(AttentionCpu, UnsupportedBackendGivesReason) {
  auto q = at::randn({1, 1, 8, 8}), k = at::randn_like(q), v = at::randn_like(q);
  if (torch::cuda::is_available()) GTEST_SKIP() << "CPU-only check";
  const std::string why = attention_unsupported_reason(
      [&] { attention_forward(q, k, v, true, AttnBackend::kSdpaCudnn); });
  EXPECT_NE(why, "");
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
}

// On a GPU every backend that supports (dtype, d) agrees with fp32 naive attention (TF32 off)
// within the dtype's tolerance; unsupported points give a reason. fp32: 1e-4 (blocking and
// summation order); bf16: outputs 2e-2, gradients 5e-2 (P and the output rounded to 8 bits).
TEST(AttentionGpu, BackendsAgree) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a CUDA GPU";
  Tf32Guard no_tf32(false);
  for (auto dtype : {at::kFloat, at::kBFloat16})
    for (int64_t d : {64, 128})
      for (bool causal : {true, false}) {
        at::manual_seed(13);
        auto opts = at::TensorOptions().device(at::kCUDA).dtype(dtype);
        auto q = at::randn({2, 4, 257, d}, opts), k = at::randn_like(q), v = at::randn_like(q);
        auto dout = at::randn_like(q);
        auto f = [](const at::Tensor& t) { return t.to(at::kFloat); };
        auto ref = run(AttnBackend::kNaive, f(q), f(k), f(v), f(dout), causal);
        const double tol_out = dtype == at::kFloat ? 1e-4 : 2e-2;
        const double tol_grad = dtype == at::kFloat ? 1e-4 : 5e-2;
        int supported = 0;
        for (const auto& name : attn_backend_names()) {
          const AttnBackend b = parse_attn_backend(name);
          const std::string tag = name + " " + c10::toString(dtype) + " d=" + std::to_string(d) +
                                  (causal ? " causal" : " noncausal");
          Grads g;
          const std::string why =
              attention_unsupported_reason([&] { g = run(b, q, k, v, dout, causal); });
          if (!why.empty()) {
            EXPECT_NE(b, AttnBackend::kNaive) << why;
            EXPECT_NE(b, AttnBackend::kSdpaMath) << why;
            std::printf("  %s: unsupported: %s\n", tag.c_str(), why.c_str());
            continue;
          }
          ++supported;
          EXPECT_LT(max_rel(g.out, ref.out), tol_out) << tag;
          EXPECT_LT(max_rel(g.dq, ref.dq), tol_grad) << tag << " dq";
          EXPECT_LT(max_rel(g.dk, ref.dk), tol_grad) << tag << " dk";
          EXPECT_LT(max_rel(g.dv, ref.dv), tol_grad) << tag << " dv";
        }
        // bf16: naive, math, efficient, flash (and cuDNN where available) all run.
        EXPECT_GE(supported, dtype == at::kFloat ? 3 : 4);
      }
}

}  // namespace
}  // namespace gptbench

#pragma once
// Shared by the tests of ops/attention/flash.* (flash_*_test.cpp): the gradient check with its
// floor, what the GPU tests need to run (a CUDA build and a GPU; the Hopper kernels' own
// conditions), SDPA's math backend forced, the reference of a 16-bit problem and the tolerances
// the kernels are held to.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "fixtures/verify.h"
#include "ops/attention/flash.h"
#include "ops/tf32_guard.h"

namespace gptbench {
namespace testing_flash {

// "" when a gradient matches its reference: ‖out − ref‖ / max(‖ref‖, 1e-3·‖dv_ref‖) <= tol
// (NaN never passes). dq and dk vanish at L = 1 — a softmax over one key is constant — and the
// computed values are rounding residue, so a plain relative error is 0/0 there; dv never
// vanishes and sets the scale of the floor.
inline std::string check_grad(const at::Tensor& out, const at::Tensor& ref,
                              const at::Tensor& dv_ref, double tol) {
  const auto o = out.detach().to(at::kCPU, at::kDouble), r = ref.detach().to(at::kCPU, at::kDouble);
  if (o.sizes() != r.sizes()) return "shape mismatch";
  const double den = std::max(r.norm().item<double>(),
                              1e-3 * dv_ref.detach().to(at::kCPU, at::kDouble).norm().item<double>());
  const double err = (o - r).norm().item<double>() / den;
  if (err <= tol) return "";
  return "relative error " + std::to_string(err) + " exceeds " + std::to_string(tol);
}

// Whether the GPU tests can run here; why not in *why.
inline bool gpu_ready(std::string* why) {
  if (!flash_attention_available()) {
    *why = "built without CUDA kernels";
    return false;
  }
  if (!torch::cuda::is_available()) {
    *why = "no CUDA GPU";
    return false;
  }
  return true;
}

// Forces SDPA's math backend for the guard's lifetime (restoring the user's choices after).
class MathSdpOnly {
 public:
  MathSdpOnly()
      : flash_(ctx().userEnabledFlashSDP()), mem_(ctx().userEnabledMemEfficientSDP()),
        math_(ctx().userEnabledMathSDP()), cudnn_(ctx().userEnabledCuDNNSDP()) {
    ctx().setSDPUseFlash(false);
    ctx().setSDPUseMemEfficient(false);
    ctx().setSDPUseCuDNN(false);
    ctx().setSDPUseMath(true);
  }
  ~MathSdpOnly() {
    ctx().setSDPUseFlash(flash_);
    ctx().setSDPUseMemEfficient(mem_);
    ctx().setSDPUseCuDNN(cudnn_);
    ctx().setSDPUseMath(math_);
  }
  MathSdpOnly(const MathSdpOnly&) = delete;
  MathSdpOnly& operator=(const MathSdpOnly&) = delete;

 private:
  static at::Context& ctx() { return at::globalContext(); }
  bool flash_, mem_, math_, cudnn_;
};

struct Reference {
  at::Tensor o, lse, dq, dk, dv;
};

// float64 on the CPU for small L; for larger L, SDPA's math backend in fp32 on the GPU (inputs
// upcast from the same 16-bit values, TF32 off) with its autograd for the gradients, and lse
// from logsumexp of the fp32 scores.
inline Reference reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const at::Tensor& dout, bool causal) {
  Reference r;
  if (q.size(2) <= 256) {
    auto f = flash_attention_reference(q, k, v, causal);
    auto g = flash_attention_backward_reference(q, k, v, dout, causal);
    return {f.o, f.lse, g.dq, g.dk, g.dv};
  }
  Tf32Guard no_tf32(false);
  MathSdpOnly math;
  auto q32 = q.to(at::kFloat).requires_grad_(true), k32 = k.to(at::kFloat).requires_grad_(true);
  auto v32 = v.to(at::kFloat).requires_grad_(true);
  auto o = at::scaled_dot_product_attention(q32, k32, v32, {}, 0.0, causal);
  o.backward(dout.to(at::kFloat));
  {
    const int64_t L = q.size(2);
    auto s = at::matmul(q32.detach(), k32.detach().transpose(-2, -1)) /
             std::sqrt(static_cast<double>(q.size(3)));
    if (causal)
      s = s.masked_fill(at::ones({L, L}, s.options().dtype(at::kBool)).triu(1),
                        -std::numeric_limits<float>::infinity());
    r.lse = at::logsumexp(s, -1);
  }
  r.o = o.detach();
  r.dq = q32.grad();
  r.dk = k32.grad();
  r.dv = v32.grad();
  return r;
}

// Relative Frobenius tolerances for 16-bit inputs (the references see the same 16-bit values,
// so only the kernels' own roundings count):
//  o:  rounded to the storage type once (unit roundoff u = 2^-9 bf16, 2^-11 fp16, ~u/√3 in
//      Frobenius norm) plus P rounded to 16 bits before P·V (u again, averaged over the keys):
//      ~1.5e-3 bf16, ~4e-4 fp16 expected; allowed 1e-2 and 3e-3.
//  dq, dk, dv: P and dS rounded to 16 bits before their products, D from the 16-bit o, and the
//      outputs rounded once: ~2–4e-3 bf16, ~1e-3 fp16 expected; allowed 2e-2 and 5e-3.
// Any indexing, masking or tiling mistake moves whole rows or tiles and gives errors of order
// 1e-1 and above, far outside these.
//  lse (fp32): scores are exact products of 16-bit values summed in fp32, exp2/log approximations
//      ~1e-6 relative: allowed 1e-3 absolute (an error in lse is the relative error of the row's
//      sum of exponentials; one missing 64-key tile of a 4,097-key row moves it by ~1e-2).
inline double tol_o(at::ScalarType t) { return t == at::kBFloat16 ? 1e-2 : 3e-3; }
inline double tol_grad(at::ScalarType t) { return t == at::kBFloat16 ? 2e-2 : 5e-3; }
constexpr double kTolLse = 1e-3;

// o, lse, dq, dk, dv of 16-bit type t against the reference, each failure naming `what`.
inline void expect_matches(const at::Tensor& o, const at::Tensor& lse, const at::Tensor& dq,
                           const at::Tensor& dk, const at::Tensor& dv, const Reference& ref,
                           at::ScalarType t, const std::string& what) {
  EXPECT_EQ(check_close(o, ref.o, tol_o(t)), "") << "o, " << what;
  EXPECT_LT(max_abs_error(lse, ref.lse), kTolLse) << "lse, " << what;
  EXPECT_EQ(check_grad(dq, ref.dq, ref.dv, tol_grad(t)), "") << "dq, " << what;
  EXPECT_EQ(check_grad(dk, ref.dk, ref.dv, tol_grad(t)), "") << "dk, " << what;
  EXPECT_EQ(check_grad(dv, ref.dv, ref.dv, tol_grad(t)), "") << "dv, " << what;
}

// Why the Hopper forward cannot run on this GPU at head dim d, or "" when it can.
inline std::string sm90_skip_reason(int d) {
  const auto x = at::zeros({1, 1, 8, d}, at::TensorOptions().dtype(at::kBFloat16).device(at::kCUDA));
  return flash_sm90_unsupported(x, x, x);
}

}  // namespace testing_flash
}  // namespace gptbench

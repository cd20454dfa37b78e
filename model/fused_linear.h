#pragma once
// Linear layers whose bias runs in the GEMM's epilogue and whose weight gradient the GEMM
// writes in fp32, and GPT-2's MLP whose tanh-GELU runs in the GEMMs' epilogues too
// (ops/linear_lt.h), as autograd functions:
//   linear_fused(x, w, b)        = at::linear(x, w, b)
//   mlp_gelu_fused(x, w_fc, b_fc, w_proj, b_proj)
//                                = at::linear(at::gelu(at::linear(x, w_fc, b_fc), "tanh"), w_proj, b_proj)
// x is (B, T, C) or (N, C); weights (out, in) and biases (out) as torch::nn::Linear holds them.
// The fused path runs when fused_linear_available(x) and every feature size is a multiple of 8;
// otherwise (CPU, fp32/TF32, no CUDA build, other sizes) the functions return the composition on
// the right, so a caller may use them unconditionally. On the fused path the autograd function
// takes the layers' own (master) weights and casts them to bf16 operands with autocast's cast
// (weight cache included); their gradients come out of the weight-gradient GEMM in fp32 — no
// bf16 gradient and no cast back, where autocast's at::linear has both — and the bias
// gradients are fp32 column sums. fp32 biases are added unrounded by the epilogue where
// cuBLASLt takes fp32 bias vectors (lt_fp32_bias_supported).
// Shapes that do not fit together throw std::invalid_argument.
#include <ATen/ATen.h>

namespace gptbench {

// True when x would take the cuBLASLt path: a CUDA build, x a floating CUDA tensor, and bf16
// compute (autocast on for CUDA with dtype bf16, or autocast off and x bf16).
bool fused_linear_available(const at::Tensor& x);

// Where the fused path puts a weight's gradient.
enum class WeightGrad : int64_t {
  kReturn,      // handed to autograd in the weight's dtype: AccumulateGrad adds it to .grad, and
                // gradient hooks on the weight see it
  kAccumulate,  // an fp32 leaf weight's .grad is the GEMM's output (beta 1 when it exists): no
                // separate add; autograd gets no gradient for that weight, so its hooks see an
                // undefined one (the data-parallel steps, whose buckets are hooks, use kReturn)
};

at::Tensor linear_fused(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                        WeightGrad mode = WeightGrad::kReturn);

at::Tensor mlp_gelu_fused(const at::Tensor& x, const at::Tensor& w_fc, const at::Tensor& b_fc,
                          const at::Tensor& w_proj, const at::Tensor& b_proj,
                          WeightGrad mode = WeightGrad::kReturn);

}  // namespace gptbench

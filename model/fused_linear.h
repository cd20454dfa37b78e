#pragma once
// Linear layers whose backward needs no separate bias-gradient reduction, and GPT-2's MLP whose
// tanh-GELU runs in the GEMMs' epilogues (ops/linear_lt.h), as autograd functions:
//   linear_fused_bgrad(x, w, b)  = at::linear(x, w, b)
//   mlp_gelu_fused(x, w_fc, b_fc, w_proj, b_proj)
//                                = at::linear(at::gelu(at::linear(x, w_fc, b_fc), "tanh"), w_proj, b_proj)
// x is (B, T, C) or (N, C); weights (out, in) and biases (out) as torch::nn::Linear holds them.
// The fused path runs when fused_linear_available(x) and every feature size is a multiple of 8;
// otherwise (CPU, fp32/TF32, no CUDA build, other sizes) the functions return the composition on
// the right, so a caller may use them unconditionally. On the fused path the operands are cast
// to bf16 with autocast's cast (weight cache included) before the autograd function, so fp32
// parameters get fp32 gradients through the cast's backward as with autocast's at::linear;
// fp32 biases are kept in fp32 where cuBLASLt takes fp32 bias vectors (lt_fp32_bias_supported):
// the epilogue adds them unrounded and writes their gradient in fp32.
// Shapes that do not fit together throw std::invalid_argument.
#include <ATen/ATen.h>

namespace gptbench {

// True when x would take the cuBLASLt path: a CUDA build, x a floating CUDA tensor, and bf16
// compute (autocast on for CUDA with dtype bf16, or autocast off and x bf16).
bool fused_linear_available(const at::Tensor& x);

at::Tensor linear_fused_bgrad(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b);

at::Tensor mlp_gelu_fused(const at::Tensor& x, const at::Tensor& w_fc, const at::Tensor& b_fc,
                          const at::Tensor& w_proj, const at::Tensor& b_proj);

}  // namespace gptbench

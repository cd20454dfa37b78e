#pragma once
// A Linear layer whose GEMMs run in FP8, as an autograd function:
//   linear_fp8(x, w, b)  = at::linear(x, w, b)
// x is (B, T, C) or (N, C); w (out, in) and b (out) as torch::nn::Linear holds them, the (fp32
// master) weight cast to a bf16 operand with autocast's cast (weight cache included,
// model/linear_operands.h); b may be undefined (the tied LM head).
//   forward   y = x·Wᵀ by the FP8 layer (ops/fp8/linear.h, LinearImpl::kFp8): x and W to e4m3
//             with per-tensor current scaling, one FP8 GEMM with fp32 accumulation, b added
//             in its epilogue (fp32, before y's one rounding to bf16), bf16 out.
//   backward  dy to e5m2 per tensor, dX = dŶ·Ŵ and dW = dŶᵀ·X̂ by the layer (bf16 out), from
//             the transposed FP8 copies the forward kept (X̂ᵀ, Ŵᵀ: one byte an element where
//             autocast's linear keeps the bf16 x); dW handed to autograd in the weight's dtype
//             (fp32 for a master weight), db = Σrows dy in fp32 (ops/column_sum.h), in b's dtype.
// Without a gradient to compute (no-grad mode, or no input requiring one) the forward writes no
// transposed copies and records nothing.
// The FP8 path runs when fp8_linear_available(x, w): bf16 compute on a CUDA GPU with FP8 tensor
// cores (ops/fp8/linear.h's linear_unsupported) and rows, in and out features all multiples of
// 16 (the layer's alignment for a forward and its backward). Otherwise — the CPU, fp32/TF32,
// pre-Hopper GPUs, other sizes — linear_fp8 falls back to bf16: linear_fused
// (model/fused_linear.h, which itself falls back to at::linear), or at::linear without a bias,
// so a caller may use it unconditionally and tiny configurations still run.
// Shapes that do not fit together throw std::invalid_argument.
//
// Scaling: per-tensor current scaling by default (each tensor's amax now). With `scales`, a
// layer's own Fp8LayerScales, delayed scaling: x, W and dy each take their multiplier from the
// largest amax of their last casts and record their amax while they are cast (one pass over the
// tensor instead of two; ops/fp8/quantize_transpose.h Fp8DelayedScale). A layer keeps one
// Fp8LayerScales for its lifetime; the first forward and backward prime them with current amaxes.
#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <string>

#include "ops/fp8/linear.h"
#include "ops/fp8/quantize_transpose.h"

namespace gptbench {

// The FP8 recipe's scaling: "current" (default) or "delayed".
enum class Fp8Scaling { kCurrent, kDelayed };
Fp8Scaling parse_fp8_scaling(const std::string& name);  // throws std::invalid_argument naming both
const char* fp8_scaling_name(Fp8Scaling s);

// One layer's delayed scaling (Fp8LinearScales, ops/fp8/linear.h) as an object the autograd
// context can hold.
struct Fp8LayerScales : torch::CustomClassHolder, Fp8LinearScales {
  using Fp8LinearScales::Fp8LinearScales;
};
using Fp8Scales = c10::intrusive_ptr<Fp8LayerScales>;  // null: current scaling

// Whether linear_fp8(x, w, ·) takes the FP8 path.
bool fp8_linear_available(const at::Tensor& x, const at::Tensor& w);

// Whether the FP8 layer takes a (rows, in) × (out, in)ᵀ GEMM with its backward: all multiples
// of 16 and not empty.
bool fp8_linear_shape_supported(int64_t rows, int64_t in, int64_t out);

at::Tensor linear_fp8(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, const Fp8Scales& scales = {});

// linear_fp8(GELU(u + b_pre), w, b) for the MLP's c_proj (tanh GELU): u is c_fc's output
// *before* its bias b_pre (linear_fp8(x, c_fc.weight, {})), so neither the bias add nor GELU's
// output is written in bf16. On the FP8 path GELU's output is computed and quantized per tensor
// from u and b_pre in two passes (ops/fp8/quantize_transpose.h, quantize_per_tensor_gelu_fp8),
// values equal to the composition's: h = bf16(u + bf16(b_pre)) (b_pre rounded first, as autocast
// rounds a bias), GELU in fp32 rounded to bf16. Its backward takes GELU's derivative at h's input
// and b_pre's gradient in one pass (ops/column_sum.h). Elsewhere the composition itself:
// GELU(u + b_pre in u's dtype), then linear_fp8. b_pre is required; b may be undefined.
// `scales`: c_proj's, as linear_fp8's (its x is GELU's output).
at::Tensor linear_fp8_after_gelu(const at::Tensor& u, const at::Tensor& b_pre, const at::Tensor& w,
                                 const at::Tensor& b, const Fp8Scales& scales = {});

}  // namespace gptbench

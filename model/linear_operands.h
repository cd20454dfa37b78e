#pragma once
// The operands of the Linear layers' autograd functions (model/fused_linear.h,
// model/fp8_linear.h): the checks of their arguments, the bf16 casts of activations and master
// weights (autocast's cast, weight cache included), and (B, T, C) or (N, C) inputs as the 2-D
// rows the GEMMs take. Shapes that do not fit together throw std::invalid_argument naming `fn`.
#include <ATen/ATen.h>

#include <cstdint>

namespace gptbench {

// x is (B, T, C) or (N, C).
void check_linear_input(const char* fn, const at::Tensor& x);

// w (out, in) of a layer taking `in` features, b (out) — or undefined where `bias_optional`.
// `name` names the layer in the message ("the", "c_fc").
void check_linear_layer(const char* fn, const char* name, const at::Tensor& w, const at::Tensor& b,
                        int64_t in, bool bias_optional = false);

// t as a bf16 operand: autocast's cast to bf16 (cached for fp32 leaf weights while autocast's
// cache is on), t itself when it is bf16 already — or not a floating CUDA tensor (autocast's
// CUDA cast; the callers take these paths on CUDA only).
at::Tensor bf16_operand(const at::Tensor& t);

// (B, T, C) or (N, C) as contiguous bf16 rows (N, C).
at::Tensor bf16_rows(const at::Tensor& x);

// y (N, out) in x's leading shape: (B, T, out) or (N, out), a view.
at::Tensor unrows(const at::Tensor& y, const at::Tensor& x);

// The incoming gradient of an output as contiguous bf16 rows (N, out): autograd hands it in
// the output's dtype and shape.
at::Tensor bf16_grad_rows(const at::Tensor& g);

}  // namespace gptbench

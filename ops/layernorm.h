#pragma once
// LayerNorm over the last dimension of GPT-2's fp32 residual stream, fused with the residual add
// before it and the bf16 cast after it (ops/layernorm.cu): what a pre-LN block does as
//   h = x + branch;  y = LayerNorm(h).to(autocast dtype)
// in one pass forward and one backward (which also adds the residual gradient and writes the
// branch's gradient in its dtype). Differentiable in x, branch, gamma and beta.
//
// The fused kernels run for CUDA tensors with fp32 x, gamma and beta, a bf16 or fp32 branch of
// x's shape, and a last dimension the kernels hold in registers (layernorm_kernel_supports:
// multiple of 4, at most 1,664). Anything else — the CPU, other dtypes, other widths — runs the
// LibTorch composition (at::add, at::layer_norm, the cast), which is also the reference.
// y's dtype: bf16 where CUDA autocast is on with bf16 and x is a CUDA tensor (what the next
// autocast Linear would cast it to), else x's dtype.
#include <ATen/ATen.h>

namespace gptbench {

// y = LayerNorm(x)
at::Tensor fused_layernorm(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta,
                           double eps);

// h = x + branch, y = LayerNorm(h)
struct AddLayerNorm {
  at::Tensor h, y;
};
AddLayerNorm fused_add_layernorm(const at::Tensor& x, const at::Tensor& branch,
                                 const at::Tensor& gamma, const at::Tensor& beta, double eps);

// Whether the two functions above run our kernels for these arguments (branch may be undefined).
bool layernorm_uses_kernels(const at::Tensor& x, const at::Tensor& branch, const at::Tensor& gamma);

// The composition the kernels replace, with the same output dtypes (also the CPU path).
AddLayerNorm torch_add_layernorm(const at::Tensor& x, const at::Tensor& branch,
                                 const at::Tensor& gamma, const at::Tensor& beta, double eps);

}  // namespace gptbench

#pragma once
// Σ over the rows of a 2-d matrix in fp32: x (rows, cols) -> (cols), the bias gradient of a
// Linear layer from its output gradient. Our kernels (ops/column_sum_kernels.h: deterministic,
// one read of x) for a contiguous, 16-byte aligned fp32 or bf16 CUDA matrix with cols a
// multiple of 8; LibTorch's x.sum(0) in fp32 otherwise (the CPU, other dtypes and shapes), which
// is also the reference. A tensor that is not 2-d throws std::invalid_argument.
#include <ATen/ATen.h>

#include <utility>

namespace gptbench {

at::Tensor column_sum(const at::Tensor& x);

// Whether column_sum(x) runs our kernels.
bool column_sum_uses_kernel(const at::Tensor& x);

// tanh-GELU's backward and the bias gradient before it, in one pass: {d_pre = dh · gelu_tanh'(x)
// in bf16, Σ over rows of d_pre in fp32}, x = pre, or bf16(pre + bias) when a (cols) bias is
// given (GELU after a bias add that was not written: model/fp8_linear.h). Our kernel for dh, pre
// (and bias) taken by column_sum's kernel in bf16 (same shape); LibTorch's at::gelu_backward and
// sum otherwise.
std::pair<at::Tensor, at::Tensor> gelu_backward_column_sum(const at::Tensor& dh, const at::Tensor& pre,
                                                           const at::Tensor& bias = {});

}  // namespace gptbench

#pragma once
// Softmax over the last dimension, forward and backward, in three forms that the softmax family
// (bench/softmax.cpp) times side by side, and float64 references that tests and verification
// compare them with.
//   naive:  max, subtract, exp, sum, divide as separate LibTorch ops (five kernels); backward
//           as multiply, sum, subtract, multiply.
//   torch:  at::softmax / at::_softmax_backward_data (LibTorch's fused kernels).
//   fused:  our CUDA kernels (ops/softmax.cu): one read and one write per element where the
//           row fits on chip, fp32 accumulation; fp32 and bf16 contiguous CUDA tensors.
#include <ATen/ATen.h>

namespace gptbench {

// x (..., cols) -> y (..., cols).
at::Tensor softmax_naive(const at::Tensor& x);
at::Tensor softmax_torch(const at::Tensor& x);
// Our kernel; x must be a CUDA tensor of fp32 or bf16 (made contiguous if it is not). Throws
// std::runtime_error when built without CUDA kernels or given an unsupported tensor.
at::Tensor softmax_fused(const at::Tensor& x);
// As softmax_fused, into y (contiguous, same shape and dtype as x).
void softmax_fused_out(const at::Tensor& x, at::Tensor& y);

// Given y = softmax(x) and dy = dL/dy, both (..., cols): dx = y * (dy - sum(y * dy, -1)).
at::Tensor softmax_backward_naive(const at::Tensor& y, const at::Tensor& dy);
at::Tensor softmax_backward_torch(const at::Tensor& y, const at::Tensor& dy);
at::Tensor softmax_backward_fused(const at::Tensor& y, const at::Tensor& dy);
void softmax_backward_fused_out(const at::Tensor& y, const at::Tensor& dy, at::Tensor& dx);

// References in float64 on the CPU (returned as CPU float64 tensors), computed from the
// inputs' stored values: max-shifted exponentials over their sum.
at::Tensor softmax_reference(const at::Tensor& x);
at::Tensor softmax_backward_reference(const at::Tensor& y, const at::Tensor& dy);

// True when this build has the fused kernels (GPTBENCH_WITH_CUDA).
bool softmax_fused_available();

}  // namespace gptbench

#pragma once
// Our softmax over the last dimension of a (rows, cols) fp32 or bf16 tensor: the CUDA kernel
// (my_softmax.cu) for CUDA tensors, a loop on the CPU otherwise; fp32 arithmetic, the output in
// x's dtype.
#include <ATen/ATen.h>

// normalise = false leaves out the division by the row's sum: a deliberately wrong variant,
// which the softmax family's check must reject.
at::Tensor my_softmax(const at::Tensor& x, bool normalise = true);

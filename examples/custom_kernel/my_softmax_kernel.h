#pragma once
// The CUDA kernel behind my_softmax (my_softmax.cu), on raw pointers: no LibTorch header, so
// nvcc stays fast.
#include <cuda_runtime.h>

#include <cstdint>

// y = softmax(x) of contiguous (rows, cols) device arrays of fp32, or bf16 when `bf16`, on
// `stream`; normalise = false leaves out the division by the row's sum.
void my_softmax_launch(const void* x, void* y, int64_t rows, int64_t cols, bool bf16,
                       bool normalise, cudaStream_t stream);

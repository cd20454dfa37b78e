#pragma once
// Launcher of the column-sum kernels (ops/column_sum.cu). Torch-free: raw device pointers.
// Included by the .cu file and, under GPTBENCH_WITH_CUDA, by ops/column_sum.cpp.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/device/elem_type.h"

namespace gptbench {

// out[c] = Σ_r x[r, c] in fp32, for a row-major (rows, cols) matrix x of fp32 or bf16 (another
// dtype throws std::invalid_argument). cols must be a multiple of 8 and x 16-byte aligned.
// Each block sums a (rows / parts) × 256 tile into one partial row of `partial` (parts × cols
// floats, column_sum_parts() rows); a second kernel adds the partials in order: no atomics, so
// the sums are deterministic. Throws gptbench::CudaError on a CUDA failure.
int64_t column_sum_parts(int64_t rows, int64_t cols);
void launch_column_sum(const void* x, ElemType dtype, int64_t rows, int64_t cols, float* partial,
                       float* out, cudaStream_t stream);

// tanh-GELU's backward and its column sums in one pass over bf16 (rows, cols) matrices:
// d_pre = bf16(dh · gelu_tanh'(x)), out[c] = Σ_r d_pre[r, c] (of the bf16 values written), with
// `partial` and the rules of launch_column_sum (all 16-byte aligned); x is pre, or bf16(pre +
// bias) with a (cols) bf16 bias (null: none).
void launch_gelu_backward_column_sum(const void* dh, const void* pre, const void* bias, void* d_pre,
                                     int64_t rows, int64_t cols, float* partial, float* out,
                                     cudaStream_t stream);

}  // namespace gptbench

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

}  // namespace gptbench

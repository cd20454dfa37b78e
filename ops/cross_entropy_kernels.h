#pragma once
// Launchers of the fused cross-entropy kernels (ops/cross_entropy.cu). Torch-free: raw device
// pointers. Logits are (rows, ld) row-major with the classes in columns [0, classes); columns
// [classes, ld) are padding (a vocabulary padded for the LM-head GEMM) and are ignored by the
// loss and get a zero gradient. Included by the .cu file and, under GPTBENCH_WITH_CUDA, by
// ops/cross_entropy.cpp.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/device/elem_type.h"

namespace gptbench {

// Per row r: lse[r] = log(sum_j exp(x[r, j])) over j < classes, and
//   loss[r] = lse[r] - x[r, t]   for t = targets[r] in [0, classes),
//   loss[r] = 0                  for t == ignore_index,
//   loss[r] = NaN                for any other t (out of range: a visible wrong answer, as a
//                                device-side check would need a host synchronisation).
// One read of the logits (fp32, bf16 or fp16: another dtype throws std::invalid_argument); fp32
// arithmetic. Throws gptbench::CudaError on a CUDA failure.
void launch_cross_entropy_forward(const void* logits, int64_t ld, const int64_t* targets,
                                  float* loss, float* lse, int64_t rows, int64_t classes,
                                  int64_t ignore_index, ElemType dtype, cudaStream_t stream);

// grad[r, j] = (exp(x[r, j] - lse[r]) - [j == t]) · scale[0] for j < classes (0 on a row whose
// target is ignore_index), grad[r, j] = 0 for classes <= j < ld. grad is (rows, ld), contiguous,
// in the logits' dtype; `scale` is a device scalar (upstream gradient / number of counted rows),
// so the launch needs no host synchronisation and can be captured in a CUDA graph.
void launch_cross_entropy_backward(const void* logits, int64_t ld, const int64_t* targets,
                                   const float* lse, const float* scale, void* grad,
                                   int64_t rows, int64_t classes, int64_t ignore_index,
                                   ElemType dtype, cudaStream_t stream);

}  // namespace gptbench

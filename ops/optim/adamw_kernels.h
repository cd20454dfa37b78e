#pragma once
// Fused AdamW step over many fp32 tensors in one launch (torch-free; see adamw.h).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/optim/multi_tensor.h"

namespace gptbench {
namespace optim {

struct AdamWTensor {
  float* p;        // (n) parameter
  const void* g;   // (n) gradient, fp32 or bf16 (the launch's grad_type)
  float* m;        // (n) first moment
  float* v;        // (n) second moment
  int64_t n;
  int32_t vec;     // 1: every pointer 16-byte aligned (8 for bf16 gradients): vector path
  int32_t pad;
};

// tensors, chunks: device arrays. The element update (as torch::optim::AdamW):
//   p ← p·decay;  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²;
//   p ← p − step_size · m / (sqrt(v)·inv_sqrt_bc2 + eps)
void adamw_step_cuda(const AdamWTensor* tensors, const ChunkRef* chunks, int64_t num_chunks,
                     ElemType grad_type, const AdamScalars& s, cudaStream_t stream);

}  // namespace optim
}  // namespace gptbench

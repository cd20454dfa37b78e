#pragma once
// Fused Lion step over many fp32 tensors in one launch (torch-free; see lion.h).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/optim/multi_tensor.h"

namespace gptbench {
namespace optim {

struct LionTensor {
  float* p;       // (n) parameter
  const void* g;  // (n) gradient, fp32 or bf16
  float* m;       // (n) momentum
  int64_t n;
  int32_t vec;    // 1: vector path (pointers aligned)
  int32_t pad;
};

struct LionScalars {
  float beta1, one_minus_beta1;  // interpolation for the update direction
  float beta2, one_minus_beta2;  // momentum decay
  float decay;                   // 1 − lr·weight_decay
  float lr;
};

//   c ← β1·m + (1−β1)·g;  p ← p·decay − lr·sign(c);  m ← β2·m + (1−β2)·g
void lion_step_cuda(const LionTensor* tensors, const ChunkRef* chunks, int64_t num_chunks,
                    ElemType grad_type, const LionScalars& s, cudaStream_t stream);

}  // namespace optim
}  // namespace gptbench

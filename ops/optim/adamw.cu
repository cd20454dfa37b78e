// Fused AdamW: one launch over the chunk table of all tensors. A block takes one chunk at a
// time (grid-stride over chunks); its threads walk the chunk in float4 steps (16-byte loads of
// p, g, m, v and stores of p, m, v — 28 B/param for fp32 gradients), with a scalar loop for
// the tail of a tensor whose size is not a multiple of 4 or for tensors that are not aligned.
// Math in fp32, in the order torch::optim::AdamW uses.
#include "ops/optim/adamw_kernels.h"
#include "ops/optim/optim_device.cuh"

namespace gptbench {
namespace optim {
namespace {

__device__ __forceinline__ void adamw_elem(float& p, float g, float& m, float& v,
                                           const AdamScalars& s) {
  p *= s.decay;
  m = s.beta1 * m + s.one_minus_beta1 * g;
  v = s.beta2 * v + s.one_minus_beta2 * (g * g);
  const float denom = sqrtf(v) * s.inv_sqrt_bc2 + s.eps;
  p -= s.step_size * (m / denom);
}

// AdamW on the elements [begin, begin + len) of a tensor (chunk_kernel).
struct AdamWRule {
  template <typename G>
  static __device__ __forceinline__ void update(const AdamWTensor& t, int64_t begin, int64_t len,
                                                const AdamScalars& s) {
    update_chunk(t.p + begin, static_cast<const G*>(t.g) + begin, len, t.vec,
                 [&](float& p, float g, float& m, float& v) { adamw_elem(p, g, m, v, s); }, t.m + begin,
                 t.v + begin);
  }
};

}  // namespace

void adamw_step_cuda(const AdamWTensor* tensors, const ChunkRef* chunks, int64_t num_chunks,
                     ElemType grad_type, const AdamScalars& s, cudaStream_t stream) {
  launch_chunk_kernel<AdamWRule>(tensors, chunks, num_chunks, grad_type, s, stream);
}

}  // namespace optim
}  // namespace gptbench

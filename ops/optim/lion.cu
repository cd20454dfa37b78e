// Fused Lion: one launch over the chunk table of all tensors, float4 loads of p, g, m and
// stores of p, m (20 B/param with fp32 gradients), scalar tail; fp32 math.
#include "ops/optim/lion_kernels.h"
#include "ops/optim/optim_device.cuh"

namespace gptbench {
namespace optim {
namespace {

__device__ __forceinline__ float sign_of(float x) {
  return x > 0.f ? 1.f : (x < 0.f ? -1.f : 0.f);  // torch.sign: sign(0) = 0
}

__device__ __forceinline__ void lion_elem(float& p, float g, float& m, const LionScalars& s) {
  // Rounded products and sum, no FMA: the sign of c must match the reference bit for bit.
  const float c = __fadd_rn(__fmul_rn(s.beta1, m), __fmul_rn(s.one_minus_beta1, g));
  p = p * s.decay - s.lr * sign_of(c);
  // fma((1−β2), g, β2·m): the rounding of the reference's m.mul_(β2).add_(g, 1−β2) on CUDA,
  // so later signs of c agree with the reference as well.
  m = fmaf(s.one_minus_beta2, g, __fmul_rn(s.beta2, m));
}

// Lion on the elements [begin, begin + len) of a tensor (chunk_kernel).
struct LionRule {
  template <typename G>
  static __device__ __forceinline__ void update(const LionTensor& t, int64_t begin, int64_t len,
                                                const LionScalars& s) {
    update_chunk(t.p + begin, static_cast<const G*>(t.g) + begin, len, t.vec,
                 [&](float& p, float g, float& m) { lion_elem(p, g, m, s); }, t.m + begin);
  }
};

}  // namespace

void lion_step_cuda(const LionTensor* tensors, const ChunkRef* chunks, int64_t num_chunks,
                    ElemType grad_type, const LionScalars& s, cudaStream_t stream) {
  launch_chunk_kernel<LionRule>(tensors, chunks, num_chunks, grad_type, s, stream);
}

}  // namespace optim
}  // namespace gptbench

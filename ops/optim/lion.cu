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

template <typename G>
__global__ void __launch_bounds__(kThreads)
    lion_kernel(const LionTensor* __restrict__ tensors, const ChunkRef* __restrict__ chunks,
                int64_t num_chunks, LionScalars s) {
  for (int64_t c = blockIdx.x; c < num_chunks; c += gridDim.x) {
    const ChunkRef ref = chunks[c];
    const LionTensor t = tensors[ref.tensor];
    const int64_t begin = static_cast<int64_t>(ref.chunk) * kChunkElems;
    const int64_t len = min(kChunkElems, t.n - begin);
    float* __restrict__ p = t.p + begin;
    const G* __restrict__ g = static_cast<const G*>(t.g) + begin;
    float* __restrict__ m = t.m + begin;
    int64_t done = 0;
    if (t.vec) {
      const int64_t nv = len / 4;
      for (int64_t i = threadIdx.x; i < nv; i += kThreads) {
        float4 pp = load4(p + 4 * i), mm = load4(m + 4 * i);
        float4 gg = load_grad4(g + 4 * i);
#pragma unroll
        for (int k = 0; k < 4; ++k) lion_elem(lane(pp, k), lane(gg, k), lane(mm, k), s);
        store4(p + 4 * i, pp);
        store4(m + 4 * i, mm);
      }
      done = nv * 4;
    }
    for (int64_t i = done + threadIdx.x; i < len; i += kThreads) {
      float pp = p[i], mm = m[i];
      lion_elem(pp, load_grad(g + i), mm, s);
      p[i] = pp;
      m[i] = mm;
    }
  }
}

template <typename G>
void launch(const LionTensor* tensors, const ChunkRef* chunks, int64_t num_chunks,
            const LionScalars& s, cudaStream_t stream) {
  const int grid = grid_for(lion_kernel<G>, num_chunks);
  lion_kernel<G><<<grid, kThreads, 0, stream>>>(tensors, chunks, num_chunks, s);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void lion_step_cuda(const LionTensor* tensors, const ChunkRef* chunks, int64_t num_chunks,
                    GradType grad_type, const LionScalars& s, cudaStream_t stream) {
  if (num_chunks == 0) return;
  if (grad_type == GradType::kBF16)
    launch<__nv_bfloat16>(tensors, chunks, num_chunks, s, stream);
  else
    launch<float>(tensors, chunks, num_chunks, s, stream);
}

}  // namespace optim
}  // namespace gptbench

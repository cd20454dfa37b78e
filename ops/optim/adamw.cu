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

template <typename G>
__global__ void __launch_bounds__(kThreads)
    adamw_kernel(const AdamWTensor* __restrict__ tensors, const ChunkRef* __restrict__ chunks,
                 int64_t num_chunks, AdamScalars s) {
  for (int64_t c = blockIdx.x; c < num_chunks; c += gridDim.x) {
    const ChunkRef ref = chunks[c];
    const AdamWTensor t = tensors[ref.tensor];
    const int64_t begin = static_cast<int64_t>(ref.chunk) * kChunkElems;
    const int64_t len = min(kChunkElems, t.n - begin);
    float* __restrict__ p = t.p + begin;
    const G* __restrict__ g = static_cast<const G*>(t.g) + begin;
    float* __restrict__ m = t.m + begin;
    float* __restrict__ v = t.v + begin;
    int64_t done = 0;
    if (t.vec) {
      const int64_t nv = len / 4;
      for (int64_t i = threadIdx.x; i < nv; i += kThreads) {
        float4 pp = load4(p + 4 * i), mm = load4(m + 4 * i), vv = load4(v + 4 * i);
        float4 gg = load_grad4(g + 4 * i);
#pragma unroll
        for (int k = 0; k < 4; ++k) adamw_elem(lane(pp, k), lane(gg, k), lane(mm, k), lane(vv, k), s);
        store4(p + 4 * i, pp);
        store4(m + 4 * i, mm);
        store4(v + 4 * i, vv);
      }
      done = nv * 4;
    }
    for (int64_t i = done + threadIdx.x; i < len; i += kThreads) {
      float pp = p[i], mm = m[i], vv = v[i];
      adamw_elem(pp, load_grad(g + i), mm, vv, s);
      p[i] = pp;
      m[i] = mm;
      v[i] = vv;
    }
  }
}

template <typename G>
void launch(const AdamWTensor* tensors, const ChunkRef* chunks, int64_t num_chunks,
            const AdamScalars& s, cudaStream_t stream) {
  const int grid = grid_for(adamw_kernel<G>, num_chunks);
  adamw_kernel<G><<<grid, kThreads, 0, stream>>>(tensors, chunks, num_chunks, s);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void adamw_step_cuda(const AdamWTensor* tensors, const ChunkRef* chunks, int64_t num_chunks,
                     GradType grad_type, const AdamScalars& s, cudaStream_t stream) {
  if (num_chunks == 0) return;
  if (grad_type == GradType::kBF16)
    launch<__nv_bfloat16>(tensors, chunks, num_chunks, s, stream);
  else
    launch<float>(tensors, chunks, num_chunks, s, stream);
}

}  // namespace optim
}  // namespace gptbench

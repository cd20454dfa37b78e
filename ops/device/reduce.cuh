#pragma once
// Warp and block reductions shared by our kernels (softmax, LayerNorm, the optimizers, the FP8
// quantizers). CUDA only.
#include <cuda_runtime.h>

namespace gptbench {

constexpr int kWarpSize = 32;

// Butterflies over groups of LANES lanes (a power of two <= 32): lanes l and l ^ off, off < LANES,
// are in the same group, so each group of the warp reduces its own values and every lane of the
// group ends with the group's result. The whole warp must call them (full mask).
template <int LANES = kWarpSize>
__device__ __forceinline__ float warp_sum(float v) {
  static_assert(LANES > 0 && LANES <= kWarpSize && (LANES & (LANES - 1)) == 0, "LANES: a power of two <= 32");
#pragma unroll
  for (int off = LANES / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

template <int LANES = kWarpSize>
__device__ __forceinline__ float warp_max(float v) {
  static_assert(LANES > 0 && LANES <= kWarpSize && (LANES & (LANES - 1)) == 0, "LANES: a power of two <= 32");
#pragma unroll
  for (int off = LANES / 2; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

// The maximum of v over the THREADS threads of the block (a multiple of 32), returned to every
// thread. The whole block must call it; it may be called again (the scratch is released).
template <int THREADS>
__device__ __forceinline__ float block_max(float v) {
  static_assert(THREADS % kWarpSize == 0, "THREADS: whole warps");
  __shared__ float warp_max_of[THREADS / kWarpSize];
  v = warp_max(v);
  if (threadIdx.x % kWarpSize == 0) warp_max_of[threadIdx.x / kWarpSize] = v;
  __syncthreads();
  float m = warp_max_of[0];
#pragma unroll
  for (int i = 1; i < THREADS / kWarpSize; ++i) m = fmaxf(m, warp_max_of[i]);
  __syncthreads();  // the scratch may be reused by a later call
  return m;
}

}  // namespace gptbench

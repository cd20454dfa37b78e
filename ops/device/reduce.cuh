#pragma once
// Warp reductions shared by our kernels (softmax, LayerNorm, the optimizers). CUDA only.
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

}  // namespace gptbench

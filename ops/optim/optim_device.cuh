#pragma once
// Device helpers shared by the optimizer kernels: vector loads of fp32 or bf16 gradients,
// warp and block reductions, grid sizing. Included by .cu files only.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include "ops/cuda_check.h"
#include "ops/device/reduce.cuh"

namespace gptbench {
namespace optim {

constexpr int kThreads = 256;  // threads per block of every optimizer kernel
constexpr int kWarps = kThreads / 32;

// Loads and stores of tensor data: the pointers are global memory (cudaMalloc'd tensors), which
// the compiler cannot know of a pointer read from a launch table; telling it turns generic
// loads and stores (LD/ST) into global ones (LDG/STG).
__device__ __forceinline__ float4 load4(const float* p) {
  __builtin_assume(__isGlobal(p));
  return *reinterpret_cast<const float4*>(p);
}
__device__ __forceinline__ void store4(float* p, float4 v) {
  __builtin_assume(__isGlobal(p));
  *reinterpret_cast<float4*>(p) = v;
}
// Four gradients as fp32 (16-byte load for fp32, 8-byte load for bf16).
__device__ __forceinline__ float4 load_grad4(const float* g) { return load4(g); }
__device__ __forceinline__ float4 load_grad4(const __nv_bfloat16* g) {
  __builtin_assume(__isGlobal(g));
  const uint2 raw = *reinterpret_cast<const uint2*>(g);
  const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.x));
  const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.y));
  return make_float4(a.x, a.y, b.x, b.y);
}
__device__ __forceinline__ float load_grad(const float* g) { return *g; }
__device__ __forceinline__ float load_grad(const __nv_bfloat16* g) { return __bfloat162float(*g); }

__device__ __forceinline__ float& lane(float4& v, int k) {
  return reinterpret_cast<float*>(&v)[k];  // k is a compile-time constant in unrolled loops
}

// Sum over the block (kThreads threads); the result is valid in thread 0. `scratch` holds
// kWarps floats; the call synchronises the block (call it from every thread).
__device__ __forceinline__ float block_sum(float x, float* scratch) {
  x = warp_sum(x);
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  __syncthreads();  // scratch may still be read by a previous call
  if (l == 0) scratch[w] = x;
  __syncthreads();
  float total = 0;
  if (threadIdx.x == 0)
    for (int i = 0; i < kWarps; ++i) total += scratch[i];
  return total;
}

// Blocks for a grid-stride launch of `kernel` (`threads` per block, `smem` bytes of dynamic
// shared memory) over `work` items: enough to fill every SM at the kernel's occupancy, never more
// than the work. The SM count and occupancy are queried once per (kernel, device), so a step does
// not pay for them; that first call also allows the kernel more than the default 48 KB of
// dynamic shared memory when it asks for it (a per-device function attribute).
template <typename Kernel>
int grid_for(Kernel kernel, int64_t work, size_t smem = 0, int threads = kThreads) {
  static std::mutex mu;
  static std::map<std::pair<const void*, int>, int> cache;  // (kernel, device) -> full grid
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  const auto key = std::make_pair(reinterpret_cast<const void*>(kernel), dev);
  int full = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) full = it->second;
  }
  if (full == 0) {
    int sms = 0, per_sm = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    if (smem > 48 * 1024)
      CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(smem)));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
    full = sms * (per_sm > 0 ? per_sm : 1);
    std::lock_guard<std::mutex> lock(mu);
    cache[key] = full;
  }
  return static_cast<int>(work < full ? (work > 0 ? work : 1) : full);
}

}  // namespace optim
}  // namespace gptbench

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
#include "ops/device/convert.cuh"
#include "ops/device/reduce.cuh"
#include "ops/optim/multi_tensor.h"

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

// Pieces of update_chunk: lane k of every float4, and the states written back.
template <typename Elem, size_t... I>
__device__ __forceinline__ void apply_lane(Elem& elem, float4& p, const float4& g, float4 (&s)[sizeof...(I)],
                                           int k, std::index_sequence<I...>) {
  elem(lane(p, k), reinterpret_cast<const float*>(&g)[k], lane(s[I], k)...);
}
template <typename Elem, size_t... I>
__device__ __forceinline__ void apply_scalar(Elem& elem, float& p, float g, float (&s)[sizeof...(I)],
                                             std::index_sequence<I...>) {
  elem(p, g, s[I]...);
}
template <size_t... I, typename... State>
__device__ __forceinline__ void store_states(const float4 (&s)[sizeof...(I)], int64_t i, std::index_sequence<I...>,
                                             State*... state) {
  (store4(state + 4 * i, s[I]), ...);
}
template <size_t... I, typename... State>
__device__ __forceinline__ void store_scalars(const float (&s)[sizeof...(I)], int64_t i, std::index_sequence<I...>,
                                              State*... state) {
  ((state[i] = s[I]), ...);
}

// ---- the chunk walk of the elementwise optimizers (AdamW, Lion) ---------------------------------

// Calls body(tensor, begin, len) for every chunk of the launch table this block takes (grid
// stride over chunks): elements [begin, begin + len) of `tensor`, len <= kChunkElems.
template <typename Tensor, typename Body>
__device__ __forceinline__ void for_each_chunk(const Tensor* __restrict__ tensors,
                                               const ChunkRef* __restrict__ chunks, int64_t num_chunks,
                                               Body body) {
  for (int64_t c = blockIdx.x; c < num_chunks; c += gridDim.x) {
    const ChunkRef ref = chunks[c];
    const Tensor t = tensors[ref.tensor];
    const int64_t begin = static_cast<int64_t>(ref.chunk) * kChunkElems;
    body(t, begin, min(kChunkElems, t.n - begin));
  }
}

// elem(p, g, state...) on every element of a chunk of `len` elements (fp32 parameter p, gradient
// g of type G, fp32 state arrays): float4 steps (16-byte loads and stores) where `vec`, then a
// scalar loop for the rest; the block's threads share the work.
template <typename G, typename Elem, typename... State>
__device__ __forceinline__ void update_chunk(float* __restrict__ p, const G* __restrict__ g, int64_t len,
                                             bool vec, Elem elem, State* __restrict__... state) {
  int64_t done = 0;
  if (vec) {
    const int64_t nv = len / 4;
    for (int64_t i = threadIdx.x; i < nv; i += kThreads) {
      float4 pp = load4(p + 4 * i);
      float4 ss[] = {load4(state + 4 * i)...};
      const float4 gg = load_grad4(g + 4 * i);
#pragma unroll
      for (int k = 0; k < 4; ++k) apply_lane(elem, pp, gg, ss, k, std::index_sequence_for<State...>{});
      store4(p + 4 * i, pp);
      store_states(ss, i, std::index_sequence_for<State...>{}, state...);
    }
    done = nv * 4;
  }
  for (int64_t i = done + threadIdx.x; i < len; i += kThreads) {
    float pp = p[i];
    float ss[] = {state[i]...};
    apply_scalar(elem, pp, load_grad(g + i), ss, std::index_sequence_for<State...>{});
    p[i] = pp;
    store_scalars(ss, i, std::index_sequence_for<State...>{}, state...);
  }
}

// The kernel of an elementwise optimizer (AdamW, Lion): Rule::update<G>(tensor, begin, len, s)
// on every chunk the block takes, G the gradients' element type.
template <typename Rule, typename G, typename Tensor, typename Scalars>
__global__ void __launch_bounds__(kThreads)
    chunk_kernel(const Tensor* __restrict__ tensors, const ChunkRef* __restrict__ chunks,
                 int64_t num_chunks, Scalars s) {
  for_each_chunk(tensors, chunks, num_chunks, [&](const Tensor& t, int64_t begin, int64_t len) {
    Rule::template update<G>(t, begin, len, s);
  });
}

// Calls f(G()) with G the gradient element type of a launch: float or __nv_bfloat16.
template <typename F>
void with_grad_type(ElemType grad_type, F&& f) {
  with_elem_type<float, __nv_bfloat16>(grad_type, "optimizer", f);
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

// Launches `kernel(args...)` over a grid-stride grid for `work` items, kThreads per block, no
// dynamic shared memory, on `stream`, and checks the launch.
template <typename... Params, typename... Args>
void launch_grid_stride(void (*kernel)(Params...), int64_t work, cudaStream_t stream, Args... args) {
  kernel<<<grid_for(kernel, work), kThreads, 0, stream>>>(args...);
  CUDA_CHECK_LAUNCH();
}

// The step of an elementwise optimizer: chunk_kernel<Rule> for the gradients' type over the
// chunk table (nothing when it is empty).
template <typename Rule, typename Tensor, typename Scalars>
void launch_chunk_kernel(const Tensor* tensors, const ChunkRef* chunks, int64_t num_chunks,
                         ElemType grad_type, const Scalars& s, cudaStream_t stream) {
  if (num_chunks == 0) return;
  with_grad_type(grad_type, [&](auto g) {
    launch_grid_stride(chunk_kernel<Rule, decltype(g), Tensor, Scalars>, num_chunks, stream,
                       tensors, chunks, num_chunks, s);
  });
}

}  // namespace optim
}  // namespace gptbench

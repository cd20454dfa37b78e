// y = softmax(x) over rows of a (rows, cols) fp32 or bf16 array: one block per row, the row's
// max and sum reduced in fp32 through warp shuffles and shared memory, three passes over the row
// (max, sum, write). Simple rather than fast: the suite's fused kernel is the one to beat.
#include <cuda_bf16.h>

#include <cmath>

#include "my_softmax_kernel.h"
#include "ops/cuda_check.h"

namespace {

constexpr int kThreads = 256;

__device__ float to_float(float v) { return v; }
__device__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T>
__device__ T from_float(float v);
template <>
__device__ float from_float<float>(float v) { return v; }
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

// The block's max (is_max) or sum of v; every thread gets it.
__device__ float block_reduce(float v, bool is_max, float* shared) {
  auto warp = [is_max](float x) {
    for (int offset = 16; offset > 0; offset /= 2) {
      const float y = __shfl_xor_sync(0xffffffffu, x, offset);
      x = is_max ? fmaxf(x, y) : x + y;
    }
    return x;
  };
  const int lane = threadIdx.x % 32, id = threadIdx.x / 32;
  v = warp(v);
  if (lane == 0) shared[id] = v;
  __syncthreads();
  if (id == 0) {
    v = lane < kThreads / 32 ? shared[lane] : (is_max ? -INFINITY : 0.0f);
    v = warp(v);
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  v = shared[0];
  __syncthreads();  // shared is reused by the next reduction
  return v;
}

template <class T>
__global__ void __launch_bounds__(kThreads) softmax_rows(const T* x, T* y, int64_t cols,
                                                         bool normalise) {
  __shared__ float shared[kThreads / 32];
  const T* in = x + blockIdx.x * cols;
  T* out = y + blockIdx.x * cols;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) m = fmaxf(m, to_float(in[c]));
  m = block_reduce(m, true, shared);
  float sum = 0;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) sum += expf(to_float(in[c]) - m);
  sum = block_reduce(sum, false, shared);
  const float scale = normalise ? 1.0f / sum : 1.0f;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads)
    out[c] = from_float<T>(expf(to_float(in[c]) - m) * scale);
}

}  // namespace

void my_softmax_launch(const void* x, void* y, int64_t rows, int64_t cols, bool bf16,
                       bool normalise, cudaStream_t stream) {
  if (rows == 0) return;
  if (bf16)
    softmax_rows<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        static_cast<const __nv_bfloat16*>(x), static_cast<__nv_bfloat16*>(y), cols, normalise);
  else
    softmax_rows<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        static_cast<const float*>(x), static_cast<float*>(y), cols, normalise);
  CUDA_CHECK_LAUNCH();
}

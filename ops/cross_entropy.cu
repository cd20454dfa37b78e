// Fused cross-entropy over rows of logits (the LM head's (B·T, V) output), forward and backward.
// Memory-bound: the forward reads each logit once (online max and sum of exponentials, then
// loss = logsumexp - x[target]); the backward reads each logit once more and writes the
// gradient once ((softmax - one_hot) · scale), straight in the logits' dtype. Against LibTorch's
// path for bf16 logits (an fp32 copy of the logits, log_softmax forward and backward over it,
// and the copies back), that is 3 passes over the logits instead of about 10, and no fp32 copy
// in memory. One block per row; 16-byte loads when the row stride allows (4 fp32 / 8 bf16 or
// fp16), element loads otherwise; fp32 arithmetic in base 2 (exp2 of x·log2 e).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "ops/cross_entropy_kernels.h"
#include "ops/cuda_check.h"
#include "ops/device/convert.cuh"
#include "ops/device/pack.cuh"

namespace gptbench {
namespace {

constexpr int kThreads = 512;
constexpr int kUnroll = 4;  // 16-byte loads in flight per thread before any arithmetic
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// Running (max m, sum s of 2^(v - m)) over values v already in base 2, taken a pack at a time:
// the pack's maximum first (one rescale of s at most), then one exp2 per value and no branch
// per value. (Value by value, with a branch on each new maximum, the forward ran at 2.2 ms for
// 32,768 × 50,304 bf16 logits on an H200, 37% of copy bandwidth.) A -inf value adds nothing
// (and -inf - -inf would be NaN); a NaN makes the sum NaN, as in log_softmax; so does +inf
// (inf - inf), where log_softmax gives NaN too.
struct MaxSum {
  float m = -INFINITY, s = 0.f;
  template <int N>
  __device__ __forceinline__ void push(const float (&v)[N]) {
    float pm = v[0];
#pragma unroll
    for (int e = 1; e < N; ++e) pm = fmaxf(pm, v[e]);  // fmaxf skips NaN
    if (pm > m) {  // pm finite or +inf here, so m - pm is never NaN; a NaN sum stays NaN
      s *= exp2f(m - pm);
      m = pm;
    }
    if (m == -INFINITY) {  // every value so far -inf (or NaN)
#pragma unroll
      for (int e = 0; e < N; ++e)
        if (v[e] != v[e]) s = NAN;
      return;
    }
#pragma unroll
    for (int e = 0; e < N; ++e) s += exp2f(v[e] - m);
  }
  __device__ __forceinline__ void merge(float om, float os) {
    const float nm = fmaxf(m, om);
    if (nm == -INFINITY) {  // both saw only -inf (sums 0) or NaN
      s += os;
      return;
    }
    s = s * exp2f(m - nm) + os * exp2f(om - nm);
    m = nm;
  }
};

// Merges every thread's (m, s) of the block; the result is valid in thread 0.
__device__ __forceinline__ MaxSum block_merge(MaxSum a) {
  __shared__ float sm[32], ss[32];
  for (int off = 16; off > 0; off >>= 1)
    a.merge(__shfl_xor_sync(0xffffffffu, a.m, off), __shfl_xor_sync(0xffffffffu, a.s, off));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    sm[warp] = a.m;
    ss[warp] = a.s;
  }
  __syncthreads();
  if (warp == 0) {
    const int warps = blockDim.x / 32;
    MaxSum b;
    if (lane < warps) {
      b.m = sm[lane];
      b.s = ss[lane];
    }
    for (int off = 16; off > 0; off >>= 1)
      b.merge(__shfl_xor_sync(0xffffffffu, b.m, off), __shfl_xor_sync(0xffffffffu, b.s, off));
    a = b;
  }
  return a;
}

template <typename T, int VEC>
__global__ void __launch_bounds__(kThreads)
    ce_forward_kernel(const T* __restrict__ x, int64_t ld, const int64_t* __restrict__ targets,
                      float* __restrict__ loss, float* __restrict__ lse, int64_t classes,
                      int64_t ignore_index) {
  const int64_t r = blockIdx.x;
  const T* row = x + r * ld;
  const int64_t packs = (classes + VEC - 1) / VEC;  // the last may run into the padding
  MaxSum acc;
  for (int64_t p0 = threadIdx.x; p0 < packs; p0 += kUnroll * kThreads) {
    Pack<T, VEC> v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t p = p0 + u * kThreads;
      if (p < packs) v[u] = load_pack<T, VEC>(row + p * VEC);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t p = p0 + u * kThreads;
      if (p >= packs) continue;
      float f[VEC];
#pragma unroll
      for (int e = 0; e < VEC; ++e)
        f[e] = p * VEC + e < classes ? to_float(v[u].v[e]) * kLog2e : -INFINITY;
      acc.push(f);
    }
  }
  acc = block_merge(acc);
  if (threadIdx.x == 0) {
    const float l = (acc.m + log2f(acc.s)) * kLn2;  // natural-log logsumexp
    const int64_t t = targets[r];
    float out;
    if (t == ignore_index) out = 0.f;
    else if (t < 0 || t >= classes) out = NAN;
    else out = l - to_float(row[t]);
    loss[r] = out;
    lse[r] = l;
  }
}

template <typename T, int VEC>
__global__ void __launch_bounds__(kThreads)
    ce_backward_kernel(const T* __restrict__ x, int64_t ld, const int64_t* __restrict__ targets,
                       const float* __restrict__ lse, const float* __restrict__ scale,
                       T* __restrict__ grad, int64_t classes, int64_t ignore_index) {
  const int64_t r = blockIdx.x;
  const T* row = x + r * ld;
  T* grow = grad + r * ld;
  const int64_t t = targets[r];
  const bool ignored = t == ignore_index;
  const float sc = ignored ? 0.f : *scale;
  const float l2 = lse[r] * kLog2e;
  const int64_t packs = ld / VEC;  // VEC divides ld (the launcher checks)
  for (int64_t p0 = threadIdx.x; p0 < packs; p0 += kUnroll * kThreads) {
    Pack<T, VEC> v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t p = p0 + u * kThreads;
      if (p < packs && p * VEC < classes && !ignored) v[u] = load_pack<T, VEC>(row + p * VEC);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t p = p0 + u * kThreads;
      if (p >= packs) continue;
      Pack<T, VEC> g;
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        const int64_t j = p * VEC + e;
        float d = 0.f;
        if (j < classes && !ignored)
          d = (exp2f(to_float(v[u].v[e]) * kLog2e - l2) - (j == t ? 1.f : 0.f)) * sc;
        g.v[e] = from_float<T>(d);
      }
      store_pack<T, VEC>(grow + p * VEC, g);
    }
  }
}

template <typename T>
bool vectorisable(const void* a, const void* b, int64_t ld) {
  constexpr int vec = 16 / sizeof(T);
  const auto al = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return al(a) && (b == nullptr || al(b)) && ld % vec == 0;
}

template <typename T>
void forward_typed(const void* logits, int64_t ld, const int64_t* targets, float* loss,
                   float* lse, int64_t rows, int64_t classes, int64_t ignore_index,
                   cudaStream_t stream) {
  constexpr int vec = 16 / sizeof(T);
  const T* x = static_cast<const T*>(logits);
  if (vectorisable<T>(logits, nullptr, ld))
    ce_forward_kernel<T, vec><<<rows, kThreads, 0, stream>>>(x, ld, targets, loss, lse, classes,
                                                             ignore_index);
  else
    ce_forward_kernel<T, 1><<<rows, kThreads, 0, stream>>>(x, ld, targets, loss, lse, classes,
                                                           ignore_index);
  CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void backward_typed(const void* logits, int64_t ld, const int64_t* targets, const float* lse,
                    const float* scale, void* grad, int64_t rows, int64_t classes,
                    int64_t ignore_index, cudaStream_t stream) {
  constexpr int vec = 16 / sizeof(T);
  const T* x = static_cast<const T*>(logits);
  T* g = static_cast<T*>(grad);
  if (vectorisable<T>(logits, grad, ld))
    ce_backward_kernel<T, vec><<<rows, kThreads, 0, stream>>>(x, ld, targets, lse, scale, g,
                                                              classes, ignore_index);
  else
    ce_backward_kernel<T, 1><<<rows, kThreads, 0, stream>>>(x, ld, targets, lse, scale, g,
                                                            classes, ignore_index);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_cross_entropy_forward(const void* logits, int64_t ld, const int64_t* targets,
                                  float* loss, float* lse, int64_t rows, int64_t classes,
                                  int64_t ignore_index, ElemType dtype, cudaStream_t stream) {
  if (rows == 0) return;
  with_elem_type<float, __nv_bfloat16, __half>(dtype, "cross_entropy", [&](auto t) {
    forward_typed<decltype(t)>(logits, ld, targets, loss, lse, rows, classes, ignore_index, stream);
  });
}

void launch_cross_entropy_backward(const void* logits, int64_t ld, const int64_t* targets,
                                   const float* lse, const float* scale, void* grad,
                                   int64_t rows, int64_t classes, int64_t ignore_index,
                                   ElemType dtype, cudaStream_t stream) {
  if (rows == 0) return;
  with_elem_type<float, __nv_bfloat16, __half>(dtype, "cross_entropy", [&](auto t) {
    backward_typed<decltype(t)>(logits, ld, targets, lse, scale, grad, rows, classes, ignore_index,
                                stream);
  });
}

}  // namespace gptbench

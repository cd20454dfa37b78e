#pragma once
// The original block-per-row kernels (kBlockScalar, kBlockPartial), forward and backward.
// Part of the fused softmax: ops/softmax.cu includes it, nothing else does.
#include "ops/softmax/common.cuh"

namespace gptbench {
namespace {

// ---- block per row, original kernels (kBlockScalar, kBlockPartial) -----------------------

// Thread t handles packs t, t + blockDim, t + 2·blockDim, ... in both passes, so every thread
// reads back from shared memory only the packs it wrote itself. The first `staged` packs of the
// row are kept in shared memory between the passes; the rest (rows longer than shared memory)
// are read again from global memory, where L2 usually still holds them.
template <typename T, int VEC>
__global__ void __launch_bounds__(kMaxBlockThreads)
    softmax_fwd_block(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int cols,
                      int staged) {
  extern __shared__ __align__(16) unsigned char smem[];
  auto* buf = reinterpret_cast<Pack<T, VEC>*>(smem);  // (staged,)
  const int packs = cols / VEC;
  const int nthreads = blockDim.x;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    float m = -INFINITY, s = 0.f;
    for (int base = threadIdx.x; base < packs; base += kBlockUnroll * nthreads) {
      Pack<T, VEC> p[kBlockUnroll];
#pragma unroll
      for (int u = 0; u < kBlockUnroll; ++u) {  // issue every load before using any
        const int i = base + u * nthreads;
        if (i < packs) p[u] = load_pack<T, VEC, true>(xr + static_cast<int64_t>(i) * VEC);
      }
#pragma unroll
      for (int u = 0; u < kBlockUnroll; ++u) {
        const int i = base + u * nthreads;
        if (i < packs) {
          if (i < staged) buf[i] = p[u];
          float pm = -INFINITY;
#pragma unroll
          for (int k = 0; k < VEC; ++k) pm = fmaxf(pm, to_float(p[u].v[k]));
          if (pm > m) {  // the running maximum grows: rescale what was summed so far
            s *= exp2f((m - pm) * kLog2e);
            m = pm;
          }
#pragma unroll
          for (int k = 0; k < VEC; ++k) s += exp_shifted(to_float(p[u].v[k]), m);
        }
      }
    }
    block_merge(m, s);
    const float inv = inverse_sum(m, s);
    for (int i = threadIdx.x; i < packs; i += nthreads) {
      const Pack<T, VEC> p =
          i < staged ? buf[i] : load_pack<T, VEC, true>(xr + static_cast<int64_t>(i) * VEC);
      Pack<T, VEC> o;
#pragma unroll
      for (int k = 0; k < VEC; ++k) o.v[k] = from_float<T>(exp_shifted(to_float(p.v[k]), m) * inv);
      store_pack<T, VEC>(yr + static_cast<int64_t>(i) * VEC, o);
    }
  }
}

// Backward: shared memory holds the first `staged` packs of y, then the first `staged` of dy.
template <typename T, int VEC>
__global__ void __launch_bounds__(kMaxBlockThreads)
    softmax_bwd_block(const T* __restrict__ y, const T* __restrict__ dy, T* __restrict__ dx,
                      int64_t rows, int cols, int staged) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int packs = cols / VEC;
  auto* buf_y = reinterpret_cast<Pack<T, VEC>*>(smem);  // (staged,)
  auto* buf_g = buf_y + staged;                         // (staged,)
  const int nthreads = blockDim.x;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t off = row * cols;
    float dot = 0.f;
    for (int base = threadIdx.x; base < packs; base += kBlockUnrollBwd * nthreads) {
      Pack<T, VEC> py[kBlockUnrollBwd], pg[kBlockUnrollBwd];
#pragma unroll
      for (int u = 0; u < kBlockUnrollBwd; ++u) {
        const int i = base + u * nthreads;
        if (i < packs) {
          py[u] = load_pack<T, VEC, true>(y + off + static_cast<int64_t>(i) * VEC);
          pg[u] = load_pack<T, VEC, true>(dy + off + static_cast<int64_t>(i) * VEC);
        }
      }
#pragma unroll
      for (int u = 0; u < kBlockUnrollBwd; ++u) {
        const int i = base + u * nthreads;
        if (i < packs) {
          if (i < staged) {
            buf_y[i] = py[u];
            buf_g[i] = pg[u];
          }
#pragma unroll
          for (int k = 0; k < VEC; ++k) dot = fmaf(to_float(py[u].v[k]), to_float(pg[u].v[k]), dot);
        }
      }
    }
    dot = block_sum(dot);
    for (int i = threadIdx.x; i < packs; i += nthreads) {
      Pack<T, VEC> py, pg;
      if (i < staged) {
        py = buf_y[i];
        pg = buf_g[i];
      } else {
        py = load_pack<T, VEC, true>(y + off + static_cast<int64_t>(i) * VEC);
        pg = load_pack<T, VEC, true>(dy + off + static_cast<int64_t>(i) * VEC);
      }
      Pack<T, VEC> o;
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const float yk = to_float(py.v[k]);
        o.v[k] = from_float<T>(yk * (to_float(pg.v[k]) - dot));
      }
      store_pack<T, VEC>(dx + off + static_cast<int64_t>(i) * VEC, o);
    }
  }
}


}  // namespace
}  // namespace gptbench

#pragma once
// Backward of long rows staged in shared memory by cp.async, the next row prefetched (kBlockVec).
// Part of the fused softmax: ops/softmax.cu includes it, nothing else does.
#include "ops/device/cp_async.cuh"
#include "ops/softmax/common.cuh"

namespace gptbench {
namespace {

// ---- backward, block per row, rows staged by cp.async, next row prefetched (kBlockVec) --------

// Thread t owns packs t, t + blockDim, t + 2·blockDim, ... of every row: it issues their copies,
// reads them back, and refills their slots with the next row's, so no barrier guards the slots.
// Slots for y (packs,) then dy (packs,): a block keeps the loads of its next row in flight.
template <typename T>
__global__ void __launch_bounds__(kMaxBlockThreads)
    softmax_bwd_staged(const T* __restrict__ y, const T* __restrict__ dy, T* __restrict__ dx,
                       int64_t rows, int cols) {
  constexpr int VEC = 16 / sizeof(T);
  using P = Pack<T, VEC>;
  extern __shared__ __align__(16) unsigned char smem[];
  const int packs = cols / VEC;
  P* buf_y = reinterpret_cast<P*>(smem);  // (packs,)
  P* buf_g = buf_y + packs;               // (packs,)
  const int nt = blockDim.x, tid = threadIdx.x;
  int64_t row = blockIdx.x;
  for (int i = tid; i < packs; i += nt) {
    const int64_t off = row * cols + static_cast<int64_t>(i) * VEC;
    cp_async16(buf_y + i, y + off);
    cp_async16(buf_g + i, dy + off);
  }
  cp_async_commit();
  for (; row < rows; row += gridDim.x) {
    cp_async_wait_all();
    float dot = 0.f;
#pragma unroll 2
    for (int i = tid; i < packs; i += nt) {
      const P py = buf_y[i], pg = buf_g[i];
#pragma unroll
      for (int k = 0; k < VEC; ++k) dot = fmaf(to_float(py.v[k]), to_float(pg.v[k]), dot);
    }
    dot = block_sum(dot);
    const int64_t next = row + gridDim.x;
    const bool more = next < rows;
#pragma unroll 2
    for (int i = tid; i < packs; i += nt) {
      const P py = buf_y[i], pg = buf_g[i];
      float o[VEC];
#pragma unroll
      for (int k = 0; k < VEC; ++k) o[k] = to_float(py.v[k]) * (to_float(pg.v[k]) - dot);
      store_floats<T, VEC>(dx + row * cols + static_cast<int64_t>(i) * VEC, o);
      if (more) {
        const int64_t off = next * cols + static_cast<int64_t>(i) * VEC;
        cp_async16(buf_y + i, y + off);
        cp_async16(buf_g + i, dy + off);
      }
    }
    cp_async_commit();
  }
}


}  // namespace
}  // namespace gptbench

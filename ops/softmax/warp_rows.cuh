#pragma once
// Rows of <= 1024 columns, a group of lanes per row (kWarpVec, kWarpScalar), forward and backward.
// Part of the fused softmax: ops/softmax.cu includes it, nothing else does.
#include "ops/softmax/common.cuh"

namespace gptbench {
namespace {

// ---- rows of <= 1024 columns: a group of LANES lanes per row -----------------------------------

// LANES lanes (a power of two <= 32) per row, 32 / LANES rows per warp. Lane l of a group holds
// packs l, l + LANES, l + 2·LANES, ... of its row: NV packs of VEC values (NV·VEC <= 32). For a
// given j the warp's loads cover 32 / LANES consecutive rows (one contiguous span where a row is
// NV·LANES packs). cols = 0: a group past the last row, which loads and stores nothing.
template <typename T, int VEC, int NV, int LANES>
__device__ __forceinline__ void warp_load_row(Pack<T, VEC> (&p)[NV], const T* __restrict__ xr,
                                              int l, int cols) {
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int c = (j * LANES + l) * VEC;
    if (c < cols) p[j] = load_pack<T, VEC, true>(xr + c);  // cols % VEC == 0: the pack is inside
  }
}

// Stores the fp32 values value(j, k) of this lane's packs of a row (warp_load_row's layout) to yr.
template <typename T, int VEC, int NV, int LANES, typename Value>
__device__ __forceinline__ void warp_store_row(T* __restrict__ yr, int l, int cols, Value value) {
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int c = (j * LANES + l) * VEC;
    if (c < cols) {
      float o[VEC];
#pragma unroll
      for (int k = 0; k < VEC; ++k) o[k] = value(j, k);
      store_floats<T, VEC>(yr + c, o);
    }
  }
}

// softmax of the row whose share this lane holds in p, written to yr: the group's maximum and
// sum by butterflies within the group, the exponentials kept in fp32 registers between the sum
// and the output (one exp per element).
template <int LANES, typename T, int VEC, int NV>
__device__ __forceinline__ void warp_softmax_row(const Pack<T, VEC> (&p)[NV], T* __restrict__ yr,
                                                 int l, int cols) {
  float m = -INFINITY;
#pragma unroll
  for (int j = 0; j < NV; ++j)
    if ((j * LANES + l) * VEC < cols)
#pragma unroll
      for (int k = 0; k < VEC; ++k) m = fmaxf(m, to_float(p[j].v[k]));
  m = warp_max<LANES>(m);  // the row maximum; -inf only for a row of -inf, whose (x - m) are NaN
  float e[NV][VEC];
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < NV; ++j)
    if ((j * LANES + l) * VEC < cols)
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        e[j][k] = exp2_approx((to_float(p[j].v[k]) - m) * kLog2e);
        s += e[j][k];
      }
  const float inv = 1.f / warp_sum<LANES>(s);
  warp_store_row<T, VEC, NV, LANES>(yr, l, cols, [&](int j, int k) { return e[j][k] * inv; });
}

// Blocks per SM the register allocation must allow (a floor on occupancy): 8 (32 warps, <= 64
// registers) where a lane's share of a row fits 16 registers (bf16 rows of <= 1024 columns, fp32
// of <= 512, in 16-byte packs; element loads of <= 512 columns), other 16-byte paths 10 (40
// warps, <= 48), the rest none.
template <typename T, int VEC, int NV>
constexpr int warp_min_blocks() {
  return NV * ((VEC * static_cast<int>(sizeof(T)) + 3) / 4) <= 16 ? 8 : VEC > 1 ? 10 : 1;
}

// Rows per block of the warp paths (kWarpRowsPerBlock warps of 32 / LANES rows).
template <int LANES>
constexpr int warp_block_rows() {
  return kWarp * kWarpRowsPerBlock / LANES;
}

// This thread's row and its lane in the row's group, for a row per group of LANES lanes. `n`:
// cols, or 0 for a group past the last row (it stays for the warp's shuffles). Returns false
// where the warp's first row is past the end (warp-uniform: the warp may exit).
template <int LANES>
__device__ __forceinline__ bool warp_row(int64_t rows, int cols, int64_t& off, int& l, int& n) {
  const int group = threadIdx.x % kWarp / LANES;
  const int64_t row =
      static_cast<int64_t>(blockIdx.x) * warp_block_rows<LANES>() + threadIdx.x / LANES;
  l = threadIdx.x % LANES;
  n = row < rows ? cols : 0;
  off = row < rows ? row * cols : 0;
  return row - group < rows;
}

// A row per group of LANES lanes, the grid covers every row. (H200, 2026-11-22, LANES = 32: one
// row per warp on a full grid beat a persistent grid prefetching each warp's next row by 3-14
// points of copy bandwidth.)
template <typename T, int VEC, int NV, int LANES>
__global__ void __launch_bounds__(kWarp* kWarpRowsPerBlock, warp_min_blocks<T, VEC, NV>())
    softmax_fwd_warp(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int cols) {
  int64_t off;
  int l, n;
  if (!warp_row<LANES>(rows, cols, off, l, n)) return;
  Pack<T, VEC> p[NV];
  warp_load_row<T, VEC, NV, LANES>(p, x + off, l, n);
  warp_softmax_row<LANES>(p, y + off, l, n);
}

template <typename T, int VEC, int NV, int LANES>
__global__ void __launch_bounds__(kWarp* kWarpRowsPerBlock, VEC > 1 ? 6 : 4)
    softmax_bwd_warp(const T* __restrict__ y, const T* __restrict__ dy, T* __restrict__ dx,
                     int64_t rows, int cols) {
  int64_t off;
  int l, n;
  if (!warp_row<LANES>(rows, cols, off, l, n)) return;
  float yv[NV][VEC], gv[NV][VEC];
  float dot = 0.f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int c = (j * LANES + l) * VEC;
    if (c < n) {
      const Pack<T, VEC> py = load_pack<T, VEC, true>(y + off + c);
      const Pack<T, VEC> pg = load_pack<T, VEC, true>(dy + off + c);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        yv[j][k] = to_float(py.v[k]);
        gv[j][k] = to_float(pg.v[k]);
        dot = fmaf(yv[j][k], gv[j][k], dot);
      }
    }
  }
  dot = warp_sum<LANES>(dot);
  warp_store_row<T, VEC, NV, LANES>(dx + off, l, n,
                                    [&](int j, int k) { return yv[j][k] * (gv[j][k] - dot); });
}


}  // namespace
}  // namespace gptbench

// Fused softmax over the last dimension, forward and backward, fp32 and bf16 storage with fp32
// arithmetic. Memory-bound: the goal is one read and one write of every element (forward: x in,
// y out; backward: y and dy in, dx out), with enough bytes in flight that DRAM never waits for
// the arithmetic. Paths (softmax_plan picks one; the tests pin the choice):
//
//   cols <= 1024, a group of lanes per row (kWarpVec / kWarpScalar). A row per group of 1-32
//       lanes (a power of two; 32 / lanes rows per warp); each lane holds its share of the row in
//       registers (<= 32 values): row max (butterfly within the group), exponentials kept in
//       fp32 registers, sum (butterfly), scale, store; the grid covers every row. Rows of <= 32
//       16-byte packs take one pack per lane (bf16 32 columns: 4 lanes, 8 rows per warp), longer
//       rows 32 lanes with the packs they need; element loads 4 per lane likewise. (H200,
//       2026-11-24, rows·cols = 2^28, % of copy bandwidth, vs one row per warp before: bf16 16
//       101.4 vs 9.2, 32 100.9 vs 17.7, 64 100.7 vs 34.9, 128 99.8 vs 66.6; fp32 16 101.2 vs
//       25.8, 32 101.1 vs 50.7 (two rows per warp before), 64 100.7 vs 91.3; 256-1024 unchanged,
//       98-100. Two packs per lane: bf16 16 80.3, 32-1024 within a point; four: 66-98.
//       Element loads at 1, 2 or 4 per lane: fp32 3 columns 30.3 / 60.0 / 96.3, 31 38.8 / 76.8
//       / 98.7. One row per warp on a full grid beat a persistent grid prefetching each warp's
//       next row by 3-14 points, 2026-11-22.)
//   cols > 1024, forward, 16-byte aligned (kBlockRegs): the row on chip, one read and one write
//       per element. Up to 32,768 columns (fp32 32 values per thread, bf16 32 up to 8,192
//       columns and 64 beyond) the row is in registers across the warps of one block (2-32
//       warps, bf16 <= 16; two rows per block of 2-warp rows); with 32 values per thread the
//       exponentials stay in registers, with 64 (32 registers of raw bf16) they are recomputed.
//       (H200, 2026-11-22, rows·cols = 2^28, % of copy bandwidth, vs the staged path it
//       replaced: bf16 2048 98.7 vs 75.0, 8192 98.2 vs 88.5, 32768 95.9 vs 85.6; fp32 2048 97.9
//       vs 90.6.) Longer rows: 8 packs per thread in registers (32 fp32 / 64 bf16 values) and
//       the rest of the thread's share copied by cp.async into its own slots of shared memory
//       (no barrier: a thread reads back only its slots), exponentials recomputed; 16-warp
//       blocks two per SM, one per row or a thread-block cluster of two (bf16 <= 90,112
//       columns in one block), else 32-warp blocks one per SM in clusters of up to 8 (fp32
//       <= 720,896, bf16 <= 1,441,792 columns with 227 KiB of shared memory); a cluster's
//       partial (max, sum) pairs meet in distributed shared memory. Non-persistent grid: while
//       some blocks reduce, others' loads are in flight. (H200, 2026-11-24, rows·cols = 2^28,
//       % of copy bandwidth, vs the paths they replaced: bf16 40,000 98.5 vs 89.3 (staged),
//       50,304 98.2 vs 90.3, 8,192 x 50,304 97.4 vs 89.5, 65,536 97.2 vs 89.2, 131,072 92.5 vs
//       72.6 (partial), 262,144 89.1 vs 61.0; fp32 (registers of clusters of 32-warp blocks
//       before) 40,000 96.7 vs 84.1, 50,304 97.9 vs 92.9, 65,536 96.9 vs 98.1, 131,072 95.5 vs
//       90.2, 262,144 93.9 vs 70.5. Measured beside it: the row in registers alone across a
//       cluster of 16-warp blocks, bf16 50,304 75.0%, 65,536 81.5% (64 values recomputed per
//       thread, and each block waits on the others); one 32-warp block (64 values per thread)
//       84.7% / 90.3%; 3 blocks per SM of 32 register values plus shared memory 98.1% / 95.4%;
//       bf16 131,072 in one 16-warp block holding 3/4 of its row in shared memory 88.0%.)
//       Without clusters (before sm_90): one block, fp32 <= 90,112 / bf16 <= 180,224 columns.
//   cols > 1024, 16-byte aligned, backward, y and dy fit shared memory (kBlockVec): fp32
//       <= 28,928 / bf16 <= 57,856 columns. Block per row, persistent. The rows are copied
//       into shared memory by cp.async (16 bytes per copy, all of them issued at once, no
//       registers held), then: pass 1 Σ y·dy over the thread's packs, one block merge, pass 2
//       the outputs. During pass 2, as soon as a thread has stored a pack's output, it issues
//       the cp.async of the same pack of its next row into the same slot, so the next row
//       streams in while this one is written. Every pack is touched by one thread only, so the
//       slots need no barrier.
//   cols > 1024, longer than the paths above (kBlockPartial) or not 16-byte aligned / cols not
//       a multiple of the vector (kBlockScalar): the original block kernel: online (max, sum)
//       while staging what fits in shared memory, then an output pass; the part of the row
//       that does not fit is read a second time (from L2, usually).
//
// Loads and stores are 16 bytes wide (4 fp32 or 8 bf16) when every pointer is 16-byte aligned
// and cols is a multiple of the vector width; otherwise one element at a time.
//
// exp is ex2.approx.ftz of (x − m)·log2(e): one MUFU instruction (max relative error ~2^-22;
// results below 2^-126 flush to 0, i.e. terms < 1.2e-38 of the row maximum). The online
// (max, sum) (Milakov & Gimelshein, 2018): each thread keeps a running maximum m and a sum s
// of exp(x − m), rescaling s when m grows; partial pairs merge as M = max(m1, m2),
// S = s1·e^(m1−M) + s2·e^(m2−M). Non-finite inputs behave as in torch::softmax: a row of all
// −inf gives NaN ((−inf) − (−inf)), a +inf or NaN anywhere in a row makes the whole row NaN,
// and −inf entries of an otherwise finite row give 0.
//
// Backward: dx = y·(dy − Σ y·dy), the dot product accumulated in fp32; the warp path (the
// forward's groups of lanes per row), the staged path (kBlockVec), the original block kernels.
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>

#include "ops/cuda_check.h"
#include "ops/softmax_kernels.h"

namespace gptbench {
namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr int kWarp = 32;
constexpr int kWarpRowsPerBlock = 4;          // warp path: 128-thread blocks (4 warps)
constexpr int kMaxWarpCols = 1024;            // warp path: at most 32 values per lane
constexpr int kGroupPacksVec = 1;             // warp path: 16-byte packs per lane of short rows
constexpr int kGroupPacksScalar = 4;          // warp path: elements per lane of short rows
constexpr int kMaxBlockThreads = 1024;
constexpr int kBlockUnroll = 4;               // partial/scalar block path: loads before use
constexpr int kBlockUnrollBwd = 2;            // backward: two tensors, same bytes in flight
constexpr int kPacksPerThread = 8;            // block path: threads ≈ packs / 8 (128..1024)
constexpr int64_t kSmemReserve = 1024;        // static shared memory of the block kernels
constexpr int kRegsValues = 32;               // register path: values per thread, exponentials kept
constexpr int64_t kRegsLongBf16 = 8192;       // longer bf16 rows: 64 values per thread, recomputed
constexpr int kRegsMaxWarpsBf16 = 16;         // bf16 register path: one block of <= 16 warps
constexpr int kRegsPacks = 8;                 // longer rows: 16-byte packs per thread in registers
constexpr int kRegsPairWarps = 16;            // longer rows: blocks of 16 warps run two per SM
constexpr int kMaxCluster = 8;                // portable thread-block cluster size

// ---- element conversion, exp and 16-byte packs ------------------------------------------------

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// 2^v in one MUFU instruction: -inf -> 0, +inf -> +inf, NaN -> NaN, results below 2^-126 -> 0.
__device__ __forceinline__ float exp2_approx(float v) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
}

// VEC consecutive elements, aligned to their size (16 bytes for the vector paths).
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
  T v[VEC];
};

template <typename T, int VEC>
__device__ __forceinline__ Pack<T, VEC> load_pack(const T* __restrict__ p) {
  Pack<T, VEC> r;
  if constexpr (sizeof(Pack<T, VEC>) == 16) {
    *reinterpret_cast<uint4*>(&r) = __ldg(reinterpret_cast<const uint4*>(p));
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k) r.v[k] = p[k];
  }
  return r;
}

template <typename T, int VEC>
__device__ __forceinline__ void store_pack(T* __restrict__ p, const Pack<T, VEC>& r) {
  if constexpr (sizeof(Pack<T, VEC>) == 16) {
    *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(&r);
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k) p[k] = r.v[k];
  }
}

// A pack's values as fp32. AGAIN (bf16): the conversion (a shift and a mask of each 32-bit pair) is
// an opaque asm on the packed words, so the compiler converts again where a value is used instead
// of keeping every converted (or unpacked 16-bit) value alive: the register path's raw row of 64
// bf16 values per thread takes 32 registers, a converted copy would take 64 more (and spill).
template <bool AGAIN, typename T, int VEC>
__device__ __forceinline__ void unpack(const Pack<T, VEC>& p, float (&f)[VEC]) {
  if constexpr (AGAIN && std::is_same_v<T, __nv_bfloat16> && VEC % 2 == 0) {
    const auto* w = reinterpret_cast<const unsigned*>(&p);
#pragma unroll
    for (int k = 0; k < VEC / 2; ++k) {
      unsigned lo, hi;
      asm volatile("shl.b32 %0, %2, 16;\n\tand.b32 %1, %2, 0xffff0000;"
                   : "=r"(lo), "=r"(hi)
                   : "r"(w[k]));
      f[2 * k] = __uint_as_float(lo);
      f[2 * k + 1] = __uint_as_float(hi);
    }
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k) f[k] = to_float(p.v[k]);
  }
}

// VEC fp32 values rounded to T and stored; bf16 pairs go through one packed conversion.
template <typename T, int VEC>
__device__ __forceinline__ void store_floats(T* __restrict__ p, const float (&f)[VEC]) {
  Pack<T, VEC> o;
  if constexpr (std::is_same_v<T, __nv_bfloat16> && VEC % 2 == 0) {
    auto* o2 = reinterpret_cast<__nv_bfloat162*>(o.v);
#pragma unroll
    for (int k = 0; k < VEC / 2; ++k) o2[k] = __floats2bfloat162_rn(f[2 * k], f[2 * k + 1]);
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k) o.v[k] = from_float<T>(f[k]);
  }
  store_pack<T, VEC>(p, o);
}

// 16-byte asynchronous copy global -> shared (bypasses L1 and the registers), and its waits.
__device__ __forceinline__ void cp_async16(void* smem_dst, const void* gmem_src) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem_src)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
// The calling thread's copies have landed and are visible to it (to it only: the kernels read
// back only the slots a thread filled itself).
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}

// ---- reductions ------------------------------------------------------------------------------

// exp(v - m) for a softmax term of the online sum; -inf entries contribute 0 even when m is
// -inf (a thread's share with nothing but -inf), so that case does not produce NaN.
__device__ __forceinline__ float exp_shifted(float v, float m) {
  return v == -INFINITY ? 0.f : exp2_approx((v - m) * kLog2e);
}

// (m, s) ⊕ (m2, s2). fmaxf never returns NaN unless both are NaN, and m starts at -inf, so m is
// never NaN; a NaN input reaches s instead and poisons the row, as in torch.
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mx = fmaxf(m, m2);
  const float a = (m == mx) ? s : s * exp2_approx((m - mx) * kLog2e);
  const float b = (m2 == mx) ? s2 : s2 * exp2_approx((m2 - mx) * kLog2e);
  m = mx;
  s = a + b;  // commutative, so every lane of a butterfly ends with the same bits
}

__device__ __forceinline__ void warp_merge(float& m, float& s) {
#pragma unroll
  for (int off = kWarp / 2; off > 0; off >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, off);
    const float s2 = __shfl_xor_sync(0xffffffffu, s, off);
    merge(m, s, m2, s2);
  }
}

// Butterflies over groups of LANES lanes (a power of two <= 32): lanes l and l ^ off, off < LANES,
// are in the same group, so each group of the warp reduces its own values.
template <int LANES = kWarp>
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = LANES / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

template <int LANES = kWarp>
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int off = LANES / 2; off > 0; off >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

// Every thread of the block gets the block's (m, s). Each warp reduces the per-warp partials
// itself, which saves a broadcast round trip through shared memory.
__device__ __forceinline__ void block_merge(float& m, float& s) {
  __shared__ float part_m[kMaxBlockThreads / kWarp], part_s[kMaxBlockThreads / kWarp];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int nwarps = blockDim.x / kWarp;
  warp_merge(m, s);
  if (lane == 0) {
    part_m[warp] = m;
    part_s[warp] = s;
  }
  __syncthreads();
  m = lane < nwarps ? part_m[lane] : -INFINITY;
  s = lane < nwarps ? part_s[lane] : 0.f;
  warp_merge(m, s);
  __syncthreads();  // part_* may be rewritten by the next call
}

__device__ __forceinline__ float block_sum(float v) {
  __shared__ float part[kMaxBlockThreads / kWarp];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int nwarps = blockDim.x / kWarp;
  v = warp_sum(v);
  if (lane == 0) part[warp] = v;
  __syncthreads();
  v = warp_sum(lane < nwarps ? part[lane] : 0.f);
  __syncthreads();
  return v;
}

// 1/S, or NaN for a row whose maximum is -inf (torch: exp(-inf - -inf) = NaN everywhere).
__device__ __forceinline__ float inverse_sum(float m, float s) {
  return m == -INFINITY ? __int_as_float(0x7fffffff) : 1.f / s;
}

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
    if (c < cols) p[j] = load_pack<T, VEC>(xr + c);  // cols % VEC == 0: the pack is inside
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
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int c = (j * LANES + l) * VEC;
    if (c < cols) {
      float o[VEC];
#pragma unroll
      for (int k = 0; k < VEC; ++k) o[k] = e[j][k] * inv;
      store_floats<T, VEC>(yr + c, o);
    }
  }
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
      const Pack<T, VEC> py = load_pack<T, VEC>(y + off + c);
      const Pack<T, VEC> pg = load_pack<T, VEC>(dy + off + c);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        yv[j][k] = to_float(py.v[k]);
        gv[j][k] = to_float(pg.v[k]);
        dot = fmaf(yv[j][k], gv[j][k], dot);
      }
    }
  }
  dot = warp_sum<LANES>(dot);
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int c = (j * LANES + l) * VEC;
    if (c < n) {
      float o[VEC];
#pragma unroll
      for (int k = 0; k < VEC; ++k) o[k] = yv[j][k] * (gv[j][k] - dot);
      store_floats<T, VEC>(dx + off + c, o);
    }
  }
}

// ---- a row in registers across the warps of a block, or of a cluster of K blocks (kBlockRegs) --

// Warps per block: the row's WPR, or kWarpRowsPerBlock rows of WPR < kWarpRowsPerBlock warps.
template <int WPR>
__host__ __device__ constexpr int regs_block_warps() {
  return WPR > kWarpRowsPerBlock ? WPR : kWarpRowsPerBlock;
}

// Cluster barrier halves: arrive (release: this block's shared-memory writes and reads are done)
// and wait (acquire: every block of the cluster has arrived).
// (sm_90 and later; the plan makes no clusters elsewhere.)
__device__ __forceinline__ void cluster_arrive() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void cluster_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}
// This block's `p` in the shared memory of block `rank` of the cluster.
__device__ __forceinline__ const float* cluster_peer(const float* p, int rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  return cooperative_groups::this_cluster().map_shared_rank(p, rank);
#else
  __trap();
  return p;
#endif
}

// A row's lanes are K blocks × WPR warps × 32; lane L holds packs L, L + lanes, L + 2·lanes, ...
// (16 bytes each): the first NV in registers (NV·VEC = 32 or 64 values), and with STAGED the next
// `ns` (runtime) in this thread's slots of dynamic shared memory, copied there by cp.async while
// the register loads are in flight (slot i of thread t at pack index i·blockDim + t: a thread
// reads back only what it copied, so no barrier guards the slots). Each lane takes the (m, s) of
// its own values, the warps merge theirs through shared memory (K > 1: distributed shared memory
// of the cluster, one barrier), and the outputs are written: one read and one write per element.
// With 32 values per lane in registers and nothing staged, the exponentials e = exp(x − m) stay
// in fp32 registers and every output is e · exp(m − M) / S (one exp per element plus one per
// lane); otherwise (bf16 only: the raw row takes 32 registers) they are recomputed as
// exp(x − M) / S (two per element). Non-persistent: the grid covers every row (K blocks per row,
// or kWarpRowsPerBlock / WPR rows per block); the hardware keeps new rows' loads in flight while
// other blocks reduce. -inf entries give exp(-inf) = 0; a lane of nothing but -inf takes
// m = -inf and shifts by 0, so its terms are 0, not NaN; the row maximum M is -inf only for a
// row of -inf, whose 1/S is NaN (inverse_sum); +inf or NaN reach S as NaN.
template <typename T, int NV, int WPR, int K, bool STAGED = false>
__global__ void __launch_bounds__(kWarp* regs_block_warps<WPR>(), 32 / regs_block_warps<WPR>())
    softmax_fwd_regs(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int cols, int ns) {
  constexpr int VEC = 16 / sizeof(T);
  using P = Pack<T, VEC>;
  constexpr int kWarps = regs_block_warps<WPR>();
  constexpr int kRows = kWarps / WPR;  // rows per block
  constexpr int kLanesPerBlock = kWarp * WPR;
  constexpr int kLanes = K * kLanesPerBlock;  // lanes per row
  static_assert(K == 1 || kRows == 1, "a cluster shares one row");
  static_assert(!STAGED || kRows == 1, "staged slots are indexed by the thread of a row");
  constexpr bool kKeep = !STAGED && NV * VEC <= 32;  // exponentials kept, else recomputed
  static_assert(K <= 8 && NV * VEC <= 64, "portable cluster size; <= 64 values per lane");
  __shared__ float part_m[kWarps], part_s[kWarps];
  extern __shared__ __align__(16) unsigned char staged_smem[];
  P* slot = reinterpret_cast<P*>(staged_smem) + threadIdx.x;  // slot i: slot[i * kLanesPerBlock]
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int grp = warp / WPR;  // the block's row of this warp
  const int rank = K == 1 ? 0 : static_cast<int>(blockIdx.x % K);
  const int64_t row = K == 1 ? static_cast<int64_t>(blockIdx.x) * kRows + grp
                             : static_cast<int64_t>(blockIdx.x / K);
  const int L = rank * kLanesPerBlock + threadIdx.x % kLanesPerBlock;
  const bool live = row < rows;  // block-uniform when K > 1 (no early return: barriers follow)
  const int64_t off = (live ? row : 0) * cols;
  auto has = [&](int j) { return live && (j * kLanes + L) * VEC < cols; };
  // Calls f(fp32 values of a pack) for each staged pack of this lane (after the copies landed).
  auto each_staged = [&](auto&& f) {
    if constexpr (STAGED) {
      for (int i = 0; i < ns && has(NV + i); ++i) {
        float v[VEC];
        unpack<true>(slot[i * kLanesPerBlock], v);
        f(v, NV + i);
      }
    }
  };
  P p[NV];
#pragma unroll
  for (int j = 0; j < NV; ++j)
    if (has(j)) p[j] = load_pack<T, VEC>(x + off + (j * kLanes + L) * VEC);
  if constexpr (STAGED) {
    for (int i = 0; i < ns && has(NV + i); ++i)
      cp_async16(slot + i * kLanesPerBlock, x + off + ((NV + i) * kLanes + L) * VEC);
    cp_async_commit();
  }
  float m = -INFINITY;
#pragma unroll
  for (int j = 0; j < NV; ++j)
    if (has(j)) {
      float f[VEC];
      unpack<!kKeep>(p[j], f);
#pragma unroll
      for (int k = 0; k < VEC; ++k) m = fmaxf(m, f[k]);
    }
  if constexpr (STAGED) cp_async_wait_all();  // this thread's copies (it reads only those)
  each_staged([&](const float(&f)[VEC], int) {
#pragma unroll
    for (int k = 0; k < VEC; ++k) m = fmaxf(m, f[k]);
  });
  const float shift = m == -INFINITY ? 0.f : m;
  float e[kKeep ? NV : 1][VEC];
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < NV; ++j)
    if (has(j)) {
      float f[VEC];
      unpack<!kKeep>(p[j], f);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const float ek = exp2_approx((f[k] - shift) * kLog2e);
        if constexpr (kKeep) e[j][k] = ek;
        s += ek;
      }
    }
  each_staged([&](const float(&f)[VEC], int) {
#pragma unroll
    for (int k = 0; k < VEC; ++k) s += exp2_approx((f[k] - shift) * kLog2e);
  });
  float M = m, S = s;
  warp_merge(M, S);
  if constexpr (K * WPR > 1) {
    if (lane == 0) {
      part_m[warp] = M;
      part_s[warp] = S;
    }
    if constexpr (K == 1) {
      __syncthreads();
    } else {
      cluster_arrive();
      cluster_wait();
    }
    // Every warp merges the row's K·WPR partials in the same order: identical (M, S) everywhere.
    M = -INFINITY;
    S = 0.f;
    for (int l = lane; l < K * WPR; l += kWarp) {
      const float* pm = part_m;
      const float* ps = part_s;
      if constexpr (K > 1) {
        pm = cluster_peer(part_m, l / WPR);
        ps = cluster_peer(part_s, l / WPR);
      }
      merge(M, S, pm[grp * WPR + l % WPR], ps[grp * WPR + l % WPR]);
    }
    warp_merge(M, S);
    if constexpr (K > 1) cluster_arrive();  // done reading the other blocks' partials
  }
  const float inv = inverse_sum(M, S);
  const float scale = kKeep ? (m == M ? 1.f : exp2_approx((m - M) * kLog2e)) * inv : inv;
  auto store = [&](float(&o)[VEC], int j) {
    if constexpr (!kKeep) {
#pragma unroll
      for (int k = 0; k < VEC; ++k) o[k] = exp2_approx((o[k] - M) * kLog2e) * inv;
    }
    store_floats<T, VEC>(y + off + (j * kLanes + L) * VEC, o);
  };
#pragma unroll
  for (int j = 0; j < NV; ++j)
    if (has(j)) {
      float o[VEC];
      if constexpr (kKeep) {
#pragma unroll
        for (int k = 0; k < VEC; ++k) o[k] = e[j][k] * scale;
      } else {
        unpack<true>(p[j], o);
      }
      store(o, j);
    }
  each_staged([&](const float(&f)[VEC], int j) {
    float o[VEC];
#pragma unroll
    for (int k = 0; k < VEC; ++k) o[k] = f[k];
    store(o, j);
  });
  if constexpr (K > 1) cluster_wait();  // no block leaves while another may read its partials
}

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
        if (i < packs) p[u] = load_pack<T, VEC>(xr + static_cast<int64_t>(i) * VEC);
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
          i < staged ? buf[i] : load_pack<T, VEC>(xr + static_cast<int64_t>(i) * VEC);
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
          py[u] = load_pack<T, VEC>(y + off + static_cast<int64_t>(i) * VEC);
          pg[u] = load_pack<T, VEC>(dy + off + static_cast<int64_t>(i) * VEC);
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
        py = load_pack<T, VEC>(y + off + static_cast<int64_t>(i) * VEC);
        pg = load_pack<T, VEC>(dy + off + static_cast<int64_t>(i) * VEC);
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

// ---- host side -------------------------------------------------------------------------------

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int current_device() {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  return dev;
}

bool has_clusters(int dev) {  // thread-block clusters: compute capability 9.0 and later
  int major = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  return major >= 9;
}

int64_t smem_optin_of(int dev) {
  int v = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  return v;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

void check_shape(int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0 || cols > INT_MAX / 2)
    throw std::invalid_argument("softmax: unsupported shape rows=" + std::to_string(rows) +
                                " cols=" + std::to_string(cols));
}

int pow2_ceil(int64_t v) {
  int p = 1;
  while (p < v) p *= 2;
  return p;
}

// Lanes per row (a power of two <= 32) and packs per lane (a power of two) of the warp paths,
// for a row of `cols` columns in packs of `vec` elements: the fewest lanes that hold the row at
// `per_lane` packs each (a power of two; at most per_lane packs then), or 32 lanes with as many
// packs as the row needs.
std::pair<int, int> warp_shape(int64_t cols, int vec, int per_lane) {
  const int64_t packs = ceil_div(cols, vec);
  const int lanes = std::min(kWarp, pow2_ceil(ceil_div(packs, per_lane)));
  return {lanes, pow2_ceil(ceil_div(packs, lanes))};
}

template <int LANES>
dim3 warp_grid(int64_t rows) {
  const int64_t blocks = ceil_div(rows, warp_block_rows<LANES>());
  if (blocks > INT_MAX) throw std::invalid_argument("softmax: too many rows for one launch");
  return dim3(static_cast<unsigned>(blocks));
}

dim3 block_grid(int64_t rows) {  // the block kernels loop over rows beyond the grid
  return dim3(static_cast<unsigned>(rows < (int64_t{1} << 30) ? rows : (int64_t{1} << 30)));
}

// Lets `kernel` use all of the device's opt-in shared memory: its dynamic limit becomes the
// opt-in less its static shared memory (once per kernel and device; always the same value, so
// the order of calls is immaterial). Done for every kernel launched with dynamic shared memory,
// not only above 48 KiB: without the opt-in, static + dynamic must stay within 48 KiB, so a
// 49,152-byte row (fp32 12,288 columns forward; and bf16 12,288 backward) plus
// the block kernels' static bytes failed to launch with "invalid argument".
template <typename Kernel>
void allow_smem(Kernel kernel) {
  static std::mutex mu;
  static std::set<std::pair<const void*, int>> done;
  const int dev = current_device();
  const auto key = std::make_pair(reinterpret_cast<const void*>(kernel), dev);
  std::lock_guard<std::mutex> lock(mu);
  if (done.count(key)) return;
  cudaFuncAttributes attr{};
  CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(smem_optin_of(dev) - attr.sharedSizeBytes)));
  done.insert(key);
}

// How many blocks of `threads` threads and `smem` dynamic bytes are resident on the whole device
// at once (cached): the size of a persistent grid. 0 where not even one block fits an SM (more
// threads than the kernel allows, or too much shared memory): no such launch would succeed.
template <typename Kernel>
int64_t resident_blocks_or_zero(Kernel kernel, int threads, int64_t smem) {
  static std::mutex mu;
  static std::map<std::tuple<const void*, int, int, int64_t>, int64_t> cache;
  const int dev = current_device();
  const auto key = std::make_tuple(reinterpret_cast<const void*>(kernel), dev, threads, smem);
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  if (smem > 0) allow_smem(kernel);
  cudaFuncAttributes attr{};
  CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
  int per_sm = 0, sms = 0;
  if (threads <= attr.maxThreadsPerBlock &&
      smem + static_cast<int64_t>(attr.sharedSizeBytes) <= smem_optin_of(dev))
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads,
                                                             static_cast<size_t>(smem)));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const int64_t blocks = int64_t{per_sm} * sms;
  std::lock_guard<std::mutex> lock(mu);
  cache.emplace(key, blocks);
  return blocks;
}

template <typename Kernel>
int64_t resident_blocks(Kernel kernel, int threads, int64_t smem) {
  const int64_t blocks = resident_blocks_or_zero(kernel, threads, smem);
  if (blocks <= 0)
    throw std::logic_error("softmax: no block of " + std::to_string(threads) + " threads and " +
                           std::to_string(smem) + " bytes of shared memory fits an SM");
  return blocks;
}

// The warp-path shapes softmax_plan makes (the launchers instantiate only these): 32 lanes with
// up to 32 values per lane; fewer lanes with one 16-byte pack, or up to kGroupPacksScalar
// elements, per lane.
template <int VEC, int NV, int LANES>
constexpr bool warp_shape_ok() {
  return NV * VEC <= kMaxWarpCols / kWarp &&
         (LANES == kWarp || NV <= (VEC > 1 ? kGroupPacksVec : kGroupPacksScalar));
}

template <typename T, int VEC, int NV, int LANES>
void fwd_warp(const T* x, T* y, int64_t rows, int cols, cudaStream_t st) {
  if constexpr (warp_shape_ok<VEC, NV, LANES>()) {
    softmax_fwd_warp<T, VEC, NV, LANES>
        <<<warp_grid<LANES>(rows), kWarp * kWarpRowsPerBlock, 0, st>>>(x, y, rows, cols);
    CUDA_CHECK_LAUNCH();
  } else {
    throw std::logic_error("softmax: unexpected warp-path shape");
  }
}

// K blocks per row (a cluster when > 1); STAGED: `ns` packs per lane beyond the NV in registers
// staged in `smem` bytes of dynamic shared memory.
template <typename T, int NV, int WPR, int K, bool STAGED = false>
void fwd_regs(const T* x, T* y, int64_t rows, int cols, cudaStream_t st, int ns = 0,
              int64_t smem = 0) {
  constexpr int kWarps = regs_block_warps<WPR>();
  const int64_t blocks = ceil_div(rows, kWarps / WPR) * K;
  if (blocks > INT_MAX) throw std::invalid_argument("softmax: too many rows for one launch");
  auto kernel = softmax_fwd_regs<T, NV, WPR, K, STAGED>;
  if (smem > 0) allow_smem(kernel);
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(blocks));
  cfg.blockDim = dim3(kWarp * kWarps);
  cfg.dynamicSmemBytes = static_cast<size_t>(smem);
  cfg.stream = st;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = K;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, x, y, rows, cols, ns));
}

template <typename T, int VEC, int NV, int LANES>
void bwd_warp(const T* y, const T* dy, T* dx, int64_t rows, int cols, cudaStream_t st) {
  if constexpr (warp_shape_ok<VEC, NV, LANES>()) {
    softmax_bwd_warp<T, VEC, NV, LANES>
        <<<warp_grid<LANES>(rows), kWarp * kWarpRowsPerBlock, 0, st>>>(y, dy, dx, rows, cols);
    CUDA_CHECK_LAUNCH();
  } else {
    throw std::logic_error("softmax: unexpected warp-path shape");
  }
}

// Calls f(v) with v = std::integral_constant<int, n> for n a power of two in [1, 32].
template <typename F>
void with_pow2(int n, F&& f) {
  switch (n) {
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 4: f(std::integral_constant<int, 4>{}); break;
    case 8: f(std::integral_constant<int, 8>{}); break;
    case 16: f(std::integral_constant<int, 16>{}); break;
    case 32: f(std::integral_constant<int, 32>{}); break;
    default: throw std::logic_error("softmax: unexpected warp-path shape " + std::to_string(n));
  }
}

// Calls f(lanes, packs per lane) (integral constants) for the warp-path shape of `plan`.
template <int VEC, typename F>
void with_warp_shape(const SoftmaxPlan& plan, F&& f) {
  with_pow2(plan.lanes, [&](auto lanes) {
    with_pow2(plan.values / VEC, [&](auto nv) { f(lanes, nv); });
  });
}

// Calls f(row_warps, cluster) (integral constants) for the kBlockRegs shapes softmax_plan makes:
// 2..32 warps of one block per row, or a cluster of 2, 4 or 8 blocks of 16 or 32 warps.
template <typename F>
void with_regs_shape(int row_warps, int cluster, F&& f) {
  using K1 = std::integral_constant<int, 1>;
  auto clustered = [&](auto w) {
    switch (cluster) {
      case 2: return f(w, std::integral_constant<int, 2>{});
      case 4: return f(w, std::integral_constant<int, 4>{});
      case 8: return f(w, std::integral_constant<int, 8>{});
    }
    throw std::logic_error("softmax: unexpected cluster of " + std::to_string(cluster));
  };
  if (cluster == 1) {
    switch (row_warps) {
      case 2: return f(std::integral_constant<int, 2>{}, K1{});
      case 4: return f(std::integral_constant<int, 4>{}, K1{});
      case 8: return f(std::integral_constant<int, 8>{}, K1{});
      case 16: return f(std::integral_constant<int, 16>{}, K1{});
      case 32: return f(std::integral_constant<int, 32>{}, K1{});
    }
  } else if (row_warps == 16) {
    return clustered(std::integral_constant<int, 16>{});
  } else if (row_warps == 32) {
    return clustered(std::integral_constant<int, 32>{});
  }
  throw std::logic_error("softmax: unexpected register-path shape " + std::to_string(row_warps) +
                         " warps x " + std::to_string(cluster) + " blocks");
}

template <typename T, int VEC>
void forward_vec(const T* x, T* y, int64_t rows, int cols, const SoftmaxPlan& plan,
                 cudaStream_t st) {
  switch (plan.path) {
    case SoftmaxPath::kWarpVec:
    case SoftmaxPath::kWarpScalar:
      with_warp_shape<VEC>(plan, [&](auto lanes, auto nv) {
        fwd_warp<T, VEC, decltype(nv)::value, decltype(lanes)::value>(x, y, rows, cols, st);
      });
      return;
    case SoftmaxPath::kBlockRegs:
      if constexpr (VEC * sizeof(T) == 16) {
        with_regs_shape(plan.row_warps, plan.cluster, [&](auto w, auto k) {
          constexpr int W = decltype(w)::value, K = decltype(k)::value;
          // Only the shapes the plan makes. One block, the row in registers: fp32 32 values per
          // thread; bf16 32 in up to 8 warps (<= 8,192 columns), 64 in 8 or 16 warps. Longer
          // rows: kRegsPacks packs in registers, the rest staged, in 16-warp blocks (one, or a
          // cluster of two) or 32-warp blocks (one, or a cluster of up to 8).
          if (plan.values > kRegsPacks * VEC) {
            if constexpr (W == 32 || (W == kRegsPairWarps && K <= 2))
              return fwd_regs<T, kRegsPacks, W, K, true>(x, y, rows, cols, st,
                                                         plan.values / VEC - kRegsPacks,
                                                         plan.smem_bytes);
          } else if constexpr (K == 1) {
            if constexpr (std::is_same_v<T, float>) {
              if (plan.values == kRegsValues)
                return fwd_regs<T, kRegsValues / VEC, W, 1>(x, y, rows, cols, st);
            } else {
              if constexpr (W <= 8)
                if (plan.values == kRegsValues)
                  return fwd_regs<T, kRegsValues / VEC, W, 1>(x, y, rows, cols, st);
              if constexpr (W >= 8 && W <= kRegsMaxWarpsBf16)
                if (plan.values == 2 * kRegsValues)
                  return fwd_regs<T, 2 * kRegsValues / VEC, W, 1>(x, y, rows, cols, st);
            }
          }
          throw std::logic_error("softmax: unexpected register-path plan: " +
                                 std::to_string(plan.values) + " values per thread, " +
                                 std::to_string(W) + " warps x " + std::to_string(K) + " blocks");
        });
        return;
      }
      throw std::logic_error("softmax: register block path needs 16-byte packs");
    case SoftmaxPath::kBlockVec:
      throw std::logic_error("softmax: the staged block path is backward only");
    case SoftmaxPath::kBlockScalar:
    case SoftmaxPath::kBlockPartial: {
      auto kernel = softmax_fwd_block<T, VEC>;
      if (plan.smem_bytes > 0) allow_smem(kernel);
      const int staged = static_cast<int>(plan.smem_bytes / (VEC * sizeof(T)));
      kernel<<<block_grid(rows), plan.threads, plan.smem_bytes, st>>>(x, y, rows, cols, staged);
      CUDA_CHECK_LAUNCH();
      return;
    }
  }
}

template <typename T, int VEC>
void backward_vec(const T* y, const T* dy, T* dx, int64_t rows, int cols, const SoftmaxPlan& plan,
                  cudaStream_t st) {
  switch (plan.path) {
    case SoftmaxPath::kWarpVec:
    case SoftmaxPath::kWarpScalar:
      with_warp_shape<VEC>(plan, [&](auto lanes, auto nv) {
        bwd_warp<T, VEC, decltype(nv)::value, decltype(lanes)::value>(y, dy, dx, rows, cols, st);
      });
      return;
    case SoftmaxPath::kBlockRegs:
      throw std::logic_error("softmax: the register block path is forward only");
    case SoftmaxPath::kBlockVec:
      if constexpr (VEC * sizeof(T) == 16) {
        auto kernel = softmax_bwd_staged<T>;
        const int64_t blocks =
            std::min(rows, resident_blocks(kernel, plan.threads, plan.smem_bytes));
        kernel<<<static_cast<unsigned>(blocks), plan.threads, plan.smem_bytes, st>>>(
            y, dy, dx, rows, cols);
        CUDA_CHECK_LAUNCH();
        return;
      }
      throw std::logic_error("softmax: staged block path needs 16-byte packs");
    case SoftmaxPath::kBlockScalar:
    case SoftmaxPath::kBlockPartial: {
      auto kernel = softmax_bwd_block<T, VEC>;
      if (plan.smem_bytes > 0) allow_smem(kernel);
      const int staged = static_cast<int>(plan.smem_bytes / (2 * VEC * sizeof(T)));
      kernel<<<block_grid(rows), plan.threads, plan.smem_bytes, st>>>(y, dy, dx, rows, cols,
                                                                       staged);
      CUDA_CHECK_LAUNCH();
      return;
    }
  }
}

template <typename T>
void forward_typed(const void* x, void* y, int64_t rows, int64_t cols, cudaStream_t st) {
  const SoftmaxDtype dt = sizeof(T) == 4 ? SoftmaxDtype::kFloat32 : SoftmaxDtype::kBFloat16;
  const int dev = current_device();
  const SoftmaxPlan plan = softmax_plan(cols, dt, /*backward=*/false, aligned16(x) && aligned16(y),
                                        smem_optin_of(dev), has_clusters(dev));
  const auto* xt = static_cast<const T*>(x);
  auto* yt = static_cast<T*>(y);
  const int c = static_cast<int>(cols);
  if (plan.vec == 1)
    forward_vec<T, 1>(xt, yt, rows, c, plan, st);
  else
    forward_vec<T, 16 / sizeof(T)>(xt, yt, rows, c, plan, st);
}

template <typename T>
void backward_typed(const void* y, const void* dy, void* dx, int64_t rows, int64_t cols,
                    cudaStream_t st) {
  const SoftmaxDtype dt = sizeof(T) == 4 ? SoftmaxDtype::kFloat32 : SoftmaxDtype::kBFloat16;
  const SoftmaxPlan plan =
      softmax_plan(cols, dt, /*backward=*/true, aligned16(y) && aligned16(dy) && aligned16(dx),
                   smem_optin_of(current_device()));
  const auto* yt = static_cast<const T*>(y);
  const auto* gt = static_cast<const T*>(dy);
  auto* dxt = static_cast<T*>(dx);
  const int c = static_cast<int>(cols);
  if (plan.vec == 1)
    backward_vec<T, 1>(yt, gt, dxt, rows, c, plan, st);
  else
    backward_vec<T, 16 / sizeof(T)>(yt, gt, dxt, rows, c, plan, st);
}

}  // namespace

SoftmaxPlan softmax_plan(int64_t cols, SoftmaxDtype dtype, bool backward, bool aligned,
                         int64_t smem_optin, bool clusters) {
  const int64_t elem = dtype == SoftmaxDtype::kFloat32 ? 4 : 2;
  const int vec16 = static_cast<int>(16 / elem);
  const int vec = (aligned && cols % vec16 == 0) ? vec16 : 1;
  if (cols <= kMaxWarpCols) {
    // A group of lanes per row, one 16-byte pack (or 4 elements) per lane where the row is that
    // short: enough rows per warp to keep every lane loading (H200, 2026-11-24: 99-106% of copy
    // bandwidth for 16-1024 columns in 16-byte packs, forward and backward, vs 9-35% for bf16
    // 16-64 columns in one row per warp).
    const auto [lanes, packs] =
        warp_shape(cols, vec, vec > 1 ? kGroupPacksVec : kGroupPacksScalar);
    SoftmaxPlan p{vec > 1 ? SoftmaxPath::kWarpVec : SoftmaxPath::kWarpScalar, vec,
                  kWarp * kWarpRowsPerBlock, 0};
    p.lanes = lanes;
    p.values = packs * vec;
    return p;
  }
  if (!backward && vec > 1) {
    // The row in registers: the fewest warps (a power of two) whose threads hold it at `values`
    // each, one block of up to 32 warps (bf16 16).
    const bool bf16 = dtype == SoftmaxDtype::kBFloat16;
    const int values = bf16 && cols > kRegsLongBf16 ? 2 * kRegsValues : kRegsValues;
    const int64_t max_warps = bf16 ? kRegsMaxWarpsBf16 : kMaxBlockThreads / kWarp;
    int64_t warps = 1;
    while (warps * kWarp * values < cols) warps *= 2;
    if (warps <= max_warps) {
      const int row_warps = static_cast<int>(warps);
      return {SoftmaxPath::kBlockRegs, vec, kWarp * std::max(row_warps, kWarpRowsPerBlock), 0, 1,
              row_warps, values};
    }
    // Longer rows: kRegsPacks packs per thread in registers and the rest of the thread's share in
    // shared memory. 16-warp blocks two per SM, one per row or a cluster of two; else 32-warp
    // blocks (one per SM), the fewest per cluster whose shared memory fits. (H200, 2026-11-24,
    // % of copy bandwidth: bf16 131,072 columns 93.1 in 2 x 16 warps vs 93.8 in one 32-warp
    // block vs 88.0 in one 16-warp block holding 3/4 of its row in shared memory; bf16 262,144
    // 90.8 in 2 x 32 warps vs 86.5 in 4 x 16; fp32 262,144 94.5 in 4 x 32 vs 92.5 in 8 x 16.)
    const int64_t packs = cols / vec;
    const int64_t max_cluster = clusters ? kMaxCluster : 1;
    // Two blocks per SM: an SM has the opt-in plus 1 KiB; each block takes its dynamic and
    // static bytes and 1 KiB for the system (both within 2 kSmemReserve).
    const int64_t two_per_sm = (smem_optin + kSmemReserve) / 2 - 2 * kSmemReserve;
    for (const int64_t row_warps : {kRegsPairWarps, kMaxBlockThreads / kWarp}) {
      const int64_t threads = row_warps * kWarp;
      const bool paired = row_warps == kRegsPairWarps;
      for (int64_t k = 1; k <= std::min<int64_t>(paired ? 2 : kMaxCluster, max_cluster); k *= 2) {
        const int64_t per_thread = ceil_div(packs, k * threads);
        const int64_t smem = std::max<int64_t>(0, per_thread - kRegsPacks) * threads * 16;
        if (smem <= (paired ? two_per_sm : smem_optin - kSmemReserve))
          return {SoftmaxPath::kBlockRegs, vec, static_cast<int>(threads), smem,
                  static_cast<int>(k), static_cast<int>(row_warps),
                  static_cast<int>(per_thread * vec)};
      }
    }
  }
  const int64_t packs = cols / vec;
  const int64_t rows_staged = backward ? 2 : 1;  // y and dy, or x
  const int64_t pack_bytes = vec * elem;
  const int64_t bytes = packs * pack_bytes * rows_staged;
  // About kPacksPerThread packs per thread, 128 to 1024 threads. Where shared memory lets two or
  // more rows share an SM, blocks stop at 512 threads so that registers (≤ 64 per thread under
  // __launch_bounds__(1024)) let two blocks be resident too, and one row's reduction overlaps
  // another's loads; an SM's shared memory is taken as the opt-in per block plus the reserve.
  const bool two_rows_fit = 2 * (bytes + kSmemReserve) <= smem_optin + kSmemReserve;
  const int max_threads = two_rows_fit ? kMaxBlockThreads / 2 : kMaxBlockThreads;
  int threads = 128;
  while (threads < max_threads && packs > int64_t{threads} * kPacksPerThread) threads *= 2;
  // (The forward's 16-byte rows that fit shared memory took kBlockRegs above.)
  if (bytes + kSmemReserve <= smem_optin && (backward || vec == 1))
    return {vec > 1 ? SoftmaxPath::kBlockVec : SoftmaxPath::kBlockScalar, vec, threads, bytes};
  // As many packs as fit; the rest of the row is read twice.
  const int64_t fit = std::max<int64_t>(0, (smem_optin - kSmemReserve) / (pack_bytes * rows_staged));
  return {SoftmaxPath::kBlockPartial, vec, threads, fit * pack_bytes * rows_staged};
}

void launch_softmax_forward(const void* x, void* y, int64_t rows, int64_t cols,
                            SoftmaxDtype dtype, cudaStream_t stream) {
  check_shape(rows, cols);
  if (rows == 0 || cols == 0) return;
  if (dtype == SoftmaxDtype::kFloat32)
    forward_typed<float>(x, y, rows, cols, stream);
  else
    forward_typed<__nv_bfloat16>(x, y, rows, cols, stream);
}

void launch_softmax_backward(const void* y, const void* dy, void* dx, int64_t rows, int64_t cols,
                             SoftmaxDtype dtype, cudaStream_t stream) {
  check_shape(rows, cols);
  if (rows == 0 || cols == 0) return;
  if (dtype == SoftmaxDtype::kFloat32)
    backward_typed<float>(y, dy, dx, rows, cols, stream);
  else
    backward_typed<__nv_bfloat16>(y, dy, dx, rows, cols, stream);
}

}  // namespace gptbench

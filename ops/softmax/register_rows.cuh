#pragma once
// Forward of long rows held in registers across a block or a cluster of blocks (kBlockRegs).
// Part of the fused softmax: ops/softmax.cu includes it, nothing else does.
#include <cooperative_groups.h>

#include "ops/device/cp_async.cuh"
#include "ops/softmax/common.cuh"

namespace gptbench {
namespace {

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
    if (has(j)) p[j] = load_pack<T, VEC, true>(x + off + (j * kLanes + L) * VEC);
  if constexpr (STAGED) {
    for (int i = 0; i < ns && has(NV + i); ++i)
      cp_async16(slot + i * kLanesPerBlock, x + off + ((NV + i) * kLanes + L) * VEC);
    cp_async_commit();
  }
  // Calls f(fp32 values of a pack, j) for each pack j this lane holds in registers.
  auto each_loaded = [&](auto&& f) {
#pragma unroll
    for (int j = 0; j < NV; ++j)
      if (has(j)) {
        float v[VEC];
        unpack<!kKeep>(p[j], v);
        f(v, j);
      }
  };
  float m = -INFINITY;
  auto take_max = [&](const float(&f)[VEC], int) {
#pragma unroll
    for (int k = 0; k < VEC; ++k) m = fmaxf(m, f[k]);
  };
  each_loaded(take_max);
  if constexpr (STAGED) cp_async_wait_all();  // this thread's copies (it reads only those)
  each_staged(take_max);
  const float shift = m == -INFINITY ? 0.f : m;
  float e[kKeep ? NV : 1][VEC];
  float s = 0.f;
  auto add_exps = [&](const float(&f)[VEC], int j) {  // kKeep: register packs only (!STAGED)
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      const float ek = exp2_approx((f[k] - shift) * kLog2e);
      if constexpr (kKeep) e[j][k] = ek;
      s += ek;
    }
  };
  each_loaded(add_exps);
  each_staged(add_exps);
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


}  // namespace
}  // namespace gptbench

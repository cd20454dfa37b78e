// FlashAttention-2 backward (Dao 2023, Algorithm 2) with mma.sync m16n8k16 on tensor cores.
//
// Three kernels on the caller's stream (after a memset of the fp32 dQ workspace):
//  1. dot:  D_i = Σ_c dO[i, c] · O[i, c]  (fp32, one row per kD/8 threads, 16-byte loads).
//  2. main: one thread block per (key tile of kBlockN keys, batch·head), 16 keys per warp:
//     kBlockN = 128 with 8 warps for d = 64, 128; 64 with 4 warps for d <= 32 (flash_tiles.h).
//     Warp w owns the keys w·16 .. w·16+15 of the tile and keeps their dK, dV (16 × d fp32
//     each) in registers for the whole pass. K and V stay in shared memory; query tiles of
//     kBlockM = 64 rows (32 for d = 128; Q, dO, lse, D) are double-buffered with cp.async. Per
//     query tile each warp computes
//        Sᵀ  = K_w Qᵀ                      (16 × kBlockM, recomputed; never stored)
//        Pᵀ  = 2^(Sᵀ·scale·log2e − lse·log2e)  (masked entries 0; P from the saved lse, FA2)
//        dPᵀ = V_w dOᵀ
//        dSᵀ = Pᵀ ∘ (dPᵀ − D)
//        dV_w += Pᵀ dO,  dK_w += dSᵀ Q      (A operands straight from the C fragments)
//     and writes dSᵀ (16-bit) to one of two shared buffers. dQ_tile = dS K (kBlockM × d over
//     all kBlockN keys) of that tile is computed one tile later, after the next tile's barrier,
//     each warp a 16-row slice, and added into the fp32 dQ workspace with atomicAdd (float2,
//     sm_90's vector RED): one block barrier per query tile. dQ is thus accumulated by atomics in
//     fp32, as FlashAttention-2 does, rather than by a separate pass over query tiles; 128-key
//     tiles halve the atomics of 64-key ones.
//     Causal: key tile n visits only query tiles from the one holding its first key on
//     (flash_bwd_m_begin). Grid (heads per group, key tiles, groups): the blocks resident at once
//     work on one group of heads whose Q, dO and dQ workspace fit in L2 (flash_heads_per_group),
//     key tile 0 (the heaviest under the causal mask) first.
//  3. convert: dQ = scale · workspace, to 16 bits.
// dK is multiplied by the softmax scale when written; dV is not scaled.
//
// Shared memory per block: (2·kBlockN + 4·kBlockM) rows × (d + 8) × 2 + 2 · kBlockN ×
// (kBlockM + 8) × 2 + 16·kBlockM bytes = 37 KB (d=16), 49 KB (32), 109 KB (64), 122.5 KB (128).
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "ops/attention/flash_common.cuh"
#include "ops/attention/flash_kernels.h"
#include "ops/cuda_check.h"

namespace gptbench {
namespace flash {
namespace {

// Tile configuration of the main kernel: kBlockN keys per block, 16 per warp, query tiles of
// kBlockM rows. The launcher instantiates flash_bwd_tile(kD) only (BwdTile); the parameters let
// the tuning harness time others.
template <int kD_, int kBlockM_, int kBlockN_, int kWarps_>
struct BwdTraits : TileConfig<kD_, kBlockM_, kBlockN_, kWarps_> {
  using C = TileConfig<kD_, kBlockM_, kBlockN_, kWarps_>;
  static constexpr int kSStride = C::kBlockM + 8;  // dSᵀ rows (elements)
  static constexpr uint32_t kKVBytes = C::kBlockN * C::kStride * 2;
  static constexpr uint32_t kQBytes = C::kBlockM * C::kStride * 2;
  static constexpr uint32_t kSBytes = C::kBlockN * kSStride * 2;
  static constexpr int kSmemBytes = flash_bwd_smem_bytes(C::kD, C::kTile);
  // dQ slices: kRowTiles 16-row slices of the query tile, each split over kColSplit warps.
  static constexpr int kRowTiles = C::kBlockM / 16;
  static constexpr int kColSplit = C::kWarps / kRowTiles;
  static constexpr int kCols = C::kD / kColSplit;         // dQ columns per warp
  static constexpr int kChunk = kCols > 64 ? 64 : kCols;  // columns per accumulation pass
  // Blocks per SM the register cap aims at (checked spill-free with -Xptxas -v): 256 threads
  // (d = 64, 128: 234 and 244 registers): 1; 128 threads: 3 (≤ 168 registers) at d <= 32, 2
  // (~235 registers) above.
  static constexpr int kMinBlocks = C::kThreads > 128 ? 1 : C::kD <= 32 ? 3 : 2;
  static_assert(C::kBlockN == C::kWarps * 16, "one 16-key slice per warp");
  static_assert(C::kWarps % kRowTiles == 0 && kCols % 16 == 0 && kCols % kChunk == 0,
                "dQ split");
  static_assert(kSmemBytes == 2 * kKVBytes + 4 * kQBytes + 2 * kSBytes + 4 * C::kBlockM * 4,
                "smem");
  static_assert(C::kBlockM <= C::kThreads, "one thread per query row loads lse and D");
};

template <int kD>
using BwdTile = BwdTraits<kD, flash_bwd_tile(kD).block_m, flash_bwd_tile(kD).block_n,
                          flash_bwd_tile(kD).warps>;

// D = rowsum(dO ∘ O), fp32, into dsum (B·H·L). With lpad > 0 (the Hopper backward) the rows of
// every head run to lpad, and the same pass zeroes each row's fp32 dQ workspace and writes
// rows_pad = [lse·log2e | D] instead (zero beyond L), so the main kernel reads them unchecked.
template <typename T, int kD>
__global__ void __launch_bounds__(256) flash_bwd_dot_kernel(const FlashBwdParams p, int64_t lpad) {
  constexpr int kTPR = kD / 8;  // threads per row, 16 bytes each
  constexpr int kRows = 256 / kTPR;
  const int64_t per_head = lpad > 0 ? lpad : p.L;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRows + threadIdx.x / kTPR;
  const int part = threadIdx.x % kTPR;
  const int64_t total = static_cast<int64_t>(p.B) * p.H * per_head;
  const int64_t bh = row / per_head;
  const int l = static_cast<int>(row % per_head);
  const bool in = row < total && l < p.L;
  float acc = 0.f;
  if (in) {
    const int b = static_cast<int>(bh / p.H), h = static_cast<int>(bh % p.H);
    const T* o = static_cast<const T*>(p.o) + b * p.o_st.batch + h * p.o_st.head +
                 l * p.o_st.row + part * 8;
    const T* g = static_cast<const T*>(p.dout) + b * p.do_st.batch + h * p.do_st.head +
                 l * p.do_st.row + part * 8;
    const uint4 ov = *reinterpret_cast<const uint4*>(o);
    const uint4 gv = *reinterpret_cast<const uint4*>(g);
    const uint32_t oa[4] = {ov.x, ov.y, ov.z, ov.w};
    const uint32_t ga[4] = {gv.x, gv.y, gv.z, gv.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 x = Ops<T>::unpack(oa[i]), y = Ops<T>::unpack(ga[i]);
      acc = fmaf(x.x, y.x, acc);
      acc = fmaf(x.y, y.y, acc);
    }
    if (lpad > 0) {
      float4* w = reinterpret_cast<float4*>(p.dq_accum + (bh * p.L + l) * kD + part * 8);
      w[0] = w[1] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
  }
#pragma unroll
  for (int off = kTPR / 2; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if (row >= total || part != 0) return;
  if (lpad == 0) {
    p.dsum[row] = acc;
  } else {
    p.rows_pad[row] = in ? p.lse[bh * p.L + l] * kLog2e : 0.f;
    p.rows_pad[total + row] = acc;
  }
}

// dq = scale · dq_accum, to 16 bits; n4 = numel / 4.
template <typename T>
__global__ void __launch_bounds__(256) flash_bwd_convert_dq_kernel(const float* __restrict__ acc,
                                                                   T* __restrict__ dq,
                                                                   int64_t n4, float scale) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4;
       i += step) {
    const float4 v = reinterpret_cast<const float4*>(acc)[i];
    uint2 out;
    out.x = Ops<T>::pack(v.x * scale, v.y * scale);
    out.y = Ops<T>::pack(v.z * scale, v.w * scale);
    reinterpret_cast<uint2*>(dq)[i] = out;
  }
}

__device__ __forceinline__ void atomic_add2(float* addr, float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float2*>(addr), make_float2(a, b));  // 8-byte aligned: even column
#else
  atomicAdd(addr, a);
  atomicAdd(addr + 1, b);
#endif
}

template <typename T, typename Tr>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kMinBlocks)
    flash_bwd_kernel(const FlashBwdParams p) {
  constexpr int kD = Tr::kD;
  constexpr int kBlockM = Tr::kBlockM, kBlockN = Tr::kBlockN, kThreads = Tr::kThreads;
  constexpr int kStride = Tr::kStride, kSStride = Tr::kSStride;
  constexpr int kMT = kBlockM / 8;  // n8 tiles of Sᵀ (query columns) per warp
  constexpr int kDT = kD / 8;       // n8 tiles of dK, dV per warp

  extern __shared__ __align__(16) unsigned char smem_raw[];
  // Byte addresses: sK, sV (kBlockN, kStride); sQ, sdO 2 × (kBlockM, kStride);
  // sdS 2 × (kBlockN, kSStride): dSᵀ; then lse and D, 2 × kBlockM floats each.
  const uint32_t sK = smem_u32(smem_raw);
  const uint32_t sV = sK + Tr::kKVBytes;
  const uint32_t sQ = sV + Tr::kKVBytes;
  const uint32_t sdO = sQ + 2 * Tr::kQBytes;
  const uint32_t sdS = sdO + 2 * Tr::kQBytes;
  const uint32_t sLse = sdS + 2 * Tr::kSBytes;
  const uint32_t sD = sLse + 2 * kBlockM * 4;
  const unsigned char* smem_lse = smem_raw + (sLse - sK);  // generic views for ordinary loads
  const unsigned char* smem_d = smem_raw + (sD - sK);
  unsigned char* smem_ds = smem_raw + (sdS - sK);

  // Grid (heads per group, key tiles, groups): the blocks of one group of heads run together,
  // key tile 0 (under the causal mask the heaviest) first (flash_tiles.h, "Block scheduling").
  const int bh = blockIdx.z * gridDim.x + blockIdx.x;
  if (bh >= p.B * p.H) return;  // the last group may be short
  const int b = bh / p.H, h = bh % p.H;
  const int n_block = blockIdx.y;
  const int L = p.L;
  const bool causal = p.causal;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t4 = lane & 3;
  const int n0 = n_block * kBlockN;

  const T* gQ = static_cast<const T*>(p.q) + b * p.q_st.batch + h * p.q_st.head;
  const T* gK = static_cast<const T*>(p.k) + b * p.k_st.batch + h * p.k_st.head;
  const T* gV = static_cast<const T*>(p.v) + b * p.v_st.batch + h * p.v_st.head;
  const T* gdO = static_cast<const T*>(p.dout) + b * p.do_st.batch + h * p.do_st.head;
  const float* g_lse = p.lse + static_cast<int64_t>(bh) * L;
  const float* g_d = p.dsum + static_cast<int64_t>(bh) * L;
  float* g_dq = p.dq_accum + static_cast<int64_t>(bh) * L * kD;
  const int q_row = static_cast<int>(p.q_st.row), k_row = static_cast<int>(p.k_st.row);
  const int v_row = static_cast<int>(p.v_st.row), do_row = static_cast<int>(p.do_st.row);

  const int m_begin = flash_bwd_m_begin(n_block, causal, kBlockM, kBlockN);
  const int m_end = flash_num_blocks(L, kBlockM);

  // Query-side stage: Q, dO tiles and lse, D of query tile m into buffer buf (rows >= L zero).
  auto load_stage = [&](int m, int buf) {
    load_tile<kBlockM, kD, kStride, kThreads>(sQ + buf * Tr::kQBytes, gQ, q_row, m * kBlockM, L,
                                              tid);
    load_tile<kBlockM, kD, kStride, kThreads>(sdO + buf * Tr::kQBytes, gdO, do_row,
                                              m * kBlockM, L, tid);
    if (tid < kBlockM) {
      const int r = m * kBlockM + tid;
      const bool valid = r < L;
      cp_async4(sLse + (buf * kBlockM + tid) * 4, g_lse + (valid ? r : 0), valid);
      cp_async4(sD + (buf * kBlockM + tid) * 4, g_d + (valid ? r : 0), valid);
    }
  };

  load_tile<kBlockN, kD, kStride, kThreads>(sK, gK, k_row, n0, L, tid);
  load_tile<kBlockN, kD, kStride, kThreads>(sV, gV, v_row, n0, L, tid);
  load_stage(m_begin, 0);
  cp_async_commit();

  // Per-lane byte offsets of ldmatrix row addresses (flash_common.cuh, "ldmatrix").
  const uint32_t a_lane = ((warp * 16 + (lane & 15)) * kStride + (lane >> 4) * 8) * 2;  // K_w, V_w
  const uint32_t k_a = sK + a_lane, v_a = sV + a_lane;
  const uint32_t bn_lane = (((lane & 7) + (lane >> 4) * 8) * kStride + ((lane >> 3) & 1) * 8) * 2;
  const uint32_t bt_lane = (((lane & 7) + ((lane >> 3) & 1) * 8) * kStride + (lane >> 4) * 8) * 2;
  const uint32_t ds_lane = (((lane & 7) + (lane >> 4) * 8) * kSStride + ((lane >> 3) & 1) * 8) * 2;
  // dQ slice of this warp: query rows dq_r0 .. +15 of the tile, columns dq_c0 .. + kCols - 1.
  const int dq_r0 = (warp % Tr::kRowTiles) * 16;
  const int dq_c0 = (warp / Tr::kRowTiles) * Tr::kCols;

  const float scale_log2 = p.scale * kLog2e;
  const int key_lo = n0 + warp * 16 + g;  // this thread's keys: key_lo and key_lo + 8

  float acc_dk[kDT][4], acc_dv[kDT][4];
#pragma unroll
  for (int i = 0; i < kDT; ++i)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc_dk[i][c] = acc_dv[i][c] = 0.f;

  // dQ_tile[dq_r0 .. +15, dq_c0 ..] += dS K for query tile m from the dSᵀ buffer ds_buf:
  // A = dS via ldmatrix.trans of dSᵀ, B = K via ldmatrix.trans; unscaled (the convert kernel
  // multiplies by scale); added into the fp32 workspace with atomics.
  auto dq_step = [&](int m, uint32_t ds_buf) {
    const int m0 = m * kBlockM;
#pragma unroll
    for (int ch = 0; ch < Tr::kCols / Tr::kChunk; ++ch) {
      constexpr int kCT = Tr::kChunk / 8;
      const int c0 = dq_c0 + ch * Tr::kChunk;
      float acc[kCT][4];
#pragma unroll
      for (int i = 0; i < kCT; ++i)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[i][c] = 0.f;
#pragma unroll
      for (int kc = 0; kc < kBlockN / 16; ++kc) {
        uint32_t a[4];
        ldmatrix_x4_trans(a, ds_buf + ds_lane + (kc * 16 * kSStride + dq_r0) * 2);
#pragma unroll
        for (int dn = 0; dn < Tr::kChunk / 16; ++dn) {
          uint32_t bk[4];
          ldmatrix_x4_trans(bk, sK + bt_lane + (kc * 16 * kStride + c0 + dn * 16) * 2);
          Ops<T>::mma16(acc, dn, a, bk);
        }
      }
      const int q_lo = m0 + dq_r0 + g;
#pragma unroll
      for (int i = 0; i < kCT; ++i) {
        const int col = c0 + i * 8 + 2 * t4;
        if (q_lo < L) atomic_add2(g_dq + q_lo * kD + col, acc[i][0], acc[i][1]);
        if (q_lo + 8 < L) atomic_add2(g_dq + (q_lo + 8) * kD + col, acc[i][2], acc[i][3]);
      }
    }
  };

  for (int m = m_begin; m < m_end; ++m) {
    const int buf = (m - m_begin) & 1;
    cp_async_wait<0>();
    // Stage m and the dSᵀ of tile m-1 visible; all warps done with stage m-1's buffers and
    // with the dSᵀ buffer of tile m-2, which tile m overwrites. One barrier per query tile:
    // dQ of tile m-1 is computed here, a tile late, from the other dSᵀ buffer.
    __syncthreads();
    if (m + 1 < m_end) {
      load_stage(m + 1, buf ^ 1);
      cp_async_commit();
    }
    if (m > m_begin) dq_step(m - 1, sdS + (buf ^ 1) * Tr::kSBytes);
    const int m0 = m * kBlockM;
    const uint32_t q_buf = sQ + buf * Tr::kQBytes;
    const uint32_t do_buf = sdO + buf * Tr::kQBytes;
    unsigned char* ds_out = smem_ds + buf * Tr::kSBytes;  // this tile's dSᵀ

    // Sᵀ = K_w Qᵀ and dPᵀ = V_w dOᵀ: (16 keys × kBlockM queries) each.
    float st[kMT][4], dpt[kMT][4];
#pragma unroll
    for (int i = 0; i < kMT; ++i)
#pragma unroll
      for (int c = 0; c < 4; ++c) st[i][c] = dpt[i][c] = 0.f;
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
      uint32_t ak[4], av[4];
      ldmatrix_x4(ak, k_a + kk * 16 * 2);
      ldmatrix_x4(av, v_a + kk * 16 * 2);
#pragma unroll
      for (int nn = 0; nn < kBlockM / 16; ++nn) {
        uint32_t bq[4], bo[4];
        ldmatrix_x4(bq, q_buf + bn_lane + (nn * 16 * kStride + kk * 16) * 2);
        ldmatrix_x4(bo, do_buf + bn_lane + (nn * 16 * kStride + kk * 16) * 2);
        Ops<T>::mma16(st, nn, ak, bq);
        Ops<T>::mma16(dpt, nn, av, bo);
      }
    }

    // Pᵀ (into st) and dSᵀ (into dpt). Element (i, c): key key_lo + (c >> 1) * 8, query
    // m0 + i*8 + 2*t4 + (c & 1).
    const bool need_mask = flash_tile_needs_mask(m0, n0, kBlockM, kBlockN, L, causal);
    const float* lse_s = reinterpret_cast<const float*>(smem_lse) + buf * kBlockM;
    const float* d_s = reinterpret_cast<const float*>(smem_d) + buf * kBlockM;
#pragma unroll
    for (int i = 0; i < kMT; ++i) {
      const int ql = i * 8 + 2 * t4;
      const float2 lse2 = *reinterpret_cast<const float2*>(lse_s + ql);
      const float2 d2 = *reinterpret_cast<const float2*>(d_s + ql);
      const float nl[2] = {-lse2.x * kLog2e, -lse2.y * kLog2e};
      const float dd[2] = {d2.x, d2.y};
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        float pv = fast_exp2(fmaf(st[i][c], scale_log2, nl[c & 1]));
        if (need_mask && flash_masked(m0 + ql + (c & 1), key_lo + (c >> 1) * 8, L, causal))
          pv = 0.f;
        st[i][c] = pv;
        dpt[i][c] = pv * (dpt[i][c] - dd[c & 1]);
      }
    }

    // dV_w += Pᵀ dO and dK_w += dSᵀ Q: A from the C fragments, B = dO / Q via ldmatrix.trans.
#pragma unroll
    for (int kq = 0; kq < kBlockM / 16; ++kq) {
      uint32_t ap[4], ads[4];
      ap[0] = Ops<T>::pack(st[2 * kq][0], st[2 * kq][1]);
      ap[1] = Ops<T>::pack(st[2 * kq][2], st[2 * kq][3]);
      ap[2] = Ops<T>::pack(st[2 * kq + 1][0], st[2 * kq + 1][1]);
      ap[3] = Ops<T>::pack(st[2 * kq + 1][2], st[2 * kq + 1][3]);
      ads[0] = Ops<T>::pack(dpt[2 * kq][0], dpt[2 * kq][1]);
      ads[1] = Ops<T>::pack(dpt[2 * kq][2], dpt[2 * kq][3]);
      ads[2] = Ops<T>::pack(dpt[2 * kq + 1][0], dpt[2 * kq + 1][1]);
      ads[3] = Ops<T>::pack(dpt[2 * kq + 1][2], dpt[2 * kq + 1][3]);
#pragma unroll
      for (int dn = 0; dn < kD / 16; ++dn) {
        uint32_t bo[4], bq[4];
        ldmatrix_x4_trans(bo, do_buf + bt_lane + (kq * 16 * kStride + dn * 16) * 2);
        ldmatrix_x4_trans(bq, q_buf + bt_lane + (kq * 16 * kStride + dn * 16) * 2);
        Ops<T>::mma16(acc_dv, dn, ap, bo);
        Ops<T>::mma16(acc_dk, dn, ads, bq);
      }
      // dSᵀ rows (keys) warp*16 + g and + 8, query columns kq*16 + {0, 8} + 2*t4, 16-bit.
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int col = kq * 16 + half * 8 + 2 * t4;
        *reinterpret_cast<uint32_t*>(ds_out + ((warp * 16 + g) * kSStride + col) * 2) =
            ads[2 * half];
        *reinterpret_cast<uint32_t*>(ds_out + ((warp * 16 + g + 8) * kSStride + col) * 2) =
            ads[2 * half + 1];
      }
    }
  }
  __syncthreads();  // the last tile's dSᵀ visible
  dq_step(m_end - 1, sdS + ((m_end - 1 - m_begin) & 1) * Tr::kSBytes);

  // dK (scaled) and dV of keys key_lo, key_lo + 8 (< L), contiguous (B, H, L, d) outputs.
  T* gdK = static_cast<T*>(p.dk) + static_cast<int64_t>(bh) * L * kD;
  T* gdV = static_cast<T*>(p.dv) + static_cast<int64_t>(bh) * L * kD;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int key = key_lo + half * 8;
    if (key >= L) continue;
#pragma unroll
    for (int i = 0; i < kDT; ++i) {
      const int64_t off = static_cast<int64_t>(key) * kD + i * 8 + 2 * t4;
      *reinterpret_cast<uint32_t*>(gdK + off) =
          Ops<T>::pack(acc_dk[i][2 * half] * p.scale, acc_dk[i][2 * half + 1] * p.scale);
      *reinterpret_cast<uint32_t*>(gdV + off) =
          Ops<T>::pack(acc_dv[i][2 * half], acc_dv[i][2 * half + 1]);
    }
  }
}

// The passes before the main kernel: zero the dQ workspace, D = rowsum(dO ∘ O); with lpad > 0
// in one pass, which also writes rows_pad (flash_bwd_dot_kernel).
template <typename T, int kD>
void prepare(const FlashBwdParams& p, cudaStream_t stream, int64_t lpad = 0) {
  const int64_t rows = static_cast<int64_t>(p.B) * p.H * (lpad > 0 ? lpad : p.L);
  if (lpad == 0) CUDA_CHECK(cudaMemsetAsync(p.dq_accum, 0, rows * kD * sizeof(float), stream));
  constexpr int kRowsPerBlock = 256 / (kD / 8);
  flash_bwd_dot_kernel<T, kD><<<static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock),
                                256, 0, stream>>>(p, lpad);
  CUDA_CHECK_LAUNCH();
}

// The pass after it: dq = scale · dq_accum.
template <typename T>
void finish(const FlashBwdParams& p, cudaStream_t stream) {
  const int64_t n4 = static_cast<int64_t>(p.B) * p.H * p.L * p.d / 4;
  const int64_t blocks = (n4 + 255) / 256;
  flash_bwd_convert_dq_kernel<T><<<static_cast<unsigned>(blocks < 65536 ? blocks : 65536), 256,
                                   0, stream>>>(p.dq_accum, static_cast<T*>(p.dq), n4, p.scale);
  CUDA_CHECK_LAUNCH();
}

template <typename T, typename Tr>
void launch(const FlashBwdParams& p, cudaStream_t stream, int group) {
  prepare<T, Tr::kD>(p, stream);
  auto kernel = flash_bwd_kernel<T, Tr>;
  if (Tr::kSmemBytes > 48 * 1024)
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    Tr::kSmemBytes));
  const dim3 grid(group, flash_num_blocks(p.L, Tr::kBlockN), (p.B * p.H + group - 1) / group);
  kernel<<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(p);
  CUDA_CHECK_LAUNCH();
  finish<T>(p, stream);
}

// Heads per group: Q and dO of a head take 4·L·d bytes, its fp32 dQ workspace 4·L·d more.
inline int bwd_group(const FlashBwdParams& p) {
  return flash_heads_per_group(p.B * p.H, 8ll * p.L * p.d);
}

}  // namespace
}  // namespace flash

void launch_flash_backward_prepare(const FlashBwdParams& p, cudaStream_t stream, int64_t lpad) {
  flash::with_dtype(p.dtype, [&](auto t) {
    using T = decltype(t);
    flash::with_head_dim(p.d,
                         [&](auto d) { flash::prepare<T, decltype(d)::value>(p, stream, lpad); });
  });
}

void launch_flash_backward_finish(const FlashBwdParams& p, cudaStream_t stream) {
  flash::with_dtype(p.dtype, [&](auto t) { flash::finish<decltype(t)>(p, stream); });
}

void launch_flash_backward(const FlashBwdParams& p, cudaStream_t stream) {
  if (p.B <= 0 || p.H <= 0 || p.L <= 0) return;
  flash::check_grid(flash_num_blocks(p.L, flash_bwd_tile(p.d).block_n), int64_t{p.B} * p.H, 65535, p.L,
                    p.d, {p.q_st.row, p.k_st.row, p.v_st.row, p.do_st.row});
  const int64_t rows = static_cast<int64_t>(p.B) * p.H * p.L;
  if ((rows * 8 + 255) / 256 > 0x7fffffff)
    throw std::invalid_argument("flash attention: problem too large for the grid");
  flash::with_dtype(p.dtype, [&](auto t) {
    using T = decltype(t);
    flash::with_head_dim(p.d, [&](auto d) { flash::launch<T, flash::BwdTile<decltype(d)::value>>(p, stream, flash::bwd_group(p)); });
  });
}

}  // namespace gptbench

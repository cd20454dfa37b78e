// Attention backward for Hopper (sm_90a): the FlashAttention-2 backward of flash_bwd.cu with its
// five GEMMs on warpgroup MMAs (wgmma) and its tiles moved by the copy engine (TMA), after
// FlashAttention-3 (Shah et al. 2024). Design notes: docs/flash_attention.md.
//
// Passes: launch_flash_backward_prepare in one pass (dQ workspace zeroed; D = rowsum(dO ∘ O) and
// lse·log2e per head zero-padded to a multiple of 64 rows, rows_pad, so that the main kernel
// reads each query tile's 64 values without bounds checks); the main kernel; and
// launch_flash_backward_finish (dq = scale · workspace).
//
// Main kernel: one block per (key tile of 128 keys, batch·head), 384 threads in three
// warpgroups, as the forward: a producer thread loads K and V once, then query tiles of 64 rows
// (Q, dO) into a two-stage ring, and a dQ warp beside it has the copy engine add the consumers'
// staged dQ into the workspace; two consumer warpgroups own 64 keys each, their
// dK and dV (64 × d fp32) in registers for the whole pass. Per query tile, each consumer:
//   Sᵀ  = K_w Qᵀ,  dPᵀ = V_w dOᵀ            (wgmma, both operands in shared memory, K-major)
//   Pᵀ  = 2^(Sᵀ·scale·log2e − lse·log2e),   dSᵀ = Pᵀ ∘ (dPᵀ − D)   (masked entries 0)
//   dV_w += Pᵀ dO,  dK_w += dSᵀ Q           (Pᵀ, dSᵀ packed to 16 bits as the A operands in
//                                            registers; dO, Q read N-major)
// and stores dSᵀ into shared memory (128-byte swizzled, as the copy engine would); after a
// barrier of both consumers, warpgroup w computes columns w·d/2 .. of dQ_tile = dS K over all
// 128 keys (dS read M-major, K N-major) and stages them in shared memory while its dK product
// runs; the dQ warp has the copy engine add them into the fp32 workspace
// (cp.reduce.async.bulk.tensor) and hands the staging panels back once the copy has read them,
// a tile later (a consumer thread issuing the copy itself, after a second barrier and a wait
// for the previous copy's reads, measured 1–2% slower: H200, 2026-11-26, fwd+bwd at L = 4,096
// and 16,384).
// Order per tile: Sᵀ and dPᵀ; Pᵀ while dPᵀ runs; dV issued, dSᵀ while it runs; dQ, then dK.
// Tiles that can hold no masked entry skip the mask. dSᵀ is double-buffered: tile i+2
// overwrites buffer i % 2 only after both warpgroups passed the barrier of tile i+1, which each
// reaches after its dQ of tile i completed.
// Causal: key tile n visits query tiles from the one holding key n·128 on. Block order
// (grouped_order): heads in groups whose tiles a third of L2 holds (evened out; one group where
// all heads fit half of it), key tile 0 (the heaviest) of each head of the group first, so the
// tail holds the lightest blocks.
//
// Shared memory: K, V (128 × d each), 2 × (Q, dO) (64 × d each), 2 × dSᵀ (128 × 64), the dQ
// tile (64 × d fp32), 2 × 2 × 512 B of lse and D: 115 KB (d = 64), 195 KB (d = 128).
#include <algorithm>
#include <stdexcept>
#include <string>

#include "ops/attention/flash_common.cuh"
#include "ops/attention/flash_kernels.h"
#include "ops/attention/flash_tiles.h"
#include "ops/attention/sm90/flash_maps_sm90.h"
#include "ops/attention/sm90/flash_sm90_common.cuh"
#include "ops/cuda_check.h"
#include "ops/device/hopper.cuh"
#include "ops/device/wgmma.cuh"

namespace gptbench {
namespace flash_sm90 {
namespace {

constexpr int kBlockN = 128;  // keys per block: two consumer warpgroups of 64
constexpr int kBlockM = 64;   // query rows per tile
constexpr int kWgKeys = 64;
constexpr int kStages = 2;
using Block = Warpgroups<2>;  // a producer and two consumer warpgroups
// The last head group alone (head_groups): merged into 2–4 waves of blocks as the forward's, the
// fwd+bwd call gained nothing beyond the forward's share (H200, 2026-11-26, TFLOP/s, alone /
// merged: L = 4,096, d = 128 471–472 / 466–486; L = 16,384, d = 64 427–431 / 415–430).
constexpr int kTailWaves = 0;
constexpr uint32_t kKPanel = kBlockN * 128;      // 128 rows × 128 bytes
constexpr uint32_t kQPanel = kBlockM * 128;      // 64 rows × 128 bytes
constexpr uint32_t kDsTile = kBlockN * kBlockM * 2;  // dSᵀ: 128 keys × 64 queries, 16-bit
constexpr uint32_t kRowBytes = kBlockM * 4;      // lse·log2e or D of one query tile
constexpr uint32_t kDqPanel = kBlockM * 128;     // 64 rows × 32 fp32 columns of dQ

template <int kD>
struct Smem {
  static constexpr uint32_t kKTile = (kD / kPanelCols) * kKPanel;
  static constexpr uint32_t kQTile = (kD / kPanelCols) * kQPanel;
  static constexpr uint32_t kK = 0;
  static constexpr uint32_t kV = kK + kKTile;
  static constexpr uint32_t kQ = kV + kKTile;             // kStages tiles
  static constexpr uint32_t kDO = kQ + kStages * kQTile;  // kStages tiles
  static constexpr uint32_t kDS = kDO + kStages * kQTile;  // two buffers
  static constexpr uint32_t kDQ = kDS + 2 * kDsTile;      // dQ tile, fp32, 32-column panels
  // Per consumer warpgroup, two buffers of (lse·log2e, D) of a query tile.
  static constexpr uint32_t kRows = kDQ + kD / 32 * kDqPanel;
  static constexpr uint32_t kBars = kRows + 2 * 2 * 2 * kRowBytes;
  // kv_full, then per stage: q_full, q_empty
  static constexpr uint32_t kBytes = kBars + 8 * (1 + 2 * kStages) + 1024;
  static __device__ uint32_t kv_full(uint32_t base) { return base + kBars; }
  // Consumer w's dQ staging panels: its d/2 columns, d/64 panels of 32.
  static __device__ uint32_t dq_panels(uint32_t base, int w) {
    return base + kDQ + w * (kD / 64) * kDqPanel;
  }
  static __device__ uint32_t q_full(uint32_t base, int s) { return base + kBars + 8 * (1 + s); }
  static __device__ uint32_t q_empty(uint32_t base, int s) {
    return base + kBars + 8 * (1 + kStages + s);
  }
};

__device__ __forceinline__ int stage_of(int it) { return it % kStages; }
__device__ __forceinline__ uint32_t parity_of(int it) { return (it / kStages) & 1; }

// The query tiles key tile n_block visits: [first, count).
__device__ __forceinline__ int first_query_tile(int n_block, bool causal) {
  return causal ? n_block * kBlockN / kBlockM : 0;
}

template <int kD>
__device__ void produce(uint32_t base, const CUtensorMap* tq, const CUtensorMap* tk,
                        const CUtensorMap* tv, const CUtensorMap* tdo, int b, int h, int n0,
                        int m_first, int m_count) {
  using S = Smem<kD>;
  constexpr int kPanels = kD / kPanelCols;
  sm90::mbar_arrive_expect_tx(S::kv_full(base), 2 * S::kKTile);
#pragma unroll
  for (int p = 0; p < kPanels; ++p) {
    sm90::tma_load_4d(base + S::kK + p * kKPanel, tk, S::kv_full(base), p * kPanelCols, n0, h, b);
    sm90::tma_load_4d(base + S::kV + p * kKPanel, tv, S::kv_full(base), p * kPanelCols, n0, h, b);
  }
  for (int it = 0; it < m_count; ++it) {
    const int s = stage_of(it), m0 = (m_first + it) * kBlockM;
    const uint32_t full = S::q_full(base, s);
    if (it >= kStages) sm90::mbar_wait(S::q_empty(base, s), parity_of(it) ^ 1);
    sm90::mbar_arrive_expect_tx(full, 2 * S::kQTile);
#pragma unroll
    for (int p = 0; p < kPanels; ++p) {
      sm90::tma_load_4d(base + S::kQ + s * S::kQTile + p * kQPanel, tq, full, p * kPanelCols, m0,
                        h, b);
      sm90::tma_load_4d(base + S::kDO + s * S::kQTile + p * kQPanel, tdo, full, p * kPanelCols,
                        m0, h, b);
    }
  }
}

// Named barriers: 1 both consumers (dSᵀ stored), 2 + w consumer w alone, 4 + w and 6 + w
// consumer w and the dQ warp (its staging panels empty, full).
constexpr int kDqEmpty = 4, kDqFull = 6, kDqThreads = 128 + 32;

// The dQ warp (warp 1 of the producer warpgroup): per query tile, each consumer's staged dQ
// columns into the fp32 workspace by the copy engine (reduce-add; rows beyond L clipped by the
// map), then that consumer's panels handed back once the copy has read them.
template <int kD>
__device__ void write_dq(uint32_t base, const CUtensorMap* tdq, int b, int h, int m_first,
                         int m_count) {
  using S = Smem<kD>;
  constexpr int kDq = kD / 2;
  const bool lead = threadIdx.x % 32 == 0;
#pragma unroll
  for (int w = 0; w < 2; ++w) sm90::named_barrier_arrive(kDqEmpty + w, kDqThreads);
  for (int it = 0; it < m_count; ++it) {
    const int m0 = (m_first + it) * kBlockM;
#pragma unroll
    for (int w = 0; w < 2; ++w) {
      sm90::named_barrier_sync(kDqFull + w, kDqThreads);
      if (lead) {
#pragma unroll
        for (int pnl = 0; pnl < kDq / 32; ++pnl)
          sm90::tma_reduce_add_4d(tdq, S::dq_panels(base, w) + pnl * kDqPanel, w * kDq + pnl * 32,
                                  m0, h, b);
        sm90::bulk_commit();
      }
    }
    if (it + 1 == m_count) break;
    if (lead) sm90::bulk_wait_read<1>();  // consumer 0's copy has read its panels
    __syncwarp();
    sm90::named_barrier_arrive(kDqEmpty, kDqThreads);
    if (lead) sm90::bulk_wait_read<0>();
    __syncwarp();
    sm90::named_barrier_arrive(kDqEmpty + 1, kDqThreads);
  }
  if (lead) sm90::bulk_wait<0>();
}

template <typename T, int kD>
__device__ void consume(uint32_t base, const FlashBwdParams& p, int b, int h, int n0, int wg,
                        int m_first, int m_count, float* smem_rows) {
  using S = Smem<kD>;
  constexpr int kDq = kD / 2;  // dQ columns this warpgroup computes
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int g = lane >> 2, t4 = lane & 3;
  const int wg_n0 = n0 + wg * kWgKeys;
  const int key0 = wg_n0 + warp * 16 + g, key1 = key0 + 8;
  const int L = p.L;
  const bool causal = p.causal;
  const float scale_log2 = p.scale * flash::kLog2e;
  const int64_t bh = int64_t{b} * p.H + h;
  const uint32_t dq_smem = S::dq_panels(base, wg);

  float dk[kD / 2], dv[kD / 2];
#pragma unroll
  for (int i = 0; i < kD / 2; ++i) dk[i] = dv[i] = 0.f;
  float st[kBlockM / 2], dpt[kBlockM / 2], dq[kDq / 2];
  uint32_t pa[kBlockM / 16][4], dsa[kBlockM / 16][4];

  // lse·log2e and D of query tile `it`: thread i of the warpgroup loads value i of the tile's
  // 2 × 64 (rows_pad is padded, so no bounds), one tile ahead, into this warpgroup's buffer
  // it % 2; the warpgroup's barriers before dQ order the stores before the next tile's reads.
  const int tid_wg = threadIdx.x % 128;
  const int64_t lpad = flash_sm90_rows_pad(L);
  const float* rows_src = p.rows_pad + (tid_wg < kBlockM ? 0 : int64_t{p.B} * p.H * lpad) +
                          bh * lpad + tid_wg % kBlockM;
  float* rows = smem_rows + wg * 2 * 2 * kBlockM;
  auto fetch_rows = [&](int it) { return rows_src[(m_first + it) * kBlockM]; };
  rows[tid_wg] = fetch_rows(0);
  sm90::named_barrier_sync(2 + wg, 128);

  // Zeroes the masked entries of a Pᵀ fragment of query tile m0: this thread's row r holds key
  // key_r and query columns c = 8j + 2·t4 + (e & 1); it keeps lo_r <= c < hi_r (flash_masked:
  // no key or query past L, under the causal mask no query before the key).
  auto zero_masked = [&](float (&pt)[kBlockM / 2], int m0) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int key = r == 0 ? key0 : key1;
      const int lo = (causal ? key - m0 : 0) - 2 * t4;
      const int hi = (key >= L ? 0 : L - m0) - 2 * t4;
#pragma unroll
      for (int j = 0; j < kBlockM / 8; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int c = 8 * j + e;
          if (c < lo || c >= hi) pt[4 * j + 2 * r + e] = 0.f;
        }
    }
  };

  // Shared-memory descriptors (ops/device/hopper.cuh), advanced per stage and per wgmma: this
  // warpgroup's keys of K and V, K-major; the first stage of Q and dO, K-major (16-byte LBO,
  // unused) and N-major (LBO one 64-column panel); dSᵀ read M-major; the d/2 columns of K
  // (N-major) whose dQ this warpgroup computes.
  const uint64_t k_kmajor = sm90::sw128_desc(base + S::kK + wg * kWgKeys * 128, 16, 1024);
  const uint64_t v_kmajor = sm90::sw128_desc(base + S::kV + wg * kWgKeys * 128, 16, 1024);
  const uint64_t q_kmajor0 = sm90::sw128_desc(base + S::kQ, 16, 1024);
  const uint64_t do_kmajor0 = sm90::sw128_desc(base + S::kDO, 16, 1024);
  const uint64_t q_nmajor0 = sm90::sw128_desc(base + S::kQ, kQPanel, 1024);
  const uint64_t do_nmajor0 = sm90::sw128_desc(base + S::kDO, kQPanel, 1024);
  const uint64_t ds_mmajor0 = sm90::sw128_desc(base + S::kDS, kDsTile, 1024);
  const uint64_t k_cols_nmajor = sm90::sw128_desc(
      base + S::kK + (kD == 128 ? wg * kKPanel : wg * kDq * 2), kKPanel, 1024);

  sm90::mbar_wait(S::kv_full(base), 0);
  for (int it = 0; it < m_count; ++it) {
    const int s = stage_of(it), m0 = (m_first + it) * kBlockM;
    const uint32_t ds_buf = base + S::kDS + (it % 2) * kDsTile;
    // This tile's operands: Q and dO K-major (Sᵀ, dPᵀ) and N-major (dK, dV), dSᵀ M-major (dQ).
    const uint64_t q_kmajor = sm90::desc_advance(q_kmajor0, s * S::kQTile);
    const uint64_t do_kmajor = sm90::desc_advance(do_kmajor0, s * S::kQTile);
    const uint64_t q_nmajor = sm90::desc_advance(q_nmajor0, s * S::kQTile);
    const uint64_t do_nmajor = sm90::desc_advance(do_nmajor0, s * S::kQTile);
    const uint64_t ds_mmajor = sm90::desc_advance(ds_mmajor0, (it % 2) * kDsTile);
    const float* lse2 = rows + (it % 2) * 2 * kBlockM;
    const float* dsum = lse2 + kBlockM;
    const float next_rows = it + 1 < m_count ? fetch_rows(it + 1) : 0.f;
    sm90::mbar_wait(S::q_full(base, s), parity_of(it));

    // Sᵀ = K_w Qᵀ and dPᵀ = V_w dOᵀ: K-major A (this warpgroup's 64 keys) and B (64 queries).
    auto issue_transposed_scores = [&](float (&acc)[kBlockM / 2], uint64_t keys, uint64_t rows) {
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk) {
        const uint32_t along = (kk % 4) * 32;
        sm90::mma_ss<T, kBlockM>(acc, sm90::desc_advance(keys, (kk / 4) * kKPanel + along),
                                 sm90::desc_advance(rows, (kk / 4) * kQPanel + along), kk > 0);
      }
      sm90::wgmma_commit();
    };
    sm90::wgmma_fence();
    issue_transposed_scores(st, k_kmajor, q_kmajor);
    issue_transposed_scores(dpt, v_kmajor, do_kmajor);

    // Pᵀ (rows: keys, columns: queries); then, in the tiles that can hold masked entries only
    // (the diagonal, the last rows and columns), those entries 0.
    sm90::wgmma_wait<1>();
    sm90::pin_registers(st);
#pragma unroll
    for (int j = 0; j < kBlockM / 8; ++j) {
      const float2 l2 = *reinterpret_cast<const float2*>(lse2 + 8 * j + 2 * t4);
#pragma unroll
      for (int e = 0; e < 4; ++e)
        st[4 * j + e] = flash::fast_exp2(st[4 * j + e] * scale_log2 - (e & 1 ? l2.y : l2.x));
    }
    if (flash_tile_needs_mask(m0, wg_n0, kBlockM, kWgKeys, L, causal)) zero_masked(st, m0);
    // dV_w += Pᵀ dO as soon as Pᵀ is packed (it runs while dSᵀ is computed), then dK_w += dSᵀ Q:
    // 16 queries per wgmma; dO and Q N-major (d contiguous), column panels of 64 (LBO one
    // panel), 8-row groups 1024 bytes apart.
    auto accumulate_product = [&](float (&acc)[kD / 2], const uint32_t (&a)[kBlockM / 16][4],
                                  uint64_t rows) {
      sm90::pin_registers(acc);
      sm90::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kBlockM / 16; ++kk)
        sm90::mma_rs_nmajor<T, kD>(acc, a[kk], sm90::desc_advance(rows, kk * 2048));
      sm90::wgmma_commit();
    };
    pack_a_fragments<T, kBlockM>(st, pa);
    accumulate_product(dv, pa, do_nmajor);
    sm90::wgmma_wait<1>();  // dPᵀ is done; dV may still run
    sm90::pin_registers(dpt);
    float2 d2[kBlockM / 8];
#pragma unroll
    for (int j = 0; j < kBlockM / 8; ++j)
      d2[j] = *reinterpret_cast<const float2*>(dsum + 8 * j + 2 * t4);
#pragma unroll
    for (int j = 0; j < kBlockM / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        dpt[4 * j + e] = st[4 * j + e] * (dpt[4 * j + e] - (e & 1 ? d2[j].y : d2[j].x));
    // dSᵀ as A fragments, and into shared memory for dQ (128-byte swizzled rows of 64 queries:
    // this thread's two columns of chunk j).
    const int r0 = wg * kWgKeys + warp * 16 + g;
    pack_a_fragments<T, kBlockM>(dpt, dsa);
#pragma unroll
    for (int j = 0; j < kBlockM / 8; ++j) {
      const uint32_t at = ds_buf + sm90::sw128_offset(r0, j) + 4 * t4;
      sm90::st_shared(at, dsa[j / 2][(j % 2) * 2]);
      sm90::st_shared(at + 8 * 128, dsa[j / 2][(j % 2) * 2 + 1]);  // row + 8: the next atom
    }
    sm90::fence_async_shared();

    // dQ_tile[:, wg·d/2 ..] = dS K over all 128 keys: A = dS M-major (dSᵀ rows are keys), B = K
    // N-major; 16 keys per wgmma. Then dK_w += dSᵀ Q, which runs while dQ goes out (issued
    // before dQ, it made dQ wait for it: fwd+bwd 3–7 % slower on an H200).
    sm90::named_barrier_sync(1, 256);  // both warpgroups' dSᵀ are in shared memory
    sm90::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk)
      sm90::mma_ss<T, kDq, 1, 1>(dq, sm90::desc_advance(ds_mmajor, kk * 2048),
                                 sm90::desc_advance(k_cols_nmajor, kk * 2048), kk > 0);
    sm90::wgmma_commit();
    accumulate_product(dk, dsa, q_nmajor);
    sm90::wgmma_wait<1>();  // dV and dQ are done
    sm90::pin_registers(dq);
    sm90::pin_registers(dv);

    // dQ into this warpgroup's staging panels (32-column fp32 panels, 128-byte swizzle) once the
    // dQ warp's copy has read the previous tile's, then over to the dQ warp.
    rows[((it + 1) % 2) * 2 * kBlockM + tid_wg] = next_rows;
    sm90::named_barrier_sync(kDqEmpty + wg, kDqThreads);
    const int q_row = warp * 16 + g;
#pragma unroll
    for (int j = 0; j < kDq / 8; ++j) {
      // Columns 8j + 2t4, +1: panel j / 4, 16-byte chunk 2 (j % 4) + t4 / 2, half t4 % 2.
      const uint32_t panel = dq_smem + (j / 4) * kDqPanel;
      const int chunk = 2 * (j % 4) + t4 / 2;
      const uint32_t half = 8 * (t4 % 2);
      const uint32_t at = panel + sm90::sw128_offset(q_row, chunk) + half;
      sm90::st_shared(at, dq[4 * j], dq[4 * j + 1]);
      sm90::st_shared(at + 8 * 128, dq[4 * j + 2], dq[4 * j + 3]);  // row + 8: the next atom
    }
    sm90::fence_async_shared();
    sm90::named_barrier_arrive(kDqFull + wg, kDqThreads);
    // dK is done: every reader of this Q and dO stage is, so the producer may refill it.
    sm90::wgmma_wait<0>();
    sm90::pin_registers(dk);
    sm90::warp_arrive(S::q_empty(base, s));
  }

  // dK = scale · dSᵀ Q, dV = Pᵀ dO, to 16 bits.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int key = r == 0 ? key0 : key1;
    if (key >= L) continue;
    store_row<T, kD>(static_cast<T*>(p.dk) + (bh * L + key) * kD, dk, r, p.scale);
    store_row<T, kD>(static_cast<T*>(p.dv) + (bh * L + key) * kD, dv, r, 1.f);
  }
}

template <typename T, int kD>
__global__ void __launch_bounds__(Block::kThreads, 1)
    flash_bwd_sm90_kernel(const __grid_constant__ CUtensorMap tq,
                          const __grid_constant__ CUtensorMap tk,
                          const __grid_constant__ CUtensorMap tv,
                          const __grid_constant__ CUtensorMap tdo,
                          const __grid_constant__ CUtensorMap tdq, const FlashBwdParams p,
                          const FlashHeadGroups groups) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using S = Smem<kD>;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const uint32_t base = aligned_base(smem_raw);
  float* smem_rows = smem_at<float>(smem_raw, S::kRows);
  const HeadItem hi = grouped_order(blockIdx.x, (p.L + kBlockN - 1) / kBlockN, groups, p.B * p.H);
  const int n_block = hi.item, n0 = n_block * kBlockN;
  const int bh = hi.bh, b = bh / p.H, h = bh % p.H;
  const int m_first = first_query_tile(n_block, p.causal);
  const int m_count = (p.L + kBlockM - 1) / kBlockM - m_first;
  const int wg = sm90::warpgroup_index();

  if (threadIdx.x == 0) {
    sm90::mbar_init(S::kv_full(base), 1);
    for (int s = 0; s < kStages; ++s) {
      sm90::mbar_init(S::q_full(base, s), 1);
      sm90::mbar_init(S::q_empty(base, s), Block::kConsumerWarps);
    }
    sm90::mbar_init_fence();
  }
  __syncthreads();

  if (wg == 0) {
    sm90::setmaxnreg_dec<Block::kProducerRegs>();
    if (threadIdx.x == 0) {
      produce<kD>(base, &tq, &tk, &tv, &tdo, b, h, n0, m_first, m_count);
    } else if (threadIdx.x / 32 == 1) {
      write_dq<kD>(base, &tdq, b, h, m_first, m_count);
    }
  } else {
    sm90::setmaxnreg_inc<Block::kConsumerRegs>();
    consume<T, kD>(base, p, b, h, n0, wg - 1, m_first, m_count, smem_rows);
  }
#endif
}

template <typename T, int kD>
void launch(const FlashBwdParams& p, cudaStream_t stream) {
  constexpr int smem = Smem<kD>::kBytes;
  allow_smem<flash_bwd_sm90_kernel<T, kD>>(smem);
  auto map = [&](const void* x, const FlashStrides& st, int rows) {
    return tensor_map(x, st, p.B, p.H, p.L, p.d, p.dtype, rows);
  };
  const int bh = p.B * p.H;
  const dim3 grid(static_cast<unsigned>((p.L + kBlockN - 1) / kBlockN * bh));
  flash_bwd_sm90_kernel<T, kD><<<grid, Block::kThreads, smem, stream>>>(
      map(p.q, p.q_st, kBlockM), map(p.k, p.k_st, kBlockN), map(p.v, p.v_st, kBlockN),
      map(p.dout, p.do_st, kBlockM),
      tensor_map_f32(p.dq_accum, {int64_t{p.H} * p.L * p.d, int64_t{p.L} * p.d, p.d}, p.B, p.H,
                     p.L, p.d, kBlockM),
      p, head_groups(12 * int64_t{p.L} * p.d, bh,  // K, V, Q, dO (16-bit), dQ (fp32)
                     (p.L + kBlockN - 1) / kBlockN, kTailWaves));
  CUDA_CHECK_LAUNCH();
}

}  // namespace
}  // namespace flash_sm90

std::string flash_backward_sm90_unsupported(const FlashBwdParams& p, int cc_major, int cc_minor) {
  return flash_sm90::unsupported(p.d, int64_t{p.B} * p.H, p.L, cc_major, cc_minor,
                                 {p.q_st, p.k_st, p.v_st, p.do_st}, {p.q, p.k, p.v, p.dout});
}

void launch_flash_backward_sm90(const FlashBwdParams& p, cudaStream_t stream) {
  if (p.B <= 0 || p.H <= 0 || p.L <= 0) return;
  if (p.rows_pad == nullptr)
    throw std::invalid_argument("flash attention (sm90): the rows_pad workspace is missing");
  flash_sm90::with_type_and_dim(p, [&](auto t, auto d) {
    launch_flash_backward_prepare(p, stream, flash_sm90_rows_pad(p.L));
    flash_sm90::launch<decltype(t), decltype(d)::value>(p, stream);
    launch_flash_backward_finish(p, stream);
  });
}

}  // namespace gptbench

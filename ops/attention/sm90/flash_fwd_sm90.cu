// Attention forward for Hopper (sm_90a): the FlashAttention-2 algorithm of flash_fwd.cu with the
// tile movement and the two GEMMs on Hopper's own units, after FlashAttention-3 (Shah et al.
// 2024): the tensor copy engine (TMA) loads Q, K and V tiles into shared memory and warpgroup
// MMAs (wgmma) compute S = Q Kᵀ and O += P V. Design notes: docs/flash_attention.md.
//
// Persistent blocks, one per multiprocessor, take work tiles (kBlockM query rows of one
// batch·head: 192 at d = 64, 128 at d = 128, see Shape) from a counter; a producer warpgroup
// and two or three consumer warpgroups:
//   - warpgroup 0, the producer: one thread takes the tiles, hands their ids to the consumers
//     (a two-slot mbarrier ring) and issues the copies: Q once per tile (when the consumers
//     released the previous tile's), K and V tiles into rings of kStages buffers, each refilled
//     once the consumers released it (mbarriers `*_empty`). Its registers are lowered to 24 or
//     32 (setmaxnreg) and given to
//   - the consumers (240 registers each with two, 160 with three): 64 query rows each. Per key
//     tile of 128 they issue S_j = Q K_jᵀ (d/16 wgmma, both operands in shared memory) with
//     O += P_{j-1} V_{j-1} (8 wgmma, P from registers, V read N-major), then mask where a tile can
//     hold masked elements and run the online softmax of S_j while P V runs; they take turns
//     to issue (a ring, see consume).
// Tiles sit in shared memory as the copy engine writes them with 128-byte swizzle: panels of
// 64 columns (128 bytes) × the tile's rows, d/64 panels per tile; wgmma reads the same layout
// through its descriptors (ops/device/hopper.cuh), so no thread touches Q, K or V in shared
// memory. Rows outside 0 .. L-1 are zero-filled by the copy engine and masked; only rows inside
// are written. Causal: a query tile visits key tiles up to its diagonal, the diagonal (masked)
// tiles first.
// Work order (grouped_order): the query tiles of a group of heads, heaviest first, so the blocks
// at work at once read the K and V of a few heads from L2 (heads side by side, the 132 resident
// blocks streamed 132 heads' K and V from memory: 445 against 543 TFLOP/s at L = 16,384,
// d = 128) and the tail holds the lightest tiles; one group where all heads' K and V fit half
// the L2 (flash_sm90_heads_per_group).
//
// Shared memory: Q (kBlockM × d) + kStages × (K + V) (128 × d each) = 88 KB (d = 64), 160 KB
// (128), plus the mbarriers: one block per SM.
//
// The FP8 forward (launch_flash_forward_sm90_fp8, ops/attention/flash_fp8.h) is this kernel with
// T = e4m3 (Elem): k = 32 per wgmma, V given transposed (8-bit operands are K-major only) with
// its keys in the order P's register operand packs them (pack_a_fragments_e4m3), q's and k's
// block scales folded into the softmax's scale per key tile, v's into O's rescale, P as
// 2^8 · exp(s − m), the output in bf16; d = 128.
#include <cuda_fp8.h>

#include <algorithm>
#include <cfloat>
#include <stdexcept>
#include <string>

#include "ops/attention/flash_common.cuh"
#include "ops/attention/flash_kernels.h"
#include "ops/attention/flash_tiles.h"
#include "ops/attention/sm90/flash_maps_sm90.h"
#include "ops/attention/sm90/flash_sm90_common.cuh"
#include "ops/cuda_check.h"
#include "ops/device/attributes.h"
#include "ops/device/hopper.cuh"
#include "ops/device/wgmma.cuh"

namespace gptbench {
namespace flash_sm90 {
namespace {

constexpr int kBlockN = 128;       // keys per tile
constexpr int kWgRows = 64;        // query rows per consumer warpgroup
constexpr int kStages = 2;         // key/value buffers in the ring
constexpr uint32_t kKvPanel = kBlockN * 128;  // a K or V panel: 128 rows × 128 bytes
// The last head groups merged into one of at least 3 work tiles per multiprocessor (head_groups):
// H200, 2026-11-26, forward at B = 8, H = 12 in TFLOP/s, the last group alone / merged to 2, 3, 4
// waves: L = 4,096, d = 128 525–531 / 537–546 / 536–545 / 535–539; d = 64 448–449 / 448–449 /
// 453–457 / 451–458; at L = 1,024, d = 128 four waves merge every group: 356–358 against 370–378.
constexpr int kTailWaves = 3;

// The element type: 16-bit (bf16, fp16: 64 per 128-byte swizzle row, k = 16 per wgmma, V read
// N-major, the output in the same type) or e4m3 (the FP8 forward: 128 per row, k = 32, V given
// transposed and read K-major, per-block scales, the output in bf16).
template <typename T>
struct Elem {
  static constexpr bool kFp8 = false;
  static constexpr int kBytes = 2;
  using Out = T;
};
template <>
struct Elem<__nv_fp8_e4m3> {
  static constexpr bool kFp8 = true;
  static constexpr int kBytes = 1;
  using Out = __nv_bfloat16;
};
// 128-byte panels of a row of kD elements, and the elements in one.
template <typename T, int kD>
constexpr int kPanels = kD * Elem<T>::kBytes / 128;
template <typename T>
constexpr int kColsPerPanel = 128 / Elem<T>::kBytes;

// The block per head dim: three consumer warpgroups (192 query rows) at d = 64, where the
// softmax's instructions and exponentials match the MMAs' time and a third warpgroup per
// scheduler hides more of them (FlashAttention-3's choice); two (128 rows) at d = 128, whose
// consumers need 240 registers.
template <int kD>
struct Shape {
  static constexpr int kConsumers = kD == 64 ? 3 : 2;
  static constexpr int kBlockM = kWgRows * kConsumers;  // query rows per work tile
  static constexpr uint32_t kQPanel = kBlockM * 128;    // a Q panel: kBlockM rows × 128 bytes
  using Block = Warpgroups<kConsumers>;
};

// Byte offsets in the (1024-aligned) dynamic shared memory.
template <typename T, int kD>
struct Smem {
  static constexpr uint32_t kQTile = kPanels<T, kD> * Shape<kD>::kQPanel;  // kBlockM × d
  static constexpr uint32_t kTile = kPanels<T, kD> * kKvPanel;  // a 128 × d K or V tile
  static constexpr uint32_t kQ = 0;
  static constexpr uint32_t kK = kQ + kQTile;             // kStages tiles
  static constexpr uint32_t kV = kK + kStages * kTile;    // kStages tiles
  static constexpr uint32_t kBars = kV + kStages * kTile;  // mbarriers, 8 bytes each
  // q_full, then per stage: k_full, k_empty, v_full, v_empty; then q_empty, tile_full[2],
  // tile_empty[2]; then the two tile-id slots (4 bytes each)
  static constexpr uint32_t kBarCount = 1 + 4 * kStages + 5;
  static constexpr uint32_t kTileIds = kBars + 8 * kBarCount;
  static constexpr uint32_t kBytes = kTileIds + 8 + 1024;  // + alignment slack
  static __device__ uint32_t q_full(uint32_t base) { return base + kBars; }
  static __device__ uint32_t q_empty(uint32_t base) { return base + kBars + 8 * (1 + 4 * kStages); }
  static __device__ uint32_t tile_full(uint32_t base, int slot) {
    return base + kBars + 8 * (2 + 4 * kStages + slot);
  }
  static __device__ uint32_t tile_empty(uint32_t base, int slot) {
    return base + kBars + 8 * (4 + 4 * kStages + slot);
  }
  static __device__ uint32_t k_full(uint32_t base, int s) { return base + kBars + 8 * (1 + s); }
  static __device__ uint32_t k_empty(uint32_t base, int s) {
    return base + kBars + 8 * (1 + kStages + s);
  }
  static __device__ uint32_t v_full(uint32_t base, int s) {
    return base + kBars + 8 * (1 + 2 * kStages + s);
  }
  static __device__ uint32_t v_empty(uint32_t base, int s) {
    return base + kBars + 8 * (1 + 3 * kStages + s);
  }
};

// Key tile `it` of the visiting order sits in ring stage it % kStages; its full and empty
// barriers complete once per use, so use number it / kStages waits for parity (it / kStages) & 1.
__device__ __forceinline__ int stage_of(int it) { return it % kStages; }
__device__ __forceinline__ uint32_t parity_of(int it) { return (it / kStages) & 1; }

// Work tile t of the persistent grid, in grouped_order: the query tiles of a group of heads,
// heaviest (last) first, so that the blocks at work at once read the K and V of a few heads from
// L2 and the lightest tiles come last. The tiles end at row L: when kBlockM does not divide L
// the first one starts before row 0 (those rows are zero-filled by the copy engine, masked and
// not written), so the partial tile is the one the causal mask makes lightest. The key tiles it
// visits: under the causal mask up to the one holding its last row.
struct WorkTile {
  int b, h, m0, n_tiles;
};
template <int kBlockM>
__device__ __forceinline__ WorkTile work_tile(int t, const FlashFwdParams& p,
                                              FlashHeadGroups groups) {
  const int m_blocks = (p.L + kBlockM - 1) / kBlockM;
  const HeadItem hi = grouped_order(t, m_blocks, groups, p.B * p.H);
  const int bh = hi.bh, m_block = m_blocks - 1 - hi.item;
  const int m0 = p.L - (m_blocks - m_block) * kBlockM;
  const int all = (p.L + kBlockN - 1) / kBlockN;
  return {bh / p.H, bh % p.H, m0, p.causal ? min(all, (m0 + kBlockM + kBlockN - 1) / kBlockN) : all};
}

// The producer's share of one work tile: Q (once the consumers released the previous tile's),
// then K and V tiles from the last (diagonal) key tile to the first, V one tile behind K (the
// consumers use V_j while they compute S_{j+1}), each into its own ring; it0 is the ring
// position of the tile's first key tile, local the number of work tiles this block did before.
template <typename T, int kD>
__device__ void produce(uint32_t base, const CUtensorMap* tq, const CUtensorMap* tk,
                        const CUtensorMap* tv, const WorkTile& w, int it0, int local) {
  using S = Smem<T, kD>;
  constexpr int kNp = kPanels<T, kD>;
  auto load = [&](const CUtensorMap* map, uint32_t dst, uint32_t full, int row0,
                  uint32_t panel) {
    sm90::mbar_arrive_expect_tx(full, kNp * panel);
#pragma unroll
    for (int p = 0; p < kNp; ++p)
      sm90::tma_load_4d(dst + p * panel, map, full, p * kColsPerPanel<T>, row0, w.h, w.b);
  };
  // FP8: V is given transposed (B, H, d, keys), one panel of 128 keys × d rows.
  auto load_vt = [&](uint32_t dst, uint32_t full, int key0) {
    sm90::mbar_arrive_expect_tx(full, S::kTile);
    sm90::tma_load_4d(dst, tv, full, key0, 0, w.h, w.b);
  };
  auto load_kv = [&](bool is_k, int j) {
    const int it = it0 + j, s = stage_of(it);
    if (it >= kStages)
      sm90::mbar_wait(is_k ? S::k_empty(base, s) : S::v_empty(base, s), parity_of(it) ^ 1);
    const int row0 = (w.n_tiles - 1 - j) * kBlockN;
    if (is_k)
      load(tk, base + S::kK + s * S::kTile, S::k_full(base, s), row0, kKvPanel);
    else if constexpr (Elem<T>::kFp8)
      load_vt(base + S::kV + s * S::kTile, S::v_full(base, s), row0);
    else
      load(tv, base + S::kV + s * S::kTile, S::v_full(base, s), row0, kKvPanel);
  };
  if (local > 0) sm90::mbar_wait(S::q_empty(base), (local - 1) & 1);
  load(tq, base + S::kQ, S::q_full(base), w.m0, Shape<kD>::kQPanel);
  for (int j = 0; j < w.n_tiles; ++j) {
    load_kv(true, j);
    if (j > 0) load_kv(false, j - 1);
  }
  load_kv(false, w.n_tiles - 1);
}

// A consumer warpgroup: rows m0 + 64·wg .. +63 of the query tile (those before row 0 or from
// row L on are computed from zero-filled rows, masked under the causal mask, and not written).
// Per key tile j (in visiting order) it issues S_j = Q K_jᵀ and O += P_{j-1} V_{j-1}
// together, then computes the softmax of S_j while the tensor cores run P V
// (FlashAttention-3's overlap within a warpgroup). The consumer warpgroups take turns to issue
// their MMAs, in a ring (named barrier 1 + wg is this one's turn; with two: ping-pong), so one's
// softmax runs under the others' MMAs.
template <typename T, int kD>
__device__ void consume(uint32_t base, const FlashFwdParams& p, const WorkTile& w, int wg,
                        int it0, int local) {
  const int b = w.b, h = w.h, m0 = w.m0, n_tiles = w.n_tiles;
  using S = Smem<T, kD>;
  constexpr bool kFp8 = Elem<T>::kFp8;
  constexpr int kKStep = 32 / Elem<T>::kBytes;  // k of one wgmma: 32 bytes of a row
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int g = lane >> 2, t4 = lane & 3;
  const int wg_m0 = m0 + wg * kWgRows;
  const int row0 = wg_m0 + warp * 16 + g, row1 = row0 + 8;
  const int L = p.L;
  const bool causal = p.causal;
  const float scale_log2 = p.scale * flash::kLog2e;

  float o[kD / 2];
#pragma unroll
  for (int i = 0; i < kD / 2; ++i) o[i] = 0.f;
  float sc[kBlockN / 2];  // S of the newest tile, then its P (fp32)
  uint32_t pa[kBlockN / kKStep][4];  // P of the previous tile as wgmma's A operand
  // FP8: the logits' scale per key tile (q's block scale times k's) and v's block scales, by
  // visiting order; P is computed as 2^8 · p (exact in e4m3 down to p = 2^-14, which l carries
  // too and O / l cancels) so that small probabilities keep their mantissa.
  const int64_t bh = int64_t{b} * p.H + h;
  const int n_blocks = (L + kBlockN - 1) / kBlockN;
  float q_scale = 1.f;
  if constexpr (kFp8) {
    const int m_blocks = (L + Shape<kD>::kBlockM - 1) / Shape<kD>::kBlockM;
    q_scale = p.q_scale[bh * m_blocks + m_blocks - (L - m0) / Shape<kD>::kBlockM];
  }
  auto tile_scale = [&](int j) {  // base-2 logits per unit of Q·K for key tile j (visiting order)
    return kFp8 ? scale_log2 * q_scale * p.k_scale[bh * n_blocks + n_tiles - 1 - j] : scale_log2;
  };
  auto v_scale = [&](int j) { return kFp8 ? p.v_scale[bh * n_blocks + n_tiles - 1 - j] : 1.f; };
  constexpr float kPBias = kFp8 ? 8.f : 0.f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};

  // The ring: this warpgroup may issue MMAs once the one before it has issued its own.
  constexpr int kConsumers = Shape<kD>::kConsumers;
  auto my_turn = [&] { sm90::named_barrier_sync(1 + wg, 256); };
  auto your_turn = [&] { sm90::named_barrier_arrive(1 + (wg + 1) % kConsumers, 256); };
  // Descriptors (ops/device/hopper.cuh), advanced per stage and per wgmma: this warpgroup's
  // rows of Q and the first stage of K, K-major; the first stage of V, N-major.
  const uint64_t q_kmajor = sm90::sw128_desc(base + S::kQ + wg * kWgRows * 128, 16, 1024);
  const uint64_t k_kmajor0 = sm90::sw128_desc(base + S::kK, 16, 1024);
  const uint64_t v0 = kFp8 ? sm90::sw128_desc(base + S::kV, 16, 1024)  // Vᵀ, K-major
                           : sm90::sw128_desc(base + S::kV, kKvPanel, 1024);
  // S = Q Kᵀ: K-major A (this warpgroup's 64 rows of Q) and B (the 128 keys), 16 columns of d
  // per wgmma: 32 bytes along the swizzled row within a panel.
  auto issue_s = [&](int j) {
    const uint64_t k_kmajor = sm90::desc_advance(k_kmajor0, stage_of(it0 + j) * S::kTile);
#pragma unroll
    for (int kk = 0; kk < kD / kKStep; ++kk) {
      const uint32_t at = (kk % 4) * 32;
      const uint64_t qa = sm90::desc_advance(q_kmajor, (kk / 4) * Shape<kD>::kQPanel + at);
      const uint64_t kb = sm90::desc_advance(k_kmajor, (kk / 4) * kKvPanel + at);
      if constexpr (kFp8)
        sm90::mma_ss_e4m3(sc, qa, kb, kk > 0);
      else
        sm90::mma_ss<T, kBlockN>(sc, qa, kb, kk > 0);
    }
    sm90::wgmma_commit();
  };
  // O += P V: P from registers; 16-bit V N-major (its rows are keys = K of this GEMM): 16 keys
  // per wgmma = two 8-row groups (SBO 1024 bytes), column panels of 64 (LBO one panel); FP8 Vᵀ
  // K-major (rows: d; 128 keys along each): 32 keys = 32 bytes per wgmma.
  auto issue_pv = [&](int j) {
    const uint64_t v = sm90::desc_advance(v0, stage_of(it0 + j) * S::kTile);
#pragma unroll
    for (int kk = 0; kk < kBlockN / kKStep; ++kk) {
      if constexpr (kFp8)
        sm90::mma_rs_e4m3(o, pa[kk], sm90::desc_advance(v, kk * 32));
      else
        sm90::mma_rs_nmajor<T, kD>(o, pa[kk], sm90::desc_advance(v, kk * 16 * 128));
    }
    sm90::wgmma_commit();
  };
  // The online softmax of tile `it` in base 2 over this thread's two rows (the quad of lanes
  // with the same g shares a row): masks, updates m and l, turns sc into P in place and returns
  // the factors alpha by which O must be rescaled.
  auto softmax = [&](int j, float (&alpha)[2], float sl) {
    const int n0 = (n_tiles - 1 - j) * kBlockN;
    if (flash_tile_needs_mask(wg_m0, n0, kWgRows, kBlockN, L, causal)) {
      // Row r keeps the key columns n0 + c with c = 8j + 2·t4 + (e & 1) below hi_r
      // (flash_masked: no key or query past L, under the causal mask no key after the query).
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = r == 0 ? row0 : row1;
        const int hi = (row < 0 || row >= L ? 0 : min(L, causal ? row + 1 : L)) - n0 - 2 * t4;
#pragma unroll
        for (int j = 0; j < kBlockN / 8; ++j)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            if (8 * j + e >= hi) sc[4 * j + 2 * r + e] = -INFINITY;
      }
    }
    // Row maxima and sums over four independent partial results each: with two or three warps
    // per scheduler there is little else to hide one long dependency chain behind.
    float mx[2], m_use[2], part[2][4];
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) part[r][c] = fmaxf(sc[4 * c + 2 * r], sc[4 * c + 2 * r + 1]);
#pragma unroll
    for (int j = 4; j < kBlockN / 8; ++j)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        part[r][j % 4] = fmaxf(part[r][j % 4], fmaxf(sc[4 * j + 2 * r], sc[4 * j + 2 * r + 1]));
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(m_run[r],
                    fmaxf(fmaxf(part[r][0], part[r][1]), fmaxf(part[r][2], part[r][3])) * sl);
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      m_use[r] = mx[r] == -INFINITY ? 0.f : mx[r];  // a row with no key yet: keep p = 0
      alpha[r] = flash::fast_exp2(m_run[r] - m_use[r]);
      m_run[r] = mx[r];
#pragma unroll
      for (int c = 0; c < 4; ++c) part[r][c] = 0.f;
    }
#pragma unroll
    for (int j = 0; j < kBlockN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        sc[4 * j + e] = flash::fast_exp2(sc[4 * j + e] * sl - (m_use[e / 2] - kPBias));
        part[e / 2][j % 4] += sc[4 * j + e];
      }
#pragma unroll
    for (int r = 0; r < 2; ++r)
      l_run[r] = l_run[r] * alpha[r] + ((part[r][0] + part[r][1]) + (part[r][2] + part[r][3]));
  };
  auto pack_p = [&] {
    if constexpr (kFp8)
      pack_a_fragments_e4m3<kBlockN>(sc, pa);
    else
      pack_a_fragments<T, kBlockN>(sc, pa);
  };
  // O holds Σ P V in units of the newest tile's v scale (FP8): the step to tile j rescales by
  // v_scale(j − 1) / v_scale(j) with the softmax's alpha.
  auto rescale_o = [&](const float (&alpha)[2], float v_ratio) {
    const float a0 = alpha[0] * v_ratio, a1 = alpha[1] * v_ratio;
#pragma unroll
    for (int i = 0; i < kD / 2; ++i) o[i] *= (i / 2) % 2 ? a1 : a0;
  };

  // Key tile j of this work tile is ring position it0 + j; Q is this block's local-th.
  auto k_full = [&](int j) { return S::k_full(base, stage_of(it0 + j)); };
  auto v_full = [&](int j) { return S::v_full(base, stage_of(it0 + j)); };
  sm90::mbar_wait(S::q_full(base), local & 1);
  // The key tiles wholly masked for this warpgroup's rows come first in the visiting order: under
  // the causal mask those after its last row, and all of them for rows before 0. They take their
  // turns and releases without MMAs; tiles j0 .. n_tiles-1 are computed.
  const int last_row = wg_m0 + kWgRows - 1;
  const int j0 = last_row < 0 ? n_tiles : causal ? max(0, n_tiles - 1 - last_row / kBlockN) : 0;
  for (int j = 0; j < j0; ++j) {
    sm90::mbar_wait(k_full(j), parity_of(it0 + j));
    my_turn();
    your_turn();
    sm90::warp_arrive(S::k_empty(base, stage_of(it0 + j)));
    sm90::mbar_wait(v_full(j), parity_of(it0 + j));
    sm90::warp_arrive(S::v_empty(base, stage_of(it0 + j)));
  }
  float vs_prev = 1.f;  // FP8: the v scale of the newest tile in O
  if (j0 == n_tiles) {  // no key for any row: Q released, and the turn of the last P V
    sm90::warp_arrive(S::q_empty(base));
    my_turn();
    your_turn();
  } else {
    float alpha[2];
    // Key tile j0 (the diagonal under the causal mask): S only.
    sm90::mbar_wait(k_full(j0), parity_of(it0 + j0));
    my_turn();
    sm90::wgmma_fence();
    issue_s(j0);
    your_turn();
    sm90::wgmma_wait<0>();
    sm90::pin_registers(sc);
    sm90::warp_arrive(S::k_empty(base, stage_of(it0 + j0)));
    if (j0 == n_tiles - 1) sm90::warp_arrive(S::q_empty(base));
    vs_prev = v_scale(j0);
    softmax(j0, alpha, tile_scale(j0));
    pack_p();
    for (int j = j0 + 1; j < n_tiles; ++j) {
      const float sl = tile_scale(j), vs = v_scale(j);  // loads under the MMAs' wait
      sm90::mbar_wait(k_full(j), parity_of(it0 + j));
      sm90::mbar_wait(v_full(j - 1), parity_of(it0 + j - 1));
      my_turn();
      sm90::pin_registers(o);
      sm90::wgmma_fence();
      issue_s(j);
      issue_pv(j - 1);
      your_turn();
      sm90::wgmma_wait<1>();  // S_j is done; P_{j-1} V_{j-1} may still run
      sm90::pin_registers(sc);
      sm90::warp_arrive(S::k_empty(base, stage_of(it0 + j)));
      if (j == n_tiles - 1) sm90::warp_arrive(S::q_empty(base));  // the producer may load the next Q
      softmax(j, alpha, sl);
      sm90::wgmma_wait<0>();
      sm90::pin_registers(o);
      sm90::warp_arrive(S::v_empty(base, stage_of(it0 + j - 1)));
      rescale_o(alpha, kFp8 ? vs_prev / vs : 1.f);
      vs_prev = vs;
      pack_p();
    }
    sm90::mbar_wait(v_full(n_tiles - 1), parity_of(it0 + n_tiles - 1));
    my_turn();
    sm90::pin_registers(o);
    sm90::wgmma_fence();
    issue_pv(n_tiles - 1);
    your_turn();
    sm90::wgmma_wait<0>();
    sm90::pin_registers(o);
    sm90::warp_arrive(S::v_empty(base, stage_of(it0 + n_tiles - 1)));
  }

  // O / l, lse = (m + log2 l) · ln 2 (m is in base-2 units of scaled scores; FP8: P and l carry
  // 2^8, and O the newest tile's v scale).
  using Out = typename Elem<T>::Out;
  Out* out = static_cast<Out*>(p.o);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 1);
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 2);
    const int row = r == 0 ? row0 : row1;
    if (row < 0 || row >= L) continue;
    const float inv = l_run[r] > 0.f ? vs_prev / l_run[r] : 0.f;
    const int64_t off = bh * L + row;
    store_row<Out, kD>(out + off * kD, o, r, inv);
    if (t4 == 0)
      p.lse[off] = l_run[r] > 0.f
                       ? (m_run[r] + __log2f(l_run[r]) - kPBias) * 0.69314718055994531f
                       : -INFINITY;
  }
}

template <typename T, int kD>
__global__ void __launch_bounds__(Shape<kD>::Block::kThreads, 1)
    flash_fwd_sm90_kernel(const __grid_constant__ CUtensorMap tq,
                          const __grid_constant__ CUtensorMap tk,
                          const __grid_constant__ CUtensorMap tv, const FlashFwdParams p,
                          const FlashHeadGroups groups) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using S = Smem<T, kD>;
  using Block = typename Shape<kD>::Block;
  constexpr int kBlockM = Shape<kD>::kBlockM, kConsumerWarps = Block::kConsumerWarps;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const uint32_t base = aligned_base(smem_raw);
  const int wg = sm90::warpgroup_index();
  const int num_tiles = p.B * p.H * ((p.L + kBlockM - 1) / kBlockM);
  volatile int* tile_ids = smem_at<volatile int>(smem_raw, S::kTileIds);

  if (threadIdx.x == 0) {
    sm90::mbar_init(S::q_full(base), 1);
    sm90::mbar_init(S::q_empty(base), kConsumerWarps);
    for (int s = 0; s < kStages; ++s) {
      sm90::mbar_init(S::k_full(base, s), 1);
      sm90::mbar_init(S::v_full(base, s), 1);
      sm90::mbar_init(S::k_empty(base, s), kConsumerWarps);
      sm90::mbar_init(S::v_empty(base, s), kConsumerWarps);
    }
    for (int slot = 0; slot < 2; ++slot) {
      sm90::mbar_init(S::tile_full(base, slot), 1);
      sm90::mbar_init(S::tile_empty(base, slot), kConsumerWarps);
    }
    sm90::mbar_init_fence();
  }
  __syncthreads();

  // Persistent blocks: each takes work tiles from a counter (tile blockIdx.x first) until none
  // is left; the producer hands each tile's id to the consumers through a two-slot ring.
  if (wg == 0) {
    sm90::setmaxnreg_dec<Block::kProducerRegs>();
    if (threadIdx.x == 0) {
      sm90::tma_prefetch_map(&tq);
      sm90::tma_prefetch_map(&tk);
      sm90::tma_prefetch_map(&tv);
      int tile = blockIdx.x, it0 = 0;
      for (int local = 0;; ++local) {
        const int slot = local % 2;
        if (local >= 2) sm90::mbar_wait(S::tile_empty(base, slot), ((local / 2) + 1) & 1);
        tile_ids[slot] = tile < num_tiles ? tile : -1;
        sm90::mbar_arrive(S::tile_full(base, slot));
        if (tile >= num_tiles) break;
        const int next = atomicAdd(p.tile_counter, 1) + gridDim.x;
        const WorkTile w = work_tile<kBlockM>(tile, p, groups);
        produce<T, kD>(base, &tq, &tk, &tv, w, it0, local);
        it0 += w.n_tiles;
        tile = next;
      }
    }
  } else {
    sm90::setmaxnreg_inc<Block::kConsumerRegs>();
    // The ring of turns: the last consumer lets the first issue first; the first takes that
    // extra turn back after the last tile, so every arrival on a named barrier meets a sync.
    if (wg == Shape<kD>::kConsumers) sm90::named_barrier_arrive(1, 256);
    int it0 = 0;
    for (int local = 0;; ++local) {
      const int slot = local % 2;
      sm90::mbar_wait(S::tile_full(base, slot), (local / 2) & 1);
      // Lane 0 reads the id for its warp, whose arrival then orders that read before the
      // producer's next write of the slot (a read by every lane is ordered the same way through
      // __syncwarp, but compute-sanitizer's racecheck reports it as a hazard).
      int tile = threadIdx.x % 32 == 0 ? tile_ids[slot] : 0;
      tile = __shfl_sync(0xffffffffu, tile, 0);
      sm90::warp_arrive(S::tile_empty(base, slot));
      if (tile < 0) break;
      const WorkTile w = work_tile<kBlockM>(tile, p, groups);
      consume<T, kD>(base, p, w, wg - 1, it0, local);
      it0 += w.n_tiles;
    }
    if (wg == 1) sm90::named_barrier_sync(1, 256);
  }
#endif
}

// The maps of q, k, v: 16-bit (B, H, L, d) operands, or FP8 q, k and vᵀ (B, H, d, Lv).
struct Maps {
  CUtensorMap q, k, v;
};
template <typename T, int kD>
Maps maps_of(const FlashFwdParams& p) {
  constexpr int kBlockM = Shape<kD>::kBlockM;
  if constexpr (Elem<T>::kFp8) {
    return {tensor_map_e4m3(p.q, p.q_st, p.B, p.H, p.L, kD, kBlockM),
            tensor_map_e4m3(p.k, p.k_st, p.B, p.H, p.L, kD, kBlockN),
            tensor_map_e4m3(p.v, p.v_st, p.B, p.H, kD, static_cast<int>(p.v_st.row), kD)};
  } else {
    auto map = [&](const void* x, const FlashStrides& st, int box_rows) {
      return tensor_map(x, st, p.B, p.H, p.L, p.d, p.dtype, box_rows);
    };
    return {map(p.q, p.q_st, kBlockM), map(p.k, p.k_st, kBlockN), map(p.v, p.v_st, kBlockN)};
  }
}

template <typename T, int kD>
void launch(const FlashFwdParams& p, cudaStream_t stream) {
  constexpr int smem = Smem<T, kD>::kBytes, kBlockM = Shape<kD>::kBlockM;
  allow_smem<flash_fwd_sm90_kernel<T, kD>>(smem);
  const int64_t tiles = int64_t{p.B} * p.H * ((p.L + kBlockM - 1) / kBlockM);
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(tiles, sm_count())));
  const Maps m = maps_of<T, kD>(p);
  flash_fwd_sm90_kernel<T, kD><<<grid, Shape<kD>::Block::kThreads, smem, stream>>>(
      m.q, m.k, m.v, p,
      head_groups(2 * int64_t{p.L} * p.d * Elem<T>::kBytes, p.B * p.H,  // K and V of a head
                  (p.L + kBlockM - 1) / kBlockM, kTailWaves));
  CUDA_CHECK_LAUNCH();
}

}  // namespace
}  // namespace flash_sm90

std::string flash_forward_sm90_unsupported(const FlashFwdParams& p, int cc_major, int cc_minor) {
  return flash_sm90::unsupported(p.d, int64_t{p.B} * p.H, p.L, cc_major, cc_minor,
                                 {p.q_st, p.k_st, p.v_st}, {p.q, p.k, p.v});
}

void launch_flash_forward_sm90(const FlashFwdParams& p, cudaStream_t stream) {
  if (p.B <= 0 || p.H <= 0 || p.L <= 0) return;
  if (p.tile_counter == nullptr)
    throw std::invalid_argument("flash attention (sm90): the tile counter workspace is missing");
  flash_sm90::with_type_and_dim(p, [&](auto t, auto d) {
    flash_sm90::launch<decltype(t), decltype(d)::value>(p, stream);
  });
}

void launch_flash_forward_sm90_fp8(const FlashFwdParams& p, cudaStream_t stream) {
  if (p.B <= 0 || p.H <= 0 || p.L <= 0) return;
  if (p.d != 128)
    throw std::invalid_argument("flash attention (sm90, FP8): head dim " + std::to_string(p.d) +
                                " unsupported (128)");
  if (p.tile_counter == nullptr || p.q_scale == nullptr || p.k_scale == nullptr ||
      p.v_scale == nullptr)
    throw std::invalid_argument(
        "flash attention (sm90, FP8): the tile counter or a scale workspace is missing");
  flash_sm90::launch<__nv_fp8_e4m3, 128>(p, stream);
}

}  // namespace gptbench

// FlashAttention-2 forward (Dao 2023, Algorithm 1) with mma.sync m16n8k16 on tensor cores.
//
// One thread block per (query tile of kBlockM = 128 rows, batch·head). Tiles (flash_tiles.h):
// d = 64 and 128: 4 warps of 32 query rows (two 16-row slices) each, key/value tiles of 128 keys
// (d = 64) or 64 (d = 128); d <= 32: 8 warps of 16 rows, key tiles of 64. A row's softmax
// statistics live in the four lanes of one quad and never cross warps; 32 rows per warp let each
// K and V fragment read from shared memory (ldmatrix) feed two MMAs instead of one. The query tile
// is staged in shared memory once; its A fragments stay in registers where they fit (d <= 32) and
// are re-read with ldmatrix per key tile at d = 64 and 128 (next to the O and S accumulators:
// 64 + 128 at d = 64, 128 + 64 at d = 128).
// Key/value tiles are double-buffered with cp.async: tile j+1 is in flight while tile j is used,
// one barrier per tile. At 32 rows per warp, V_{j+1}'s copies are issued after tile j's softmax
// (K_{j+1}'s at the top): issued next to K's, their addresses stay live across S = Q Kᵀ and the
// large tiles spill (flash_tiles.h).
// Per key tile, each warp computes S = Q Kᵀ (fp32 accumulators in registers), applies the mask
// only on tiles that can hold masked elements (causal diagonal, tails beyond L), updates the
// running row max m and row sum l (online softmax in base 2: p = 2^(s·scale·log2e − m·...)),
// writes P straight into 16-bit A fragments, rescales its O accumulators and adds P V (no shared
// memory round trip for P). The L×L matrix never exists.
//
// Causal: query tile m visits only key tiles up to its last row (flash_fwd_n_blocks); tiles are
// scheduled heaviest first (blockIdx.y counts query tiles from the end). Where the K and V of
// all heads exceed 32 MB, heads are scheduled group by group (flash_fwd_heads_per_group).
// Tails: rows beyond L are zero-filled on load and masked; only rows < L are written.
// Output: O / l is packed to 16 bits, staged through the warp's own rows of the Q buffer and
// written with 16-byte stores; lse = m·scale + ln l (natural log, as LibTorch's logsumexp).
//
// Shared memory per block: (kBlockM + 4·kBlockN) rows × (d + 8) × 2 bytes = 18 KB (d=16),
// 30 KB (32), 90 KB (64), 102 KB (128); two blocks per SM.
#include <cfloat>
#include <stdexcept>
#include <string>

#include "ops/attention/flash_common.cuh"
#include "ops/attention/flash_kernels.h"
#include "ops/cuda_check.h"

namespace gptbench {
namespace flash {
namespace {

// Tile configuration of the forward kernel: kBlockM query rows per block over kWarps warps
// (kMT 16-row slices per warp), key/value tiles of kBlockN rows. The launcher instantiates
// flash_fwd_tile(kD) only (FwdTile); the parameters let the tuning harness time others.
template <int kD_, int kBlockM_, int kBlockN_, int kWarps_>
struct FwdTraits : TileConfig<kD_, kBlockM_, kBlockN_, kWarps_> {
  using C = TileConfig<kD_, kBlockM_, kBlockN_, kWarps_>;
  static constexpr int kMT = C::kBlockM / (16 * C::kWarps);  // 16-row slices per warp
  static constexpr int kSmemBytes = flash_fwd_smem_bytes(C::kD, C::kTile);
  // Registers per thread of the O and S accumulators, and of the Q fragments.
  static constexpr int kAccRegs = kMT * (C::kD + C::kBlockN) / 2;
  static constexpr int kQRegs = kMT * C::kD / 4;
  // Q fragments stay in registers while accumulators and fragments take at most 160 registers;
  // beyond (32 rows per warp at d = 128, or with 128-key tiles at d = 64) they are re-read from
  // shared memory with ldmatrix for every key tile.
  static constexpr bool kQInRegs = kAccRegs + kQRegs <= 160;
  // Two blocks per SM where that allows the registers needed: at 128 threads that is no cap
  // (255); at 256 threads a cap of 128, enough while accumulators and Q fit in 96 (d ≤ 64 at
  // 16 rows per warp).
  static constexpr int kMinBlocks =
      (C::kThreads == 128 || (C::kThreads == 256 && kAccRegs + kQRegs <= 96)) ? 2 : 1;
  // V's copies for the next tile issued after this tile's softmax, where only P and O are live,
  // rather than with K's at the top of the tile: the 32-row warps' large tiles need it (with V
  // issued next to K, d = 128 × 64 keys spilled 60 bytes, d = 64 × 128 keys 8). The 16-row warps
  // keep V next to K: late V was 10% slower at d = 32 (H200), presumably as its copies then
  // have only the short P V phase to land before the next tile's wait.
  static constexpr bool kLateV = kMT == 2;
  static_assert(C::kBlockM == C::kWarps * kMT * 16 && (kMT == 1 || kMT == 2),
                "16 or 32 rows per warp");
  static_assert(C::kBlockN % 16 == 0 && C::kD % 16 == 0, "tiles are multiples of 16");
  static_assert(kSmemBytes == (C::kBlockM + 4 * C::kBlockN) * C::kStride * 2, "smem layout");
};

template <int kD>
using FwdTile =
    FwdTraits<kD, flash_fwd_tile(kD).block_m, flash_fwd_tile(kD).block_n, flash_fwd_tile(kD).warps>;

template <typename T, typename Tr, bool kGrouped>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kMinBlocks)
    flash_fwd_kernel(const FlashFwdParams p) {
  constexpr int kD = Tr::kD, kBlockM = Tr::kBlockM, kBlockN = Tr::kBlockN;
  constexpr int kStride = Tr::kStride, kThreads = Tr::kThreads, kMT = Tr::kMT;
  constexpr int kNT = kBlockN / 8;  // n8 tiles of S per 16-row slice
  constexpr int kDT = kD / 8;       // n8 tiles of O per 16-row slice
  constexpr int kKT = kD / 16;      // k16 chunks of Q Kᵀ

  extern __shared__ __align__(16) unsigned char smem_raw[];
  // Shared-space byte addresses: sQ (kBlockM, kStride), sK and sV 2 × (kBlockN, kStride).
  constexpr uint32_t kTileBytes = kBlockN * kStride * 2;
  const uint32_t sQ = smem_u32(smem_raw);
  const uint32_t sK = sQ + kBlockM * kStride * 2;
  const uint32_t sV = sK + 2 * kTileBytes;

  // blockIdx.y counts query tiles from the last: under the causal mask the heaviest tiles of
  // every head (kGrouped: of every head of the group) start first. kGrouped: grid (heads per
  // group, query tiles, groups), so the blocks resident at once share few heads' K and V in L2
  // (H200, back-to-back launches: +7-12% at L = 16384, +5% at 4096; docs/flash_attention.md).
  const int bh = kGrouped ? blockIdx.z * gridDim.x + blockIdx.x : blockIdx.x;
  if (kGrouped && bh >= p.B * p.H) return;  // the last group may be short
  const int b = bh / p.H, h = bh % p.H;
  const int m_block = gridDim.y - 1 - blockIdx.y;
  const int L = p.L;
  const bool causal = p.causal;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t4 = lane & 3;
  const int m0 = m_block * kBlockM;
  // Per-lane byte offsets of the ldmatrix row addresses (flash_common.cuh, "ldmatrix"); the
  // warp's slice mt starts 16·mt rows below q_lane.
  const uint32_t q_lane = ((warp * kMT * 16 + (lane & 15)) * kStride + (lane >> 4) * 8) * 2;
  const uint32_t k_lane = (((lane & 7) + (lane >> 4) * 8) * kStride + ((lane >> 3) & 1) * 8) * 2;
  const uint32_t v_lane = (((lane & 7) + ((lane >> 3) & 1) * 8) * kStride + (lane >> 4) * 8) * 2;

  const T* gQ = static_cast<const T*>(p.q) + b * p.q_st.batch + h * p.q_st.head;
  const T* gK = static_cast<const T*>(p.k) + b * p.k_st.batch + h * p.k_st.head;
  const T* gV = static_cast<const T*>(p.v) + b * p.v_st.batch + h * p.v_st.head;

  // Row strides in 32 bits (the launcher checks (L - 1) * stride + d < 2^31).
  const int q_row = static_cast<int>(p.q_st.row);
  const int k_row = static_cast<int>(p.k_st.row);
  const int v_row = static_cast<int>(p.v_st.row);
  const int n_blocks = flash_fwd_n_blocks(m_block, L, causal, kBlockM, kBlockN);

  load_tile<kBlockM, kD, kStride, kThreads>(sQ, gQ, q_row, m0, L, tid);
  load_tile<kBlockN, kD, kStride, kThreads>(sK, gK, k_row, 0, L, tid);
  load_tile<kBlockN, kD, kStride, kThreads>(sV, gV, v_row, 0, L, tid);
  cp_async_commit();

  const float scale_log2 = p.scale * kLog2e;
  // This thread's rows: r_lo + 16·mt and r_lo + 16·mt + 8.
  const int r_lo = m0 + warp * kMT * 16 + g;
  float row_max[kMT][2];  // running max of raw scores s (unscaled)
  float row_sum[kMT][2];  // this thread's part of Σ 2^(s·c − m·c)
  float acc_o[kMT][kDT][4];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      row_max[mt][r] = -INFINITY;
      row_sum[mt][r] = 0.f;
    }
#pragma unroll
    for (int i = 0; i < kDT; ++i)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc_o[mt][i][c] = 0.f;
  }
  uint32_t q_frag[kMT][kKT][4];  // used when Tr::kQInRegs

  for (int j = 0; j < n_blocks; ++j) {
    cp_async_wait<0>();
    __syncthreads();  // tile j visible to all; every warp is done with tile j-1's buffer
    if (Tr::kQInRegs && j == 0) {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int kk = 0; kk < kKT; ++kk)
          ldmatrix_x4(q_frag[mt][kk], sQ + q_lane + (mt * 16 * kStride + kk * 16) * 2);
    }
    // Tile j+1's copies: K's and V's now, or K's now and V's after the softmax (Tr::kLateV).
    const bool has_next = j + 1 < n_blocks;
    const uint32_t next_buf = ((j + 1) & 1) * kTileBytes;
    if constexpr (Tr::kLateV) {
      if (has_next)
        load_tile<kBlockN, kD, kStride, kThreads>(sK + next_buf, gK, k_row, (j + 1) * kBlockN,
                                                  L, tid);
    } else if (has_next) {
      const int nb = (j + 1) & 1;
      load_tile<kBlockN, kD, kStride, kThreads>(sK + nb * kTileBytes, gK, k_row, (j + 1) * kBlockN,
                                                L, tid);
      load_tile<kBlockN, kD, kStride, kThreads>(sV + nb * kTileBytes, gV, v_row, (j + 1) * kBlockN,
                                                L, tid);
      cp_async_commit();
    }
    const uint32_t k_base = sK + (j & 1) * kTileBytes + k_lane;
    const uint32_t v_base = sV + (j & 1) * kTileBytes + v_lane;
    const int n0 = j * kBlockN;

    // S = Q Kᵀ: (16·kMT × kBlockN) per warp; each K fragment feeds kMT row slices.
    float s[kMT][kNT][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int i = 0; i < kNT; ++i)
#pragma unroll
        for (int c = 0; c < 4; ++c) s[mt][i][c] = 0.f;
#pragma unroll
    for (int kk = 0; kk < kKT; ++kk) {
      uint32_t qs[kMT][4];  // used when !Tr::kQInRegs
      if (!Tr::kQInRegs) {
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
          ldmatrix_x4(qs[mt], sQ + q_lane + (mt * 16 * kStride + kk * 16) * 2);
      }
#pragma unroll
      for (int nn = 0; nn < kBlockN / 16; ++nn) {
        uint32_t kb[4];
        ldmatrix_x4(kb, k_base + (nn * 16 * kStride + kk * 16) * 2);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          const uint32_t(&a)[4] = Tr::kQInRegs ? q_frag[mt][kk] : qs[mt];
          Ops<T>::mma16(s[mt], nn, a, kb);
        }
      }
    }

    // Mask: element (i, c) of slice mt is row r_lo + 16·mt + (c >> 1) * 8, column
    // n0 + i*8 + 2*t4 + (c & 1).
    if (flash_tile_needs_mask(m0, n0, kBlockM, kBlockN, L, causal)) {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int i = 0; i < kNT; ++i)
#pragma unroll
          for (int c = 0; c < 4; ++c)
            if (flash_masked(r_lo + mt * 16 + (c >> 1) * 8, n0 + i * 8 + 2 * t4 + (c & 1), L,
                             causal))
              s[mt][i][c] = -INFINITY;
    }

    // Online softmax, rows lo (c = 0, 1) and hi (c = 2, 3) of each slice; a row spans the 4
    // lanes of a quad. P goes straight to 16-bit A fragments (half the registers of S).
    uint32_t pa[kMT][kBlockN / 16][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = row_max[mt][r];
#pragma unroll
        for (int i = 0; i < kNT; ++i) mx = fmaxf(mx, fmaxf(s[mt][i][2 * r], s[mt][i][2 * r + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        // A row with every score masked so far keeps max -inf: subtract 0 instead (p = 0 then).
        const float mx_scaled = mx == -INFINITY ? 0.f : mx * scale_log2;
        // 0 when the old max is -inf (the accumulators are still 0 then).
        const float alpha = fast_exp2(row_max[mt][r] * scale_log2 - mx_scaled);
        row_max[mt][r] = mx;
        float sum = 0.f;
#pragma unroll
        for (int i = 0; i < kNT; ++i) {
          const float p0 = fast_exp2(fmaf(s[mt][i][2 * r], scale_log2, -mx_scaled));
          const float p1 = fast_exp2(fmaf(s[mt][i][2 * r + 1], scale_log2, -mx_scaled));
          sum += p0 + p1;
          // P as the A fragment of k-chunk i/2 (flash_common.cuh): register (i & 1)·2 + r.
          pa[mt][i >> 1][(i & 1) * 2 + r] = Ops<T>::pack(p0, p1);
        }
        row_sum[mt][r] = row_sum[mt][r] * alpha + sum;
#pragma unroll
        for (int i = 0; i < kDT; ++i) {
          acc_o[mt][i][2 * r] *= alpha;
          acc_o[mt][i][2 * r + 1] *= alpha;
        }
      }
    }

    if (Tr::kLateV && has_next) {
      load_tile<kBlockN, kD, kStride, kThreads>(sV + next_buf, gV, v_row, (j + 1) * kBlockN, L,
                                                tid);
      cp_async_commit();
    }

    // O += P V: V tile via ldmatrix.trans; each V fragment feeds kMT row slices.
#pragma unroll
    for (int kc = 0; kc < kBlockN / 16; ++kc) {
#pragma unroll
      for (int dn = 0; dn < kD / 16; ++dn) {
        uint32_t vb[4];
        ldmatrix_x4_trans(vb, v_base + (kc * 16 * kStride + dn * 16) * 2);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          Ops<T>::mma16(acc_o[mt], dn, pa[mt][kc], vb);
        }
      }
    }
  }

  // Epilogue: full row sums, O / l, lse; O (16-bit) is staged in this warp's own rows of sQ
  // (read by no other warp), then rows < L are written with 16-byte stores.
  T* sO = reinterpret_cast<T*>(smem_raw) + warp * kMT * 16 * kStride;
  __syncwarp();
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    float inv_l[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = row_sum[mt][r];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      inv_l[r] = l > 0.f ? 1.f / l : 0.f;
      const int row = r_lo + mt * 16 + r * 8;
      if (t4 == 0 && row < L) {
        const float lse = (row_max[mt][r] == -INFINITY || l <= 0.f)
                              ? INFINITY
                              : row_max[mt][r] * p.scale + logf(l);
        p.lse[static_cast<int64_t>(bh) * L + row] = lse;
      }
    }
#pragma unroll
    for (int i = 0; i < kDT; ++i) {
      const int col = i * 8 + 2 * t4;
      *reinterpret_cast<uint32_t*>(sO + (mt * 16 + g) * kStride + col) =
          Ops<T>::pack(acc_o[mt][i][0] * inv_l[0], acc_o[mt][i][1] * inv_l[0]);
      *reinterpret_cast<uint32_t*>(sO + (mt * 16 + g + 8) * kStride + col) =
          Ops<T>::pack(acc_o[mt][i][2] * inv_l[1], acc_o[mt][i][3] * inv_l[1]);
    }
  }
  __syncwarp();
  T* gO = static_cast<T*>(p.o) + (static_cast<int64_t>(bh) * L) * kD;
  constexpr int kChunks = kD / 8;
#pragma unroll
  for (int c = lane; c < kMT * 16 * kChunks; c += 32) {
    const int r = c / kChunks, col = (c % kChunks) * 8;
    const int row = m0 + warp * kMT * 16 + r;
    if (row < L)
      *reinterpret_cast<uint4*>(gO + static_cast<int64_t>(row) * kD + col) =
          *reinterpret_cast<const uint4*>(sO + r * kStride + col);
  }
}

template <typename T, typename Tr, bool kGrouped>
void launch(const FlashFwdParams& p, cudaStream_t stream, int group) {
  auto kernel = flash_fwd_kernel<T, Tr, kGrouped>;
  if (Tr::kSmemBytes > 48 * 1024)
    CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
  const int bh = p.B * p.H, m_tiles = flash_num_blocks(p.L, Tr::kBlockM);
  const dim3 grid = kGrouped ? dim3(group, m_tiles, (bh + group - 1) / group) : dim3(bh, m_tiles);
  kernel<<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(p);
  CUDA_CHECK_LAUNCH();
}

// One group: the 2-D grid (B·H, query tiles) of the ungrouped kernel; else the grouped one.
template <typename T, typename Tr>
void launch(const FlashFwdParams& p, cudaStream_t stream, int group) {
  if (group < p.B * p.H) launch<T, Tr, true>(p, stream, group);
  else launch<T, Tr, false>(p, stream, group);
}

}  // namespace
}  // namespace flash

void launch_flash_forward(const FlashFwdParams& p, cudaStream_t stream) {
  if (p.B <= 0 || p.H <= 0 || p.L <= 0) return;
  flash::check_grid(flash_num_blocks(p.L, flash_fwd_tile(p.d).block_m), int64_t{p.B} * p.H, 0x7fffffff,
                    p.L, p.d, {p.q_st.row, p.k_st.row, p.v_st.row});
  const int group = flash_fwd_heads_per_group(p.B * p.H, p.L, p.d);
  flash::with_dtype(p.dtype, [&](auto t) {
    using T = decltype(t);
    flash::with_head_dim(p.d, [&](auto d) { flash::launch<T, flash::FwdTile<decltype(d)::value>>(p, stream, group); });
  });
}

}  // namespace gptbench

// FlashAttention-2 forward (Dao 2023, Algorithm 1) with mma.sync m16n8k16 on tensor cores.
//
// One thread block per (query tile of kBlockM = 128 rows, batch·head), 8 warps; warp w owns the
// 16 query rows w·16 .. w·16+15 of the tile, so the softmax statistics of a row live in the four
// lanes of one quad and never cross warps. The query tile is staged in shared memory once and
// kept in registers as A fragments (d/16 × 4 regs). Key/value tiles of kBlockN = 64 rows are
// double-buffered in shared memory with cp.async: tile j+1 is in flight while tile j is used.
// Per key tile, each warp computes S = Q Kᵀ (16 × 64, fp32 accumulators in registers), applies
// the mask only on tiles that can hold masked elements (causal diagonal, tails beyond L), updates
// the running row max m and row sum l (online softmax in base 2: p = 2^(s·scale·log2e − m·...)),
// rescales its O accumulators (16 × d fp32) and adds P V with P converted from the S accumulators
// in registers (no shared memory round trip). The L×L matrix never exists.
//
// Causal: query tile m visits only key tiles up to its last row (flash_fwd_n_blocks); tiles are
// scheduled heaviest first (blockIdx.y counts query tiles from the end).
// Tails: rows beyond L are zero-filled on load and masked; only rows < L are written.
// Output: O / l is packed to 16 bits, staged through the warp's own rows of the Q buffer and
// written with 16-byte stores; lse = m·scale + ln l (natural log, as LibTorch's logsumexp).
//
// Shared memory per block: (128 + 4·64) rows × (d + 8) × 2 bytes = 18 KB (d=16) .. 102 KB (d=128).
#include <cfloat>
#include <stdexcept>
#include <string>

#include "ops/attention/flash_common.cuh"
#include "ops/attention/flash_kernels.h"
#include "ops/cuda_check.h"

namespace gptbench {
namespace flash {
namespace {

template <int kD>
struct FwdTraits {
  static constexpr FlashTile kTile = flash_fwd_tile(kD);
  static constexpr int kBlockM = kTile.block_m;
  static constexpr int kBlockN = kTile.block_n;
  static constexpr int kWarps = kTile.warps;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kStride = kD + 8;  // shared row stride (elements): +16 bytes, see header
  static constexpr int kSmemBytes = flash_fwd_smem_bytes(kD);
  // Two blocks per SM (≤ 128 registers per thread) where the accumulators allow it.
  static constexpr int kMinBlocks = kD <= 64 ? 2 : 1;
  static_assert(kBlockM == kWarps * 16, "one 16-row slice per warp");
  static_assert(kBlockN % 16 == 0 && kD % 16 == 0, "tiles are multiples of 16");
  static_assert(kSmemBytes == (kBlockM + 4 * kBlockN) * kStride * 2, "smem layout");
};

template <typename T, int kD>
__global__ void __launch_bounds__(FwdTraits<kD>::kThreads, FwdTraits<kD>::kMinBlocks)
    flash_fwd_kernel(const FlashFwdParams p) {
  using Tr = FwdTraits<kD>;
  constexpr int kBlockM = Tr::kBlockM, kBlockN = Tr::kBlockN, kStride = Tr::kStride;
  constexpr int kThreads = Tr::kThreads;
  constexpr int kNT = kBlockN / 8;  // n8 tiles of S per warp
  constexpr int kDT = kD / 8;       // n8 tiles of O per warp

  extern __shared__ __align__(16) unsigned char smem_raw[];
  // Shared-space byte addresses: sQ (kBlockM, kStride), sK and sV 2 × (kBlockN, kStride).
  constexpr uint32_t kTileBytes = kBlockN * kStride * 2;
  const uint32_t sQ = smem_u32(smem_raw);
  const uint32_t sK = sQ + kBlockM * kStride * 2;
  const uint32_t sV = sK + 2 * kTileBytes;

  const int bh = blockIdx.x;
  const int b = bh / p.H, h = bh % p.H;
  const int m_block = gridDim.y - 1 - blockIdx.y;  // heaviest (causal) tiles first
  const int L = p.L;
  const bool causal = p.causal;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t4 = lane & 3;
  const int m0 = m_block * kBlockM;
  // Per-lane byte offsets of the ldmatrix row addresses (flash_common.cuh, "ldmatrix").
  const uint32_t q_lane = ((warp * 16 + (lane & 15)) * kStride + (lane >> 4) * 8) * 2;
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
  // This thread's two rows: r_lo = m0 + warp*16 + g, r_hi = r_lo + 8.
  const int r_lo = m0 + warp * 16 + g;
  float row_max[2] = {-INFINITY, -INFINITY};  // running max of raw scores s (unscaled)
  float row_sum[2] = {0.f, 0.f};              // this thread's part of Σ 2^(s·c − m·c)
  float acc_o[kDT][4];
#pragma unroll
  for (int i = 0; i < kDT; ++i)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc_o[i][c] = 0.f;
  uint32_t q_frag[kD / 16][4];

  for (int j = 0; j < n_blocks; ++j) {
    cp_async_wait<0>();
    __syncthreads();  // tile j visible to all; every warp is done with tile j-1's buffer
    if (j == 0) {
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk)
        ldmatrix_x4(q_frag[kk], sQ + q_lane + kk * 16 * 2);
    }
    if (j + 1 < n_blocks) {
      const int nb = (j + 1) & 1;
      load_tile<kBlockN, kD, kStride, kThreads>(sK + nb * kTileBytes, gK, k_row,
                                                (j + 1) * kBlockN, L, tid);
      load_tile<kBlockN, kD, kStride, kThreads>(sV + nb * kTileBytes, gV, v_row,
                                                (j + 1) * kBlockN, L, tid);
      cp_async_commit();
    }
    const uint32_t k_base = sK + (j & 1) * kTileBytes + k_lane;
    const uint32_t v_base = sV + (j & 1) * kTileBytes + v_lane;
    const int n0 = j * kBlockN;

    // S = Q Kᵀ: (16 × kBlockN) per warp.
    float s[kNT][4];
#pragma unroll
    for (int i = 0; i < kNT; ++i)
#pragma unroll
      for (int c = 0; c < 4; ++c) s[i][c] = 0.f;
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
#pragma unroll
      for (int nn = 0; nn < kBlockN / 16; ++nn) {
        uint32_t kb[4];
        ldmatrix_x4(kb, k_base + (nn * 16 * kStride + kk * 16) * 2);
        Ops<T>::mma(s[2 * nn], q_frag[kk], kb[0], kb[1]);
        Ops<T>::mma(s[2 * nn + 1], q_frag[kk], kb[2], kb[3]);
      }
    }

    // Mask: element (i, c) is row r_lo + (c >> 1) * 8, column n0 + i*8 + 2*t4 + (c & 1).
    if (flash_tile_needs_mask(m0, n0, kBlockM, kBlockN, L, causal)) {
#pragma unroll
      for (int i = 0; i < kNT; ++i)
#pragma unroll
        for (int c = 0; c < 4; ++c)
          if (flash_masked(r_lo + (c >> 1) * 8, n0 + i * 8 + 2 * t4 + (c & 1), L, causal))
            s[i][c] = -INFINITY;
    }

    // Online softmax, rows lo (c = 0, 1) and hi (c = 2, 3); a row spans the 4 lanes of a quad.
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx = row_max[r];
#pragma unroll
      for (int i = 0; i < kNT; ++i) mx = fmaxf(mx, fmaxf(s[i][2 * r], s[i][2 * r + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      // A row with every score masked so far keeps max -inf: subtract 0 instead (p = 0 then).
      const float mx_scaled = mx == -INFINITY ? 0.f : mx * scale_log2;
      const float alpha = fast_exp2(row_max[r] * scale_log2 - mx_scaled);  // 0 when old max -inf
      row_max[r] = mx;
      float sum = 0.f;
#pragma unroll
      for (int i = 0; i < kNT; ++i) {
        s[i][2 * r] = fast_exp2(fmaf(s[i][2 * r], scale_log2, -mx_scaled));
        s[i][2 * r + 1] = fast_exp2(fmaf(s[i][2 * r + 1], scale_log2, -mx_scaled));
        sum += s[i][2 * r] + s[i][2 * r + 1];
      }
      row_sum[r] = row_sum[r] * alpha + sum;
#pragma unroll
      for (int i = 0; i < kDT; ++i) {
        acc_o[i][2 * r] *= alpha;
        acc_o[i][2 * r + 1] *= alpha;
      }
    }

    // O += P V: P (16 × kBlockN) from the S accumulators, V tile via ldmatrix.trans.
#pragma unroll
    for (int kc = 0; kc < kBlockN / 16; ++kc) {
      uint32_t a[4];
      a[0] = Ops<T>::pack(s[2 * kc][0], s[2 * kc][1]);
      a[1] = Ops<T>::pack(s[2 * kc][2], s[2 * kc][3]);
      a[2] = Ops<T>::pack(s[2 * kc + 1][0], s[2 * kc + 1][1]);
      a[3] = Ops<T>::pack(s[2 * kc + 1][2], s[2 * kc + 1][3]);
#pragma unroll
      for (int dn = 0; dn < kD / 16; ++dn) {
        uint32_t vb[4];
        ldmatrix_x4_trans(vb, v_base + (kc * 16 * kStride + dn * 16) * 2);
        Ops<T>::mma(acc_o[2 * dn], a, vb[0], vb[1]);
        Ops<T>::mma(acc_o[2 * dn + 1], a, vb[2], vb[3]);
      }
    }
  }

  // Epilogue: full row sums, O / l, lse.
  float inv_l[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = row_sum[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    inv_l[r] = l > 0.f ? 1.f / l : 0.f;
    const int row = r_lo + r * 8;
    if (t4 == 0 && row < L) {
      const float lse = (row_max[r] == -INFINITY || l <= 0.f)
                            ? INFINITY
                            : row_max[r] * p.scale + logf(l);
      p.lse[static_cast<int64_t>(bh) * L + row] = lse;
    }
  }
  // Stage O (16-bit) in this warp's own 16 rows of sQ (read only by this warp, at j == 0), then
  // write rows < L with 16-byte stores.
  T* sO = reinterpret_cast<T*>(smem_raw) + warp * 16 * kStride;
  __syncwarp();
#pragma unroll
  for (int i = 0; i < kDT; ++i) {
    const int col = i * 8 + 2 * t4;
    *reinterpret_cast<uint32_t*>(sO + g * kStride + col) =
        Ops<T>::pack(acc_o[i][0] * inv_l[0], acc_o[i][1] * inv_l[0]);
    *reinterpret_cast<uint32_t*>(sO + (g + 8) * kStride + col) =
        Ops<T>::pack(acc_o[i][2] * inv_l[1], acc_o[i][3] * inv_l[1]);
  }
  __syncwarp();
  T* gO = static_cast<T*>(p.o) + (static_cast<int64_t>(bh) * L) * kD;
  constexpr int kChunks = kD / 8;
#pragma unroll
  for (int c = lane; c < 16 * kChunks; c += 32) {
    const int r = c / kChunks, col = (c % kChunks) * 8;
    const int row = m0 + warp * 16 + r;
    if (row < L)
      *reinterpret_cast<uint4*>(gO + static_cast<int64_t>(row) * kD + col) =
          *reinterpret_cast<const uint4*>(sO + r * kStride + col);
  }
}

template <typename T, int kD>
void launch(const FlashFwdParams& p, cudaStream_t stream) {
  using Tr = FwdTraits<kD>;
  auto kernel = flash_fwd_kernel<T, kD>;
  if (Tr::kSmemBytes > 48 * 1024)
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    Tr::kSmemBytes));
  const dim3 grid(p.B * p.H, flash_num_blocks(p.L, Tr::kBlockM));
  kernel<<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(p);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void dispatch_d(const FlashFwdParams& p, cudaStream_t stream) {
  switch (p.d) {
    case 16: return launch<T, 16>(p, stream);
    case 32: return launch<T, 32>(p, stream);
    case 64: return launch<T, 64>(p, stream);
    case 128: return launch<T, 128>(p, stream);
    default:
      throw std::invalid_argument("flash attention: head dim " + std::to_string(p.d) +
                                  " unsupported (16, 32, 64, 128)");
  }
}

}  // namespace
}  // namespace flash

void launch_flash_forward(const FlashFwdParams& p, cudaStream_t stream) {
  if (p.B <= 0 || p.H <= 0 || p.L <= 0) return;
  if (flash_num_blocks(p.L, flash_fwd_tile(p.d).block_m) > 65535 ||
      static_cast<int64_t>(p.B) * p.H > 0x7fffffff)
    throw std::invalid_argument("flash attention: problem too large for the grid");
  if (!flash_row_offsets_fit(p.L, p.q_st.row, p.d) || !flash_row_offsets_fit(p.L, p.k_st.row, p.d) ||
      !flash_row_offsets_fit(p.L, p.v_st.row, p.d))
    throw std::invalid_argument("flash attention: row strides too large for 32-bit offsets");
  if (p.dtype == FlashDtype::kBFloat16)
    flash::dispatch_d<__nv_bfloat16>(p, stream);
  else
    flash::dispatch_d<__half>(p, stream);
}

}  // namespace gptbench

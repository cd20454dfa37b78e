// Attention forward for Hopper (sm_90a): the FlashAttention-2 algorithm of flash_fwd.cu with the
// tile movement and the two GEMMs on Hopper's own units, after FlashAttention-3 (Shah et al.
// 2024): the tensor copy engine (TMA) loads Q, K and V tiles into shared memory and warpgroup
// MMAs (wgmma) compute S = Q Kᵀ and O += P V. Design notes: docs/flash_attention.md.
//
// One block per (128-row query tile, batch·head), 384 threads in three warpgroups:
//   - warpgroup 0, the producer: one thread issues the copies of Q (once) and of the key/value
//     tiles into a ring of kStages buffers; it waits for a buffer to be released (mbarrier
//     `empty`) before refilling it. Its registers are lowered to 24 (setmaxnreg) and given to
//   - warpgroups 1 and 2, the consumers (240 registers each): 64 query rows each. Per key tile
//     of 128: wait for K (mbarrier `k_full`), S = Q Kᵀ by d/16 wgmma (both operands in shared
//     memory), mask where a tile can hold masked elements, the online softmax in registers, P
//     packed to 16 bits in registers as wgmma's A operand, wait for V, O += P V by 8 wgmma (V
//     read N-major), then release the buffer.
// Tiles sit in shared memory as the copy engine writes them with 128-byte swizzle: panels of
// 64 columns (128 bytes) × 128 rows, d/64 panels per tile; wgmma reads the same layout through
// its descriptors (ops/device/hopper.cuh), so no thread touches Q, K or V in shared memory.
// Rows beyond L are zero-filled by the copy engine and masked; only rows < L are written.
// Causal: a query tile visits key tiles up to its diagonal, the diagonal (masked) tile first,
// heaviest query tiles first (blockIdx.y counts from the last).
//
// Shared memory: Q (128 × d) + kStages × (K + V) (128 × d each) = 80 KB (d = 64), 160 KB (128),
// plus the mbarriers: one block per SM.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cfloat>
#include <stdexcept>
#include <string>

#include "ops/attention/flash_common.cuh"
#include "ops/attention/flash_kernels.h"
#include "ops/attention/flash_tiles.h"
#include "ops/cuda_check.h"
#include "ops/device/hopper.cuh"
#include "ops/device/wgmma.cuh"

namespace gptbench {
namespace flash_sm90 {
namespace {

constexpr int kBlockM = 128;       // query rows per block: two consumer warpgroups of 64
constexpr int kBlockN = 128;       // keys per tile
constexpr int kWgRows = 64;        // query rows per consumer warpgroup
constexpr int kStages = 2;         // key/value buffers in the ring
constexpr int kThreads = 3 * 128;  // producer + two consumer warpgroups
constexpr int kConsumerWarps = 8;
constexpr int kPanelCols = 64;                  // one 128-byte swizzle row of 16-bit elements
constexpr uint32_t kPanelBytes = kBlockN * 128;  // 128 rows × 128 bytes (kBlockM == kBlockN)
static_assert(kBlockM == kBlockN, "Q, K and V panels share one copy box");
constexpr int kProducerRegs = 24, kConsumerRegs = 240;
static_assert(128 * kProducerRegs + 256 * kConsumerRegs <= 65536, "register file");

// Byte offsets in the (1024-aligned) dynamic shared memory.
template <int kD>
struct Smem {
  static constexpr uint32_t kTile = (kD / kPanelCols) * kPanelBytes;  // a 128 × d tile
  static constexpr uint32_t kQ = 0;
  static constexpr uint32_t kK = kQ + kTile;              // kStages tiles
  static constexpr uint32_t kV = kK + kStages * kTile;    // kStages tiles
  static constexpr uint32_t kBars = kV + kStages * kTile;  // mbarriers, 8 bytes each
  // q_full, k_full[kStages], v_full[kStages], empty[kStages]
  static constexpr uint32_t kBarCount = 1 + 3 * kStages;
  static constexpr uint32_t kBytes = kBars + 8 * kBarCount + 1024;  // + alignment slack
  static __device__ uint32_t q_full(uint32_t base) { return base + kBars; }
  static __device__ uint32_t k_full(uint32_t base, int s) { return base + kBars + 8 * (1 + s); }
  static __device__ uint32_t v_full(uint32_t base, int s) {
    return base + kBars + 8 * (1 + kStages + s);
  }
  static __device__ uint32_t empty(uint32_t base, int s) {
    return base + kBars + 8 * (1 + 2 * kStages + s);
  }
};

__device__ __forceinline__ int key_tiles(int m_block, int L, bool causal) {
  const int all = (L + kBlockN - 1) / kBlockN;
  return causal ? min(all, ((m_block + 1) * kBlockM + kBlockN - 1) / kBlockN) : all;
}

// The producer: Q once, then the key/value tiles from the last (diagonal) to the first.
template <int kD>
__device__ void produce(uint32_t base, const CUtensorMap* tq, const CUtensorMap* tk,
                        const CUtensorMap* tv, int b, int h, int m0, int n_tiles) {
  using S = Smem<kD>;
  constexpr int kPanels = kD / kPanelCols;
  sm90::mbar_arrive_expect_tx(S::q_full(base), S::kTile);
#pragma unroll
  for (int p = 0; p < kPanels; ++p)
    sm90::tma_load_4d(base + S::kQ + p * kPanelBytes, tq, S::q_full(base), p * kPanelCols, m0, h,
                      b);
  for (int it = 0; it < n_tiles; ++it) {
    const int s = it % kStages, n0 = (n_tiles - 1 - it) * kBlockN;
    if (it >= kStages) sm90::mbar_wait(S::empty(base, s), ((it / kStages) + 1) & 1);
    sm90::mbar_arrive_expect_tx(S::k_full(base, s), S::kTile);
#pragma unroll
    for (int p = 0; p < kPanels; ++p)
      sm90::tma_load_4d(base + S::kK + s * S::kTile + p * kPanelBytes, tk, S::k_full(base, s),
                        p * kPanelCols, n0, h, b);
    sm90::mbar_arrive_expect_tx(S::v_full(base, s), S::kTile);
#pragma unroll
    for (int p = 0; p < kPanels; ++p)
      sm90::tma_load_4d(base + S::kV + s * S::kTile + p * kPanelBytes, tv, S::v_full(base, s),
                        p * kPanelCols, n0, h, b);
  }
}

// A consumer warpgroup: rows m0 + 64·wg .. +63 of the query tile.
template <typename T, int kD>
__device__ void consume(uint32_t base, const FlashFwdParams& p, int b, int h, int m0, int wg,
                        int n_tiles) {
  using S = Smem<kD>;
  using Ops = flash::Ops<T>;
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
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};

  sm90::mbar_wait(S::q_full(base), 0);
  for (int it = 0; it < n_tiles; ++it) {
    const int s = it % kStages;
    const uint32_t parity = (it / kStages) & 1;
    const int n0 = (n_tiles - 1 - it) * kBlockN;

    // S = Q Kᵀ: K-major A (this warpgroup's 64 rows of Q) and B (the 128 keys), 16 columns of d
    // per wgmma: 32 bytes along the swizzled row within a panel.
    float sc[kBlockN / 2];
    sm90::mbar_wait(S::k_full(base, s), parity);
    sm90::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
      const uint32_t panel = (kk / 4) * kPanelBytes, along = (kk % 4) * 32;
      const uint64_t a = sm90::sw128_desc(base + S::kQ + panel + wg * kWgRows * 128 + along, 16,
                                          1024);
      const uint64_t bd =
          sm90::sw128_desc(base + S::kK + s * S::kTile + panel + along, 16, 1024);
      sm90::mma_ss_n128<T>(sc, a, bd, kk > 0);
    }
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();
    sm90::pin_registers(sc);

    if (flash_tile_needs_mask(wg_m0, n0, kWgRows, kBlockN, L, causal)) {
#pragma unroll
      for (int j = 0; j < kBlockN / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = n0 + 8 * j + 2 * t4 + (e & 1);
          if (flash_masked(e < 2 ? row0 : row1, col, L, causal)) sc[4 * j + e] = -INFINITY;
        }
    }

    // Online softmax in base 2 over this thread's two rows; the quad (same g) shares a row.
    float mx[2] = {m_run[0], m_run[1]};
#pragma unroll
    for (int j = 0; j < kBlockN / 8; ++j) {
      mx[0] = fmaxf(mx[0], fmaxf(sc[4 * j], sc[4 * j + 1]) * scale_log2);
      mx[1] = fmaxf(mx[1], fmaxf(sc[4 * j + 2], sc[4 * j + 3]) * scale_log2);
    }
    float alpha[2], m_use[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      m_use[r] = mx[r] == -INFINITY ? 0.f : mx[r];  // a row with no key yet: keep p = 0
      alpha[r] = flash::fast_exp2(m_run[r] - m_use[r]);
      m_run[r] = mx[r];
      l_run[r] *= alpha[r];
    }
    uint32_t pa[kBlockN / 16][4];
#pragma unroll
    for (int j = 0; j < kBlockN / 8; ++j) {
      const float p0 = flash::fast_exp2(sc[4 * j] * scale_log2 - m_use[0]);
      const float p1 = flash::fast_exp2(sc[4 * j + 1] * scale_log2 - m_use[0]);
      const float p2 = flash::fast_exp2(sc[4 * j + 2] * scale_log2 - m_use[1]);
      const float p3 = flash::fast_exp2(sc[4 * j + 3] * scale_log2 - m_use[1]);
      l_run[0] += p0 + p1;
      l_run[1] += p2 + p3;
      pa[j / 2][(j % 2) * 2] = Ops::pack(p0, p1);
      pa[j / 2][(j % 2) * 2 + 1] = Ops::pack(p2, p3);
    }
#pragma unroll
    for (int j = 0; j < kD / 8; ++j) {
      o[4 * j] *= alpha[0];
      o[4 * j + 1] *= alpha[0];
      o[4 * j + 2] *= alpha[1];
      o[4 * j + 3] *= alpha[1];
    }

    // O += P V: P from registers, V N-major (its rows are keys = K of this GEMM): 16 keys per
    // wgmma = two 8-row groups (SBO 1024 bytes); column panels of 64 (LBO one panel).
    sm90::mbar_wait(S::v_full(base, s), parity);
    sm90::pin_registers(o);
    sm90::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      const uint64_t bd =
          sm90::sw128_desc(base + S::kV + s * S::kTile + kk * 16 * 128, kPanelBytes, 1024);
      sm90::mma_rs_nmajor<T, kD>(o, pa[kk], bd);
    }
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();
    sm90::pin_registers(o);
    __syncwarp();
    if (lane == 0) sm90::mbar_arrive(S::empty(base, s));
  }

  // O / l, lse = (m + log2 l) · ln 2 (m is in base-2 units of scaled scores).
  T* out = static_cast<T*>(p.o);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 1);
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 2);
    const int row = r == 0 ? row0 : row1;
    if (row >= L) continue;
    const float inv = l_run[r] > 0.f ? 1.f / l_run[r] : 0.f;
    const int64_t off = (int64_t{b} * p.H + h) * L + row;
    uint32_t* dst = reinterpret_cast<uint32_t*>(out + off * kD);
#pragma unroll
    for (int j = 0; j < kD / 8; ++j)
      dst[4 * j + t4] = Ops::pack(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv);
    if (t4 == 0)
      p.lse[off] = l_run[r] > 0.f ? (m_run[r] + __log2f(l_run[r])) * 0.69314718055994531f
                                  : -INFINITY;
  }
}

template <typename T, int kD>
__global__ void __launch_bounds__(kThreads, 1)
    flash_fwd_sm90_kernel(const __grid_constant__ CUtensorMap tq,
                          const __grid_constant__ CUtensorMap tk,
                          const __grid_constant__ CUtensorMap tv, const FlashFwdParams p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using S = Smem<kD>;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const int bh = blockIdx.x, b = bh / p.H, h = bh % p.H;
  const int m_block = gridDim.y - 1 - blockIdx.y, m0 = m_block * kBlockM;
  const int n_tiles = key_tiles(m_block, p.L, p.causal);
  const int wg = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    sm90::mbar_init(S::q_full(base), 1);
    for (int s = 0; s < kStages; ++s) {
      sm90::mbar_init(S::k_full(base, s), 1);
      sm90::mbar_init(S::v_full(base, s), 1);
      sm90::mbar_init(S::empty(base, s), kConsumerWarps);
    }
    sm90::mbar_init_fence();
  }
  __syncthreads();

  if (wg == 0) {
    sm90::setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x == 0) {
      sm90::tma_prefetch_map(&tq);
      sm90::tma_prefetch_map(&tk);
      sm90::tma_prefetch_map(&tv);
      produce<kD>(base, &tq, &tk, &tv, b, h, m0, n_tiles);
    }
  } else {
    sm90::setmaxnreg_inc<kConsumerRegs>();
    consume<T, kD>(base, p, b, h, m0, wg - 1, n_tiles);
  }
#endif
}

// cuTensorMapEncodeTiled through the runtime's driver entry point (no link-time dependence on
// the driver library, so CPU-only machines load the binary).
PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000,
                                                cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || f == nullptr)
      throw CudaError("flash attention (sm90): the driver has no cuTensorMapEncodeTiled");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// The copy map of a (B, H, L, d) operand: dims innermost first (d, L, H, B), boxes of 64
// columns × 128 rows, 128-byte swizzle, zero fill outside.
CUtensorMap tensor_map(const void* data, const FlashStrides& st, const FlashFwdParams& p) {
  CUtensorMap map;
  const cuuint64_t dims[4] = {cuuint64_t(p.d), cuuint64_t(p.L), cuuint64_t(p.H), cuuint64_t(p.B)};
  const cuuint64_t strides[3] = {cuuint64_t(st.row) * 2, cuuint64_t(st.head) * 2,
                                 cuuint64_t(st.batch) * 2};
  const cuuint32_t box[4] = {kPanelCols, kBlockN, 1, 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  const CUresult r = encode_tiled()(
      &map, p.dtype == ElemType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
      4, const_cast<void*>(data), dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw CudaError("flash attention (sm90): cuTensorMapEncodeTiled failed with CUresult " +
                    std::to_string(static_cast<int>(r)));
  return map;
}

template <typename T, int kD>
void launch(const FlashFwdParams& p, cudaStream_t stream) {
  constexpr int smem = Smem<kD>::kBytes;
  static const bool attr_set = [] {
    CUDA_CHECK(cudaFuncSetAttribute(flash_fwd_sm90_kernel<T, kD>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    return true;
  }();
  (void)attr_set;
  const dim3 grid(p.B * p.H, (p.L + kBlockM - 1) / kBlockM);
  flash_fwd_sm90_kernel<T, kD><<<grid, kThreads, smem, stream>>>(
      tensor_map(p.q, p.q_st, p), tensor_map(p.k, p.k_st, p), tensor_map(p.v, p.v_st, p), p);
  CUDA_CHECK_LAUNCH();
}

bool stride_ok(const FlashStrides& st) {
  return st.row > 0 && st.head > 0 && st.batch > 0 && st.row % 8 == 0 && st.head % 8 == 0 &&
         st.batch % 8 == 0;
}

}  // namespace
}  // namespace flash_sm90

std::string flash_forward_sm90_unsupported(const FlashFwdParams& p, int cc_major, int cc_minor) {
  if (cc_major != 9 || cc_minor != 0)
    return "needs compute capability 9.0 (H100/H200), this GPU has " + std::to_string(cc_major) +
           "." + std::to_string(cc_minor);
  if (p.d != 64 && p.d != 128) return "head dim " + std::to_string(p.d) + " (takes 64 and 128)";
  if (!flash_sm90::stride_ok(p.q_st) || !flash_sm90::stride_ok(p.k_st) ||
      !flash_sm90::stride_ok(p.v_st))
    return "strides must be positive multiples of 8 elements";
  for (const void* ptr : {p.q, p.k, p.v})
    if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0) return "inputs must be 16-byte aligned";
  if (p.B * int64_t{p.H} > 0x7fffffff || (p.L + flash_sm90::kBlockM - 1) / flash_sm90::kBlockM > 65535)
    return "problem too large for the grid";
  return "";
}

void launch_flash_forward_sm90(const FlashFwdParams& p, cudaStream_t stream) {
  if (p.B <= 0 || p.H <= 0 || p.L <= 0) return;
  if (p.d != 64 && p.d != 128)
    throw std::invalid_argument("flash attention (sm90): head dim " + std::to_string(p.d) +
                                " unsupported (64, 128)");
  flash::with_dtype(p.dtype, [&](auto t) {
    using T = decltype(t);
    if (p.d == 64)
      flash_sm90::launch<T, 64>(p, stream);
    else
      flash_sm90::launch<T, 128>(p, stream);
  });
}

}  // namespace gptbench

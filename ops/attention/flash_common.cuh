#pragma once
// Device helpers shared by flash_fwd.cu and flash_bwd.cu: ldmatrix, the
// m16n8k16 tensor-core MMA, 16-bit packing and the tile configuration. CUDA only (no LibTorch).
//
// ---- Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16" with .bf16/.f16) --------
// lane = threadIdx.x % 32, g = lane >> 2 ("groupID", 0..7), t = lane & 3 ("threadID_in_group").
// Each .b32 register holds two 16-bit elements; the LOWER half holds the element of the smaller
// column (k) index.
//   A (16x16, row-major, M x K), 4 regs:
//     a0 = A[g    ][2t, 2t+1]     a1 = A[g + 8][2t, 2t+1]
//     a2 = A[g    ][2t+8, 2t+9]   a3 = A[g + 8][2t+8, 2t+9]
//   B (16x8, K x N, "col" operand), 2 regs:
//     b0 = B[2t, 2t+1][g]         b1 = B[2t+8, 2t+9][g]
//   C/D (16x8 fp32), 4 regs:
//     c0, c1 = C[g][2t, 2t+1]     c2, c3 = C[g + 8][2t, 2t+1]
// Consequence used for P·V (and Pᵀ·dO, dSᵀ·Q): the C fragments of two adjacent n8 tiles 2j and
// 2j+1 of a 16-row strip form, packed to 16 bits, the A fragment of k-chunk j:
//     a0 = pack(C[2j].c0, c1), a1 = pack(C[2j].c2, c3), a2 = pack(C[2j+1].c0, c1),
//     a3 = pack(C[2j+1].c2, c3).
//
// ---- ldmatrix.m8n8.x4.b16 ------------------------------------------------------------------
// Loads four 8x8 16-bit matrices; lanes 8i..8i+7 give the shared addresses of rows 0..7 of
// matrix i (16 contiguous bytes each); destination register ri receives matrix i.
//   without .trans: lane gets M_i[g][2t, 2t+1];
//   with .trans:    lane gets M_i[2t][g] (low half) and M_i[2t+1][g] (high half).
// So, for a row-major tile X[r][c] in shared memory:
//   - A fragment of X rows r0..r0+15, cols c0..c0+15: no .trans, lane address
//       X[r0 + (lane & 15)][c0 + (lane >> 4) * 8]                       (regs = a0, a1, a2, a3)
//   - B fragments where B[k][n] = X[n][k] (X holds B's columns as rows: K in Q·Kᵀ), for the
//     two n8 tiles n0, n0+8 and k-chunk c0..c0+15: no .trans, lane address
//       X[n0 + (lane & 7) + (lane >> 4) * 8][c0 + ((lane >> 3) & 1) * 8]
//     giving regs {b0, b1} of tile n0 and {b0, b1} of tile n0+8;
//   - B fragments where B[k][n] = X[k][n] (X holds B row-major: V in P·V), for k-chunk
//     r0..r0+15 and the two n8 tiles c0, c0+8: .trans, lane address
//       X[r0 + (lane & 7) + ((lane >> 3) & 1) * 8][c0 + (lane >> 4) * 8]
//     giving regs {b0, b1} of tile c0 and {b0, b1} of tile c0+8;
//   - A fragment of Xᵀ (A[m][k] = X[k][m]) for rows m0..m0+15 of A and k-chunk k0..k0+15:
//     .trans, lane address
//       X[k0 + (lane & 7) + (lane >> 4) * 8][m0 + ((lane >> 3) & 1) * 8]   (regs = a0..a3).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "ops/attention/flash_kernels.h"
#include "ops/device/convert.cuh"
#include "ops/device/cp_async.cuh"

namespace gptbench {
namespace flash {

// cp.async copies and smem_u32: ops/device/cp_async.cuh (namespace gptbench, found from here).

// `a` is a shared-space byte address (smem_u32).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

// The tile configuration both kernels' traits start from: head dim kD, query tiles of kBlockM
// rows, key tiles of kBlockN, kWarps warps per block; shared-memory rows of kStride elements,
// padded by 16 bytes (flash_tiles.h).
template <int kD_, int kBlockM_, int kBlockN_, int kWarps_>
struct TileConfig {
  static constexpr int kD = kD_;
  static constexpr int kBlockM = kBlockM_;
  static constexpr int kBlockN = kBlockN_;
  static constexpr int kWarps = kWarps_;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kStride = kD + 8;
  static constexpr FlashTile kTile{kBlockM, kBlockN, kWarps};
};

// mma.sync m16n8k16, c += a · b with fp32 accumulators c and 16-bit operands a, b of PTX type
// `ab` ("bf16" or "f16"). A macro because an asm statement takes its instruction as a literal.
#define FLASH_MMA_M16N8K16(ab, c, a, b0, b1)                                                 \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." ab "." ab ".f32 {%0, %1, %2, %3}, " \
               "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"                             \
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                              \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))

// Per-dtype MMA and packing, T = __nv_bfloat16 or __half.
template <typename T>
struct Ops {
  static constexpr bool kHalf = std::is_same_v<T, __half>;
  static_assert(kHalf || std::is_same_v<T, __nv_bfloat16>, "16-bit operands: bf16 or fp16");
  using T2 = std::conditional_t<kHalf, __half2, __nv_bfloat162>;

  // c += a · b on a 16x8x16 tile, fp32 accumulation.
  static __device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
    if constexpr (kHalf)
      FLASH_MMA_M16N8K16("f16", c, a, b0, b1);
    else
      FLASH_MMA_M16N8K16("bf16", c, a, b0, b1);
  }
  // c[2n] += a · b[0..1] and c[2n + 1] += a · b[2..3]: 16 columns of C from a 16x16 A fragment
  // and the two n8 halves of an ldmatrix_x4 B fragment.
  template <int N>
  static __device__ __forceinline__ void mma16(float (&c)[N][4], int n, const uint32_t (&a)[4],
                                               const uint32_t (&b)[4]) {
    mma(c[2 * n], a, b[0], b[1]);
    mma(c[2 * n + 1], a, b[2], b[3]);
  }
  // lo goes to the low 16 bits (the smaller column index).
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    T2 v;
    if constexpr (kHalf)
      v = __floats2half2_rn(lo, hi);
    else
      v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  }
  static __device__ __forceinline__ float2 unpack(uint32_t x) {
    const T2 v = *reinterpret_cast<T2*>(&x);
    if constexpr (kHalf)
      return __half22float2(v);
    else
      return __bfloat1622float2(v);
  }
};
#undef FLASH_MMA_M16N8K16

// 2^x with the hardware approximation (relative error ~2^-22); 2^-inf = +0.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

constexpr float kLog2e = 1.4426950408889634f;

// Loads rows row0 .. row0+kRows-1 (all kD columns) of a (L, kD) matrix with row stride
// `row_stride` (elements) into shared memory (byte address `smem`) with row stride kStride
// elements; rows >= L are zero-filled.
// The launcher guarantees (L - 1) * row_stride + kD < 2^31, so offsets fit in 32 bits.
template <int kRows, int kD, int kStride, int kThreads, typename T>
__device__ __forceinline__ void load_tile(uint32_t smem, const T* gmem, int row_stride,
                                          int row0, int L, int tid) {
  constexpr int kChunks = kD / 8;  // 16-byte chunks per row
  static_assert(kThreads % kChunks == 0, "a thread keeps its column");
  constexpr int kRowsPerIter = kThreads / kChunks;
  constexpr int kIters = (kRows + kRowsPerIter - 1) / kRowsPerIter;
  // Thread tid copies column chunk tid % kChunks of rows tid / kChunks + it * kRowsPerIter.
  const int r_t = tid / kChunks;
  const int col = (tid % kChunks) * 8;
  const int src_t = (row0 + r_t) * row_stride + col;
  const uint32_t dst_t = smem + (r_t * kStride + col) * 2;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int r = r_t + it * kRowsPerIter;
    if (kRows % kRowsPerIter == 0 || r < kRows) {
      const bool valid = row0 + r < L;
      cp_async16(dst_t + it * kRowsPerIter * kStride * 2,
                 gmem + (valid ? src_t + it * kRowsPerIter * row_stride : 0), valid);
    }
  }
}

// ---- host-side dispatch shared by the forward and backward launchers ---------------------------

// Calls f(std::integral_constant<int, d>{}) for a head dim the kernels are built for.
template <typename F>
void with_head_dim(int d, F&& f) {
  switch (d) {
    case 16: return f(std::integral_constant<int, 16>{});
    case 32: return f(std::integral_constant<int, 32>{});
    case 64: return f(std::integral_constant<int, 64>{});
    case 128: return f(std::integral_constant<int, 128>{});
    default:
      throw std::invalid_argument("flash attention: head dim " + std::to_string(d) +
                                  " unsupported (16, 32, 64, 128)");
  }
}

// Calls f(T{}) with the element type of `dtype` (bf16 or fp16).
template <typename F>
void with_dtype(ElemType dtype, F&& f) {
  with_elem_type<__nv_bfloat16, __half>(dtype, "flash attention", f);
}

// The grid's limits: `tiles` blocks along L (gridDim.x), `heads` along y; and 32-bit row offsets
// of every operand's row stride.
inline void check_grid(int64_t tiles, int64_t heads, int64_t max_heads, int L, int d,
                       std::initializer_list<int64_t> row_strides) {
  if (tiles > 65535 || heads > max_heads)
    throw std::invalid_argument("flash attention: problem too large for the grid");
  for (const int64_t row : row_strides)
    if (!flash_row_offsets_fit(L, row, d))
      throw std::invalid_argument("flash attention: row strides too large for 32-bit offsets");
}

}  // namespace flash
}  // namespace gptbench

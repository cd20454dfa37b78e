// Per-tensor FP8 quantization with a transposed copy (ops/fp8/quantize_transpose.h).
//   scale:     two kernels. Per-block maxima of |x| over a grid-stride loop of 16-byte loads
//              (fp8_quantize_partials blocks, as ops/fp8/quantize.cu's per-tensor pass), then
//              one block reduces them and writes scale and scale_inv.
//   cast:      one kernel for a given scale. Each thread converts an 8 × 8 block of x (eight
//              16-byte loads, one per row), stores its rows as they are (8 bytes each) and
//              transposes the 64 bytes in registers (__byte_perm on 4 × 4 quarters) to store its
//              columns as rows of the transposed copy. A warp's 32 threads are 4 blocks down
//              by 8 across: each 8 rows it reads are 128 contiguous bytes of bf16 and each row
//              of the transposed copy it writes 32 contiguous bytes (a whole sector), so both
//              sides coalesce without shared memory. A 256-thread block covers 256 × 64.
//   delayed:   the cast kernel also writes per-block maxima of |value| (its tile's), and one
//              block reduces them into the amax history and the next cast's multiplier.
// Both read their values through an input (ops/fp8/inputs.cuh): the bf16 tensor, or with `gelu`
// GELU's output computed from the MLP-up GEMM's output and bias (the amax then has a kernel of
// its own here, amax_partials, with the same blocks).
// Conversion: cvt.rn.satfinite.{e4m3,e5m2}x2.f32 (cuda_fp8.h; emulated below 8.9): round to
// nearest even, saturated at the format's largest finite value.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <stdexcept>
#include <string>

#include "ops/cuda_check.h"
#include "ops/device/reduce.cuh"
#include "ops/fp8/inputs.cuh"
#include "ops/fp8/quantize_kernels.h"
#include "ops/fp8/quantize_transpose.h"

namespace gptbench {
namespace {

constexpr int kThreads = 256;
using fp8dev::kVec;                                  // elements per load, rows per thread block
constexpr int kWarpRows = 4, kWarpCols = 8;          // a warp's threads: 4 down, 8 across
constexpr int kTileRows = kThreads / kWarpSize * kWarpRows * kVec;  // 256 rows per CUDA block
constexpr int kTileCols = kWarpCols * kVec;                         // 64 columns

using fp8dev::amax8;
using fp8dev::BiasGeluInput;
using fp8dev::PlainInput;
using fp8dev::Vec8;

__global__ void __launch_bounds__(kThreads) finish_scale(const float* __restrict__ partial, int partials,
                                                         float* __restrict__ scale,
                                                         float* __restrict__ scale_inv, Fp8Format format) {
  float amax = 0.f;
  for (int i = threadIdx.x; i < partials; i += kThreads) amax = fmaxf(amax, partial[i]);
  amax = block_max<kThreads>(amax);
  if (threadIdx.x == 0) {
    const float s = fp8_scale_from_amax(amax, format);
    *scale = s;
    *scale_inv = 1.f / s;
  }
}

// 8 values · scale in format F, element 0 in the lowest byte.
template <__nv_fp8_interpretation_t F>
__device__ __forceinline__ uint2 quant8(const Vec8& p, float scale) {
  uint32_t w[2] = {0, 0};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = make_float2(p.v[2 * i] * scale, p.v[2 * i + 1] * scale);
    const uint32_t pair = __nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, F);
    w[i / 2] |= pair << (16 * (i % 2));
  }
  return make_uint2(w[0], w[1]);
}

// partial[blockIdx.x] = max |value| over the block's share of the (rows, cols) input's vectors
// of 8, a grid-stride loop (the plain input's pass is launch_fp8_amax_partials, ops/fp8/quantize.cu).
template <typename In>
__global__ void __launch_bounds__(kThreads) amax_partials(In in, float* __restrict__ partial, int64_t rows,
                                                          int64_t cols) {
  const int64_t per_row = cols / kVec, nvec = rows * per_row;
  const int64_t stride = int64_t{gridDim.x} * kThreads;
  float amax = 0.f;
  for (int64_t i = int64_t{blockIdx.x} * kThreads + threadIdx.x; i < nvec; i += stride)
    amax = fmaxf(amax, amax8(in.load(i / per_row, (i % per_row) * kVec, cols)));
  amax = block_max<kThreads>(amax);
  if (threadIdx.x == 0) partial[blockIdx.x] = amax;
}

// The 4 × 4 bytes a, b, c, d (rows; byte j of each is column j) as columns: out[j] holds
// column j, row 0 in its lowest byte.
__device__ __forceinline__ void transpose4x4(uint32_t a, uint32_t b, uint32_t c, uint32_t d, uint32_t out[4]) {
  const uint32_t ab01 = __byte_perm(a, b, 0x5140), cd01 = __byte_perm(c, d, 0x5140);  // a0 b0 a1 b1
  const uint32_t ab23 = __byte_perm(a, b, 0x7362), cd23 = __byte_perm(c, d, 0x7362);  // a2 b2 a3 b3
  out[0] = __byte_perm(ab01, cd01, 0x5410);  // a0 b0 c0 d0
  out[1] = __byte_perm(ab01, cd01, 0x7632);  // a1 b1 c1 d1
  out[2] = __byte_perm(ab23, cd23, 0x5410);
  out[3] = __byte_perm(ab23, cd23, 0x7632);
}

// With `amax_partial` (delayed scaling) the kernel also records max |value| over its CUDA
// block's tile in amax_partial[block], and block (0, 0) copies the multiplier it used and its
// inverse to scale_out and scale_inv_out (the next update overwrites *scale_ptr).
template <__nv_fp8_interpretation_t F, typename In>
__global__ void __launch_bounds__(kThreads) quantize_transpose(In in, const float* __restrict__ scale_ptr,
                                                               uint8_t* __restrict__ q,
                                                               uint8_t* __restrict__ qt,
                                                               int64_t rows, int64_t cols,
                                                               float* __restrict__ amax_partial,
                                                               float* __restrict__ scale_out,
                                                               float* __restrict__ scale_inv_out) {
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int64_t r0 = int64_t{blockIdx.y} * kTileRows + (warp * kWarpRows + lane % kWarpRows) * kVec;
  const int64_t c0 = int64_t{blockIdx.x} * kTileCols + (lane / kWarpRows) * kVec;
  const float scale = *scale_ptr;
  float amax = 0.f;
  if (r0 < rows && c0 < cols) {  // rows and cols are multiples of 8: whole blocks
    uint2 row[kVec];  // row[i]: x[r0 + i][c0 .. c0 + 7] quantized
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      const Vec8 v = in.load(r0 + i, c0, cols);
      if (amax_partial != nullptr) amax = fmaxf(amax, amax8(v));
      row[i] = quant8<F>(v, scale);
    }
    if (q != nullptr) {
#pragma unroll
      for (int i = 0; i < kVec; ++i) *reinterpret_cast<uint2*>(q + (r0 + i) * cols + c0) = row[i];
    }
    if (qt != nullptr) {
      uint32_t top_lo[4], top_hi[4], bottom_lo[4], bottom_hi[4];  // rows 0-3 / 4-7, columns 0-3 / 4-7
      transpose4x4(row[0].x, row[1].x, row[2].x, row[3].x, top_lo);
      transpose4x4(row[0].y, row[1].y, row[2].y, row[3].y, top_hi);
      transpose4x4(row[4].x, row[5].x, row[6].x, row[7].x, bottom_lo);
      transpose4x4(row[4].y, row[5].y, row[6].y, row[7].y, bottom_hi);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        *reinterpret_cast<uint2*>(qt + (c0 + j) * rows + r0) = make_uint2(top_lo[j], bottom_lo[j]);
        *reinterpret_cast<uint2*>(qt + (c0 + 4 + j) * rows + r0) = make_uint2(top_hi[j], bottom_hi[j]);
      }
    }
  }
  if (amax_partial != nullptr) {  // the same for every thread of the launch
    amax = block_max<kThreads>(amax);
    if (threadIdx.x == 0) amax_partial[int64_t{blockIdx.y} * gridDim.x + blockIdx.x] = amax;
    if (threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0) {
      *scale_out = scale;
      *scale_inv_out = 1.f / scale;
    }
  }
}

// The delayed-scaling update after a cast (one block): the tensor's amax from the cast's
// partials enters the history (newest first, the oldest dropped) and state[0] becomes the
// multiplier of the history's largest amax, for the next cast.
__global__ void __launch_bounds__(kThreads) delayed_update(const float* __restrict__ partial, int64_t partials,
                                                           float* __restrict__ state, int history,
                                                           Fp8Format format) {
  float amax = 0.f;
  for (int64_t i = threadIdx.x; i < partials; i += kThreads) amax = fmaxf(amax, partial[i]);
  amax = block_max<kThreads>(amax);
  if (threadIdx.x == 0) {
    float* h = state + 1;
    float m = amax;
    for (int i = history - 1; i > 0; --i) {
      h[i] = h[i - 1];
      m = fmaxf(m, h[i]);
    }
    h[0] = amax;
    state[0] = fp8_scale_from_amax(m, format);
  }
}

void check_shape(const char* fn, int64_t rows, int64_t cols) {
  if (rows % kVec != 0 || cols % kVec != 0)
    throw std::invalid_argument(std::string(fn) + ": rows and cols must be multiples of 8, got " +
                                std::to_string(rows) + " x " + std::to_string(cols));
}

}  // namespace

void launch_fp8_tensor_scale(const Fp8TensorScaleArgs& a, cudaStream_t stream) {
  check_shape("launch_fp8_tensor_scale", a.rows, a.cols);
  int partials = 0;
  if (a.gelu) {
    partials = static_cast<int>(fp8_quantize_partials(a.rows, a.cols));
    const BiasGeluInput in{static_cast<const __nv_bfloat16*>(a.x), static_cast<const __nv_bfloat16*>(a.gelu_bias),
                           nullptr};
    amax_partials<<<partials, kThreads, 0, stream>>>(in, a.partial, a.rows, a.cols);
    CUDA_CHECK_LAUNCH();
  } else {
    partials = launch_fp8_amax_partials(a.x, a.partial, a.rows, a.cols, stream);
  }
  finish_scale<<<1, kThreads, 0, stream>>>(a.partial, partials, a.scale, a.scale_inv, a.format);
  CUDA_CHECK_LAUNCH();
}

namespace {

template <typename In>
void launch_cast(const In& in, const Fp8QuantizeTransposeArgs& a, dim3 grid, cudaStream_t stream) {
  if (a.format == Fp8Format::kE4m3)
    quantize_transpose<__NV_E4M3><<<grid, kThreads, 0, stream>>>(in, a.scale, a.q, a.qt, a.rows, a.cols,
                                                                 a.amax_partial, a.scale_out, a.scale_inv_out);
  else
    quantize_transpose<__NV_E5M2><<<grid, kThreads, 0, stream>>>(in, a.scale, a.q, a.qt, a.rows, a.cols,
                                                                 a.amax_partial, a.scale_out, a.scale_inv_out);
  CUDA_CHECK_LAUNCH();
}

dim3 cast_grid(int64_t rows, int64_t cols) {
  const int64_t row_tiles = (rows + kTileRows - 1) / kTileRows;
  if (row_tiles > 65535)
    throw std::invalid_argument("launch_fp8_quantize_transpose: more than 65,535 tiles of 256 rows");
  return dim3(static_cast<unsigned>((cols + kTileCols - 1) / kTileCols), static_cast<unsigned>(row_tiles));
}

}  // namespace

int64_t fp8_quantize_transpose_blocks(int64_t rows, int64_t cols) {
  const dim3 g = cast_grid(rows, cols);
  return int64_t{g.x} * g.y;
}

void launch_fp8_quantize_transpose(const Fp8QuantizeTransposeArgs& a, cudaStream_t stream) {
  check_shape("launch_fp8_quantize_transpose", a.rows, a.cols);
  if (a.amax_partial != nullptr && (a.scale_out == nullptr || a.scale_inv_out == nullptr))
    throw std::invalid_argument("launch_fp8_quantize_transpose: amax_partial needs scale_out and scale_inv_out");
  if (a.rows == 0 || a.cols == 0 || (a.q == nullptr && a.qt == nullptr)) return;
  const dim3 grid = cast_grid(a.rows, a.cols);
  const auto* x = static_cast<const __nv_bfloat16*>(a.x);
  if (a.gelu)
    launch_cast(BiasGeluInput{x, static_cast<const __nv_bfloat16*>(a.gelu_bias), nullptr}, a, grid, stream);
  else
    launch_cast(PlainInput{x}, a, grid, stream);
}

void launch_fp8_delayed_update(const float* partial, int64_t partials, float* state, int64_t history,
                               Fp8Format format, cudaStream_t stream) {
  if (history < 1 || history > kFp8MaxAmaxHistory)
    throw std::invalid_argument("launch_fp8_delayed_update: history must be 1.." +
                                std::to_string(kFp8MaxAmaxHistory) + ", got " + std::to_string(history));
  delayed_update<<<1, kThreads, 0, stream>>>(partial, partials, state, static_cast<int>(history), format);
  CUDA_CHECK_LAUNCH();
}

}  // namespace gptbench

// bf16 → e4m3 quantizing kernels (ops/fp8/quantize.h; the scaling math is ops/fp8/scaling.h).
// Every thread moves 8 elements at a time: one 16-byte load of bf16, one 8-byte store of e4m3
// (cvt.rn.satfinite.e4m3x2.f32 on compute capability >= 8.9, its emulation below).
//   row:          a warp per row, 8 rows per 256-thread block: pass 1 reduces the row's amax
//                 (warp butterfly), pass 2 reads the row again (L1/L2 hits for GPT-2's rows)
//                 and stores.
//   block1x128:   16 lanes per 128-element block (8 each), the block's values stay in
//                 registers: one read, one butterfly over the 16 lanes, one store.
//   block128x128: a 256-thread block per 128 × 128 tile, 64 values per thread in registers,
//                 amax over warps through shared memory.
//   tensor:       two kernels: per-block maxima over a grid-stride loop (at most 1,024 blocks),
//                 then the quantizing kernel, each of whose blocks first reduces those maxima
//                 (no atomics, no memset, deterministic); its block 0 writes scale_inv.
// The row and 1x128 kernels read their values through an input (ops/fp8/inputs.cuh): the bf16 tensor itself, or
// (launch_fp8_quantize_gelu) GELU's output computed from the MLP-up GEMM's output and bias, so
// the bf16 activation is quantized where it is produced (the row kernel computes it twice,
// once per pass, from the same reads: the same values).
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <stdexcept>

#include "ops/cuda_check.h"
#include "ops/device/attributes.h"
#include "ops/device/reduce.cuh"
#include "ops/fp8/inputs.cuh"
#include "ops/fp8/quantize_kernels.h"

namespace gptbench {
namespace {

using fp8dev::amax8;
using fp8dev::BiasGeluInput;
using fp8dev::kVec;
using fp8dev::load8;
using fp8dev::PlainInput;
using fp8dev::Vec8;

constexpr int kThreads = 256;
constexpr int kMaxPartials = 1024;

// e4m3(x · scale) of 8 values, element 0 in the lowest byte.
__device__ __forceinline__ uint2 quant8(const Vec8& x, float scale) {
  uint32_t w[2] = {0, 0};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = make_float2(x.v[2 * i] * scale, x.v[2 * i + 1] * scale);
    const uint32_t pair = __nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, __NV_E4M3);
    w[i / 2] |= pair << (16 * (i % 2));
  }
  return make_uint2(w[0], w[1]);
}

__device__ __forceinline__ void store8(uint8_t* q, uint2 v) { *reinterpret_cast<uint2*>(q) = v; }

template <typename In>
__global__ void __launch_bounds__(kThreads) quantize_rows(In in, uint8_t* __restrict__ q,
                                                          float* __restrict__ scale_inv,
                                                          int64_t rows, int64_t cols) {
  const int64_t row = int64_t{blockIdx.x} * (kThreads / kWarpSize) + threadIdx.x / kWarpSize;
  if (row >= rows) return;  // whole warps leave together
  const int lane = threadIdx.x % kWarpSize;
  uint8_t* qr = q + row * cols;
  float amax = 0.f;
#pragma unroll 4
  for (int64_t c = int64_t{lane} * kVec; c < cols; c += kWarpSize * kVec) amax = fmaxf(amax, amax8(in.load(row, c, cols)));
  amax = warp_max(amax);
  const float scale = fp8_scale_from_amax(amax);
  if (lane == 0) scale_inv[row] = 1.f / scale;
#pragma unroll 4
  for (int64_t c = int64_t{lane} * kVec; c < cols; c += kWarpSize * kVec) {
    const Vec8 v = in.load(row, c, cols);
    in.keep(row, c, cols, v);
    store8(qr + c, quant8(v, scale));
  }
}

template <typename In>
__global__ void __launch_bounds__(kThreads) quantize_blocks_1x128(In in, uint8_t* __restrict__ q,
                                                                  float* __restrict__ scale_inv,
                                                                  int64_t rows, int64_t cols) {
  constexpr int kLanes = kFp8Block / kVec;  // 16 lanes per block of 128
  const int64_t nb = fp8_blocks(cols);
  const int64_t group = (int64_t{blockIdx.x} * kThreads + threadIdx.x) / kLanes;
  const int sub = threadIdx.x % kLanes;
  const int64_t row = group / nb, kb = group % nb;
  const int64_t col = kb * kFp8Block + sub * kVec;
  const bool active = row < rows && col < cols;
  Vec8 v{};
  if (active) v = in.load(row, col, cols);
  // Every lane takes part in the butterfly (full mask), active or not.
  const float scale = fp8_scale_from_amax(warp_max<kLanes>(amax8(v)));
  if (row >= rows) return;
  if (sub == 0) scale_inv[kb * rows + row] = 1.f / scale;
  if (active) {
    in.keep(row, col, cols, v);
    store8(q + row * cols + col, quant8(v, scale));
  }
}

__global__ void __launch_bounds__(kThreads) quantize_blocks_128x128(const __nv_bfloat16* __restrict__ x,
                                                                    uint8_t* __restrict__ q,
                                                                    float* __restrict__ scale_inv,
                                                                    int64_t rows, int64_t cols) {
  constexpr int kChunks = kFp8Block / kVec;                 // 16 vectors per tile row
  constexpr int kSteps = kFp8Block * kChunks / kThreads;    // 8 vectors per thread
  const int64_t rb = blockIdx.y, cb = blockIdx.x;
  const int64_t col = cb * kFp8Block + (threadIdx.x % kChunks) * kVec;
  Vec8 v[kSteps];
  float amax = 0.f;
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    const int64_t row = rb * kFp8Block + s * (kThreads / kChunks) + threadIdx.x / kChunks;
    v[s] = Vec8{};
    if (row < rows && col < cols) v[s] = load8(x + row * cols + col);
    amax = fmaxf(amax, amax8(v[s]));
  }
  const float scale = fp8_scale_from_amax(block_max<kThreads>(amax));
  const int64_t ld = fp8_block_ld(cols);
  if (threadIdx.x == 0) {
    scale_inv[rb * ld + cb] = 1.f / scale;
    if (cb == gridDim.x - 1)  // the padding of the row of scales
      for (int64_t p = cb + 1; p < ld; ++p) scale_inv[rb * ld + p] = 1.f;
  }
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    const int64_t row = rb * kFp8Block + s * (kThreads / kChunks) + threadIdx.x / kChunks;
    if (row < rows && col < cols) store8(q + row * cols + col, quant8(v[s], scale));
  }
}

// Per-tensor pass 1: partial[blockIdx.x] = max |x| over the block's share of the n / 8 vectors.
__global__ void __launch_bounds__(kThreads) tensor_amax(const __nv_bfloat16* __restrict__ x,
                                                        float* __restrict__ partial, int64_t nvec) {
  float amax = 0.f;
  const int64_t stride = int64_t{gridDim.x} * kThreads;
#pragma unroll 4
  for (int64_t i = int64_t{blockIdx.x} * kThreads + threadIdx.x; i < nvec; i += stride)
    amax = fmaxf(amax, amax8(load8(x + i * kVec)));
  amax = block_max<kThreads>(amax);
  if (threadIdx.x == 0) partial[blockIdx.x] = amax;
}

// Per-tensor pass 2: the global amax from the partials, then the grid-stride quantization.
__global__ void __launch_bounds__(kThreads) tensor_quantize(const __nv_bfloat16* __restrict__ x,
                                                            uint8_t* __restrict__ q,
                                                            float* __restrict__ scale_inv,
                                                            const float* __restrict__ partial,
                                                            int partials, int64_t nvec) {
  float amax = 0.f;
  for (int i = threadIdx.x; i < partials; i += kThreads) amax = fmaxf(amax, partial[i]);
  const float scale = fp8_scale_from_amax(block_max<kThreads>(amax));
  if (blockIdx.x == 0 && threadIdx.x == 0) scale_inv[0] = 1.f / scale;
  const int64_t stride = int64_t{gridDim.x} * kThreads;
#pragma unroll 4
  for (int64_t i = int64_t{blockIdx.x} * kThreads + threadIdx.x; i < nvec; i += stride)
    store8(q + i * kVec, quant8(load8(x + i * kVec), scale));
}

unsigned grid_of(int64_t threads) { return static_cast<unsigned>((threads + kThreads - 1) / kThreads); }
unsigned grid_1x128(int64_t rows, int64_t cols) { return grid_of(rows * fp8_blocks(cols) * (kFp8Block / kVec)); }

}  // namespace

int64_t fp8_quantize_partials(int64_t rows, int64_t cols) {
  const int64_t nvec = rows * cols / kVec;
  // Enough blocks to fill the GPU (8 resident per SM at 256 threads), none idle on small tensors.
  const int64_t fill = int64_t{8} * sm_count();
  return std::max<int64_t>(1, std::min<int64_t>({(nvec + kThreads - 1) / kThreads, fill, kMaxPartials}));
}

void launch_fp8_quantize(const Fp8QuantizeArgs& a, cudaStream_t stream) {
  if (a.cols % kVec != 0)
    throw std::invalid_argument("launch_fp8_quantize: cols must be a multiple of 8, got " +
                                std::to_string(a.cols));
  if (a.rows <= 0 || a.cols <= 0) return;
  const auto* x = static_cast<const __nv_bfloat16*>(a.x);
  switch (a.granularity) {
    case Fp8Granularity::kRow:
      quantize_rows<<<grid_of(a.rows * kWarpSize), kThreads, 0, stream>>>(PlainInput{x}, a.q, a.scale_inv, a.rows,
                                                                          a.cols);
      break;
    case Fp8Granularity::kBlock1x128:
      quantize_blocks_1x128<<<grid_1x128(a.rows, a.cols), kThreads, 0, stream>>>(PlainInput{x}, a.q, a.scale_inv,
                                                                                 a.rows, a.cols);
      break;
    case Fp8Granularity::kBlock128x128: {
      const dim3 grid(static_cast<unsigned>(fp8_blocks(a.cols)), static_cast<unsigned>(fp8_blocks(a.rows)));
      quantize_blocks_128x128<<<grid, kThreads, 0, stream>>>(x, a.q, a.scale_inv, a.rows, a.cols);
      break;
    }
    case Fp8Granularity::kTensor: {
      const int partials = launch_fp8_amax_partials(x, a.partial, a.rows, a.cols, stream);
      tensor_quantize<<<partials, kThreads, 0, stream>>>(x, a.q, a.scale_inv, a.partial, partials,
                                                         a.rows * a.cols / kVec);
      break;
    }
  }
  CUDA_CHECK_LAUNCH();
}

int launch_fp8_amax_partials(const void* x, float* partial, int64_t rows, int64_t cols, cudaStream_t stream) {
  const int partials = static_cast<int>(fp8_quantize_partials(rows, cols));
  tensor_amax<<<partials, kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(x), partial, rows * cols / kVec);
  CUDA_CHECK_LAUNCH();
  return partials;
}

void launch_fp8_quantize_gelu(const Fp8GeluQuantizeArgs& a, cudaStream_t stream) {
  if (a.cols % kVec != 0)
    throw std::invalid_argument("launch_fp8_quantize_gelu: cols must be a multiple of 8, got " + std::to_string(a.cols));
  if (a.rows <= 0 || a.cols <= 0) return;
  const BiasGeluInput in{static_cast<const __nv_bfloat16*>(a.u), static_cast<const __nv_bfloat16*>(a.bias),
                         static_cast<__nv_bfloat16*>(a.y)};
  switch (a.granularity) {
    case Fp8Granularity::kRow:
      quantize_rows<<<grid_of(a.rows * kWarpSize), kThreads, 0, stream>>>(in, a.q, a.scale_inv, a.rows, a.cols);
      break;
    case Fp8Granularity::kBlock1x128:
      quantize_blocks_1x128<<<grid_1x128(a.rows, a.cols), kThreads, 0, stream>>>(in, a.q, a.scale_inv, a.rows, a.cols);
      break;
    default:
      throw std::invalid_argument(std::string("launch_fp8_quantize_gelu: fuses per-row and 1x128 scales only, not ") +
                                  fp8_granularity_name(a.granularity));
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace gptbench

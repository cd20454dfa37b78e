// The FP8 forward's quantization pass (ops/attention/flash_fp8.h): one block of 256 threads per
// (block of 128 rows, batch·head) of q, k or v, d = 128. The block's 128 × 128 values are loaded
// (16 bytes per thread and step; rows outside 0 .. L-1 read as 0), their amax reduced over the
// block, scale = amax / 448 (the largest e4m3 value; 1 for an all-zero block, whose values stay
// 0) written, and x / scale rounded to e4m3 (round to nearest even, saturating) stored: q and k
// row by row; v transposed through shared memory into vᵀ rows of keys, each group of 32 keys in
// the order of flash_fp8_v_key (zero beyond L up to Lv).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "ops/attention/flash_common.cuh"
#include "ops/attention/flash_kernels.h"
#include "ops/attention/flash_tiles.h"
#include "ops/attention/sm90/flash_sm90_common.cuh"
#include "ops/cuda_check.h"
#include "ops/device/reduce.cuh"

namespace gptbench {
namespace {

constexpr int kRows = 128, kD = 128, kThreads = 256;
constexpr int kChunks = kD / 8;                   // 16-byte chunks of a row
constexpr int kRowsPerStep = kThreads / kChunks;  // 16

template <typename T>
__global__ void __launch_bounds__(kThreads) flash_fp8_quantize_kernel(const FlashFp8QuantParams p) {
  __shared__ float warp_amax[kThreads / 32];
  __shared__ uint8_t tile[kRows][kD + 4];  // v only: e4m3 values by key, padded against conflicts
  const int blocks = (p.L + kRows - 1) / kRows;
  const int blk = blockIdx.x % blocks;
  const int64_t bh = blockIdx.x / blocks;
  const int b = static_cast<int>(bh / p.H), h = static_cast<int>(bh % p.H);
  // q's blocks end at row L (the forward's query tiles), k's and v's start at 0.
  const int row0 = p.mode == FlashFp8QuantParams::kQ ? p.L - (blocks - blk) * kRows : blk * kRows;
  const int chunk = threadIdx.x % kChunks;
  const T* src = static_cast<const T*>(p.src) + b * p.st.batch + h * p.st.head + chunk * 8;

  float x[kRows / kRowsPerStep][8];
  float amax = 0.f;
#pragma unroll
  for (int s = 0; s < kRows / kRowsPerStep; ++s) {
    const int row = row0 + s * kRowsPerStep + threadIdx.x / kChunks;
    uint4 raw = make_uint4(0, 0, 0, 0);
    if (row >= 0 && row < p.L) raw = *reinterpret_cast<const uint4*>(src + row * p.st.row);
    const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = flash::Ops<T>::unpack(w[i]);
      x[s][2 * i] = f.x;
      x[s][2 * i + 1] = f.y;
      amax = fmaxf(amax, fmaxf(fabsf(f.x), fabsf(f.y)));
    }
  }
  amax = warp_max(amax);
  if (threadIdx.x % 32 == 0) warp_amax[threadIdx.x / 32] = amax;
  __syncthreads();
  amax = warp_amax[0];
#pragma unroll
  for (int i = 1; i < kThreads / 32; ++i) amax = fmaxf(amax, warp_amax[i]);
  const float scale = amax > 0.f ? amax / 448.f : 1.f;
  if (threadIdx.x == 0) p.scale[bh * blocks + blk] = scale;

  uint8_t* dst = static_cast<uint8_t*>(p.dst);
#pragma unroll
  for (int s = 0; s < kRows / kRowsPerStep; ++s) {
    const int r = s * kRowsPerStep + threadIdx.x / kChunks, row = row0 + r;
    float y[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) y[i] = x[s][i] / scale;
    const uint32_t lo = flash_sm90::pack_e4m3x4(y[0], y[1], y[2], y[3]);
    const uint32_t hi = flash_sm90::pack_e4m3x4(y[4], y[5], y[6], y[7]);
    if (p.mode != FlashFp8QuantParams::kV) {
      if (row >= 0 && row < p.L)
        *reinterpret_cast<uint2*>(dst + (bh * p.L + row) * kD + chunk * 8) = make_uint2(lo, hi);
    } else {
      uint32_t* at = reinterpret_cast<uint32_t*>(&tile[r][chunk * 8]);  // rows of 33 words
      at[0] = lo;  // zero beyond L
      at[1] = hi;
    }
  }
  if (p.mode != FlashFp8QuantParams::kV) return;
  __syncthreads();
  // vᵀ row c (a column of v), positions 4w .. 4w + 3 of the block: 32 words per row, 8 rows per
  // step of the 256 threads.
  const int lv = p.lv;
  for (int idx = threadIdx.x; idx < kD * (kRows / 4); idx += kThreads) {
    const int c = idx / (kRows / 4), pos = 4 * (idx % (kRows / 4));
    if (row0 + pos >= lv) continue;
    uint32_t word = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int q = pos + i;
      word |= uint32_t{tile[32 * (q / 32) + flash_fp8_v_key(q % 32)][c]} << (8 * i);
    }
    *reinterpret_cast<uint32_t*>(dst + (bh * kD + c) * lv + row0 + pos) = word;
  }
}

}  // namespace

void launch_flash_fp8_quantize(const FlashFp8QuantParams& p, cudaStream_t stream) {
  if (p.B <= 0 || p.H <= 0 || p.L <= 0) return;
  const int64_t grid = int64_t{p.B} * p.H * ((p.L + kRows - 1) / kRows);
  flash::with_dtype(p.dtype, [&](auto t) {
    flash_fp8_quantize_kernel<decltype(t)>
        <<<static_cast<unsigned>(grid), kThreads, 0, stream>>>(p);
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace gptbench

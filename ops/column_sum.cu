// Column sums of a row-major matrix (ops/column_sum_kernels.h): the bias gradients of the fused
// Linear layers (model/fused_linear.cpp), Σ over B·T rows of a bf16 gradient. LibTorch's
// at::sum(dy, 0) reduces such a matrix at about 40% of copy bandwidth on an H200 (96 calls,
// 3.9 ms of a GPT-2 medium step); a block here reads whole 512-byte row segments, 8 rows at a time,
// and keeps 8 fp32 column sums per thread.
#include <cuda_bf16.h>

#include <algorithm>

#include "ops/column_sum_kernels.h"
#include "ops/cuda_check.h"
#include "ops/device/attributes.h"
#include "ops/device/convert.cuh"
#include "ops/device/pack.cuh"

namespace gptbench {
namespace {

constexpr int kCols = 8;                     // columns per thread: one 16-byte bf16 load
constexpr int kTx = 32, kTy = 8;             // a warp across 256 columns, 8 warps down the rows
constexpr int kTileCols = kTx * kCols;       // 256
constexpr int kBlocksPerSm = 4;

template <typename T>
__device__ __forceinline__ void add8(const T* p, float (&acc)[kCols]) {
  constexpr int kPack = 16 / sizeof(T);  // 8 bf16 or 4 fp32 per 16-byte load
#pragma unroll
  for (int j = 0; j < kCols; j += kPack) {
    const Pack<T, kPack> v = load_pack<T, kPack, true>(p + j);
#pragma unroll
    for (int k = 0; k < kPack; ++k) acc[j + k] += to_float(v.v[k]);
  }
}

template <typename T>
__global__ void __launch_bounds__(kTx * kTy)
    column_sum_partial_kernel(const T* __restrict__ x, int64_t rows, int64_t cols,
                              int64_t rows_per_part, float* __restrict__ partial) {
  __shared__ float sums[kTy][kCols][kTx];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * kTx + tx) * kCols;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * rows_per_part;
  const int64_t r1 = min(rows, r0 + rows_per_part);
  float acc[kCols] = {};
  if (c0 < cols)
    for (int64_t r = r0 + ty; r < r1; r += kTy) add8(x + r * cols + c0, acc);
#pragma unroll
  for (int j = 0; j < kCols; ++j) sums[ty][j][tx] = acc[j];
  __syncthreads();
  if (ty == 0 && c0 < cols) {
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      float t = sums[0][j][tx];
      for (int y = 1; y < kTy; ++y) t += sums[y][j][tx];  // in row order: deterministic
      partial[static_cast<int64_t>(blockIdx.y) * cols + c0 + j] = t;
    }
  }
}

__global__ void column_sum_final_kernel(const float* __restrict__ partial, int64_t parts,
                                        int64_t cols, float* __restrict__ out) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float t = 0.f;
  for (int64_t p = 0; p < parts; ++p) t += partial[p * cols + c];
  out[c] = t;
}

}  // namespace

int64_t column_sum_parts(int64_t rows, int64_t cols) {
  const int64_t tiles = (cols + kTileCols - 1) / kTileCols;
  const int64_t want = (static_cast<int64_t>(sm_count()) * kBlocksPerSm + tiles - 1) / tiles;
  const int64_t most = (rows + kTy - 1) / kTy;  // at least kTy rows a part
  return std::max<int64_t>(1, std::min(want, most));
}

void launch_column_sum(const void* x, ElemType dtype, int64_t rows, int64_t cols, float* partial,
                       float* out, cudaStream_t stream) {
  if (cols == 0) return;
  const int64_t parts = column_sum_parts(rows, cols);
  const int64_t rows_per_part = (rows + parts - 1) / parts;
  const dim3 grid(static_cast<unsigned>((cols + kTileCols - 1) / kTileCols), static_cast<unsigned>(parts));
  with_elem_type<float, __nv_bfloat16>(dtype, "column_sum", [&](auto t) {
    using T = decltype(t);
    column_sum_partial_kernel<T><<<grid, dim3(kTx, kTy), 0, stream>>>(
        static_cast<const T*>(x), rows, cols, rows_per_part, partial);
  });
  CUDA_CHECK_LAUNCH();
  column_sum_final_kernel<<<static_cast<unsigned>((cols + 255) / 256), 256, 0, stream>>>(
      partial, parts, cols, out);
  CUDA_CHECK_LAUNCH();
}

}  // namespace gptbench

// Column sums of a row-major matrix (ops/column_sum_kernels.h): the bias gradients of the fused
// Linear layers (model/fused_linear.cpp), Σ over B·T rows of a bf16 gradient. LibTorch's
// at::sum(dy, 0) reduces such a matrix at about 40% of copy bandwidth on an H200 (96 calls,
// 3.9 ms of a GPT-2 medium step); a block here reads whole 512-byte row segments, 8 rows at a time,
// and keeps 8 fp32 column sums per thread. The same walk computes tanh-GELU's backward
// (d_pre = dh · gelu'(pre), written in bf16) and sums what it writes: the MLP's c_fc bias
// gradient in the pass that makes d_pre.
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
__device__ __forceinline__ void add_pack8(const T* p, float (&acc)[kCols]) {
  constexpr int kPack = 16 / sizeof(T);  // 8 bf16 or 4 fp32 per 16-byte load
#pragma unroll
  for (int j = 0; j < kCols; j += kPack) {
    const Pack<T, kPack> v = load_pack<T, kPack, true>(p + j);
#pragma unroll
    for (int k = 0; k < kPack; ++k) acc[j + k] += to_float(v.v[k]);
  }
}

// Row ops: add8(r, c0, acc) adds row r's columns c0 .. c0+7 (of what is summed) to acc.
template <typename T>
struct SumRows {
  const T* __restrict__ x;
  int64_t cols;
  __device__ __forceinline__ void add8(int64_t r, int64_t c0, float (&acc)[kCols]) const {
    add_pack8(x + r * cols + c0, acc);
  }
};

// d/dx of 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
__device__ __forceinline__ float gelu_tanh_grad(float x) {
  constexpr float k0 = 0.7978845608028654f, k1 = 0.044715f;
  const float t = tanhf(k0 * (x + k1 * x * x * x));
  return 0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * k0 * (1.f + 3.f * k1 * x * x);
}

// GELU's input is pre, or bf16(pre + bias) where a bias is given (the bias add it follows).
struct GeluGradRows {
  const __nv_bfloat16* __restrict__ dh;
  const __nv_bfloat16* __restrict__ pre;
  const __nv_bfloat16* __restrict__ bias;  // (cols) or nullptr
  __nv_bfloat16* __restrict__ d_pre;
  int64_t cols;
  __device__ __forceinline__ void add8(int64_t r, int64_t c0, float (&acc)[kCols]) const {
    const int64_t o = r * cols + c0;
    const auto g = load_pack<__nv_bfloat16, kCols, true>(dh + o);
    auto x = load_pack<__nv_bfloat16, kCols, true>(pre + o);
    if (bias != nullptr) {
      const auto b = load_pack<__nv_bfloat16, kCols, true>(bias + c0);
#pragma unroll
      for (int k = 0; k < kCols; ++k) x.v[k] = from_float<__nv_bfloat16>(to_float(x.v[k]) + to_float(b.v[k]));
    }
    Pack<__nv_bfloat16, kCols> d;
#pragma unroll
    for (int k = 0; k < kCols; ++k) {
      d.v[k] = from_float<__nv_bfloat16>(to_float(g.v[k]) * gelu_tanh_grad(to_float(x.v[k])));
      acc[k] += to_float(d.v[k]);  // the sum of what is written, as a sum over d_pre would be
    }
    store_pack<__nv_bfloat16, kCols>(d_pre + o, d);
  }
};

template <typename Op>
__global__ void __launch_bounds__(kTx * kTy)
    column_sum_partial_kernel(Op op, int64_t rows, int64_t cols, int64_t rows_per_part,
                              float* __restrict__ partial) {
  __shared__ float sums[kTy][kCols][kTx];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * kTx + tx) * kCols;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * rows_per_part;
  const int64_t r1 = min(rows, r0 + rows_per_part);
  float acc[kCols] = {};
  if (c0 < cols)
    for (int64_t r = r0 + ty; r < r1; r += kTy) op.add8(r, c0, acc);
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

namespace {

// The partial sums of op's rows, then their sum over the parts into out.
template <typename Op>
void launch_partials(const Op& op, int64_t rows, int64_t cols, float* partial, float* out,
                     cudaStream_t stream) {
  const int64_t parts = column_sum_parts(rows, cols);
  const int64_t rows_per_part = (rows + parts - 1) / parts;
  const dim3 grid(static_cast<unsigned>((cols + kTileCols - 1) / kTileCols), static_cast<unsigned>(parts));
  column_sum_partial_kernel<<<grid, dim3(kTx, kTy), 0, stream>>>(op, rows, cols, rows_per_part, partial);
  CUDA_CHECK_LAUNCH();
  column_sum_final_kernel<<<static_cast<unsigned>((cols + 255) / 256), 256, 0, stream>>>(
      partial, parts, cols, out);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_column_sum(const void* x, ElemType dtype, int64_t rows, int64_t cols, float* partial,
                       float* out, cudaStream_t stream) {
  if (cols == 0) return;
  with_elem_type<float, __nv_bfloat16>(dtype, "column_sum", [&](auto t) {
    using T = decltype(t);
    launch_partials(SumRows<T>{static_cast<const T*>(x), cols}, rows, cols, partial, out, stream);
  });
}

void launch_gelu_backward_column_sum(const void* dh, const void* pre, const void* bias, void* d_pre,
                                     int64_t rows, int64_t cols, float* partial, float* out,
                                     cudaStream_t stream) {
  if (cols == 0) return;
  const GeluGradRows op{static_cast<const __nv_bfloat16*>(dh), static_cast<const __nv_bfloat16*>(pre),
                        static_cast<const __nv_bfloat16*>(bias), static_cast<__nv_bfloat16*>(d_pre), cols};
  launch_partials(op, rows, cols, partial, out, stream);
}

}  // namespace gptbench

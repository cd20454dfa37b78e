// Fused residual add + LayerNorm, forward and backward (the launchers' contract is in
// ops/layernorm_kernels.h). What it replaces in a GPT-2 block under bf16 autocast: LibTorch's
// fp32 add (x + branch), its LayerNorm (which autocast runs in fp32), the cast of the fp32
// output to bf16 for the next Linear, and in backward the cast of the bf16 gradient to fp32,
// LayerNorm's input-gradient kernel, its gamma/beta reduction, and the add of the residual
// gradient: per LayerNorm and step about 8 passes over (rows, C) fp32 become 3 (forward: read
// x and branch, write h and y; backward: read dy, h and dres, write dx and dbranch).
// One warp per row, the row in registers (VEC float4 groups per lane), rows in a grid-stride
// loop. The backward keeps each lane's columns' dgamma/dbeta sums in registers over its rows,
// adds the block's warps in shared memory (in warp order) and writes one partial row per block;
// a second kernel adds the partials: no atomics, so the result is deterministic.
#include <cuda_bf16.h>

#include <mutex>
#include <vector>

#include "ops/cuda_check.h"
#include "ops/device/convert.cuh"
#include "ops/device/reduce.cuh"
#include "ops/layernorm_kernels.h"

namespace gptbench {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kFwdBlocksPerSm = 8;  // the forward's grid: 8 blocks per SM, resident or queued
constexpr int kBwdBlocksPerSm = 2;  // VEC <= 6 (C <= 768); larger rows run one block per SM

// Four consecutive values of a row as float4, from/to fp32 or bf16 storage.
__device__ __forceinline__ float4 load4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ float4 load4(const __nv_bfloat16* p) {
  const uint2 raw = *reinterpret_cast<const uint2*>(p);
  const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.x));
  const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.y));
  return make_float4(a.x, a.y, b.x, b.y);
}
__device__ __forceinline__ void store4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }
__device__ __forceinline__ void store4(__nv_bfloat16* p, float4 v) {
  const __nv_bfloat162 a = __floats2bfloat162_rn(v.x, v.y), b = __floats2bfloat162_rn(v.z, v.w);
  uint2 raw;
  raw.x = *reinterpret_cast<const uint32_t*>(&a);
  raw.y = *reinterpret_cast<const uint32_t*>(&b);
  *reinterpret_cast<uint2*>(p) = raw;
}
__device__ __forceinline__ float sum4(float4 v) { return (v.x + v.y) + (v.z + v.w); }

template <typename T>
__device__ __forceinline__ const T* typed(const void* p) { return static_cast<const T*>(p); }
template <typename T>
__device__ __forceinline__ T* typed(void* p) { return static_cast<T*>(p); }

// Lane `lane`'s k-th group is columns 4·(lane + 32·k) .. +3 (coalesced 16-byte accesses).
__device__ __forceinline__ bool group_ok(int lane, int k, int groups) { return lane + 32 * k < groups; }

template <int VEC, typename TB, typename TY>
__global__ void __launch_bounds__(kThreads)
    ln_forward_kernel(LnForward a) {
  const int lane = threadIdx.x % 32, groups = a.columns / 4;
  const float inv_c = 1.f / static_cast<float>(a.columns);
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; r < a.rows;
       r += static_cast<int64_t>(gridDim.x) * kWarps) {
    const int64_t base = r * a.columns;
    float4 h[VEC];
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      if (!group_ok(lane, k, groups)) continue;
      const int64_t e = base + 4 * (lane + 32 * k);
      h[k] = load4(a.x + e);
      if (a.branch != nullptr) {
        const float4 b = load4(typed<TB>(a.branch) + e);
        h[k] = make_float4(h[k].x + b.x, h[k].y + b.y, h[k].z + b.z, h[k].w + b.w);
        store4(a.x_out + e, h[k]);
      }
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < VEC; ++k)
      if (group_ok(lane, k, groups)) s += sum4(h[k]);
    const float mean = warp_sum(s) * inv_c;
    float q = 0.f;
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      if (!group_ok(lane, k, groups)) continue;
      const float dx = h[k].x - mean, dy = h[k].y - mean, dz = h[k].z - mean, dw = h[k].w - mean;
      q += (dx * dx + dy * dy) + (dz * dz + dw * dw);
    }
    const float rstd = rsqrtf(warp_sum(q) * inv_c + a.eps);
    if (lane == 0) {
      a.mean[r] = mean;
      a.rstd[r] = rstd;
    }
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      if (!group_ok(lane, k, groups)) continue;
      const int c = 4 * (lane + 32 * k);
      const float4 g = load4(a.gamma + c), b = load4(a.beta + c);
      const float4 y = make_float4((h[k].x - mean) * rstd * g.x + b.x, (h[k].y - mean) * rstd * g.y + b.y,
                                   (h[k].z - mean) * rstd * g.z + b.z, (h[k].w - mean) * rstd * g.w + b.w);
      store4(typed<TY>(a.y) + base + c, y);
    }
  }
}

template <int VEC, typename TD, typename TB>
__global__ void __launch_bounds__(kThreads, VEC <= 6 ? kBwdBlocksPerSm : 1)
    ln_backward_kernel(LnBackward a) {
  __shared__ float4 part[2][kLnMaxColumns / 4];  // dgamma, dbeta of the block
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, groups = a.columns / 4;
  const float inv_c = 1.f / static_cast<float>(a.columns);
  float4 acc_g[VEC], acc_b[VEC];
#pragma unroll
  for (int k = 0; k < VEC; ++k) acc_g[k] = acc_b[k] = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + warp; r < a.rows;
       r += static_cast<int64_t>(gridDim.x) * kWarps) {
    const int64_t base = r * a.columns;
    const float mean = a.mean[r], rstd = a.rstd[r];
    float4 dy[VEC], xh[VEC];
    float sg = 0.f, sgx = 0.f;
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      if (!group_ok(lane, k, groups)) continue;
      const int c = 4 * (lane + 32 * k);
      dy[k] = load4(typed<TD>(a.dy) + base + c);
      const float4 h = load4(a.h + base + c), g = load4(a.gamma + c);
      xh[k] = make_float4((h.x - mean) * rstd, (h.y - mean) * rstd, (h.z - mean) * rstd,
                          (h.w - mean) * rstd);
      const float4 gd = make_float4(dy[k].x * g.x, dy[k].y * g.y, dy[k].z * g.z, dy[k].w * g.w);
      sg += sum4(gd);
      sgx += (gd.x * xh[k].x + gd.y * xh[k].y) + (gd.z * xh[k].z + gd.w * xh[k].w);
      acc_g[k].x += dy[k].x * xh[k].x;
      acc_g[k].y += dy[k].y * xh[k].y;
      acc_g[k].z += dy[k].z * xh[k].z;
      acc_g[k].w += dy[k].w * xh[k].w;
      acc_b[k].x += dy[k].x;
      acc_b[k].y += dy[k].y;
      acc_b[k].z += dy[k].z;
      acc_b[k].w += dy[k].w;
    }
    const float mg = warp_sum(sg) * inv_c, mgx = warp_sum(sgx) * inv_c;
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      if (!group_ok(lane, k, groups)) continue;
      const int c = 4 * (lane + 32 * k);
      const float4 g = load4(a.gamma + c);
      float4 d = make_float4(rstd * (dy[k].x * g.x - mg - xh[k].x * mgx),
                             rstd * (dy[k].y * g.y - mg - xh[k].y * mgx),
                             rstd * (dy[k].z * g.z - mg - xh[k].z * mgx),
                             rstd * (dy[k].w * g.w - mg - xh[k].w * mgx));
      if (a.dres != nullptr) {
        const float4 rr = load4(a.dres + base + c);
        d = make_float4(d.x + rr.x, d.y + rr.y, d.z + rr.z, d.w + rr.w);
      }
      store4(a.dx + base + c, d);
      if (a.dbranch != nullptr) store4(typed<TB>(a.dbranch) + base + c, d);
    }
  }
  // The block's sums: warp 0 writes, the others add in turn (a fixed order: deterministic).
  for (int w = 0; w < kWarps; ++w) {
    if (warp == w) {
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        if (!group_ok(lane, k, groups)) continue;
        const int i = lane + 32 * k;
        if (w == 0) {
          part[0][i] = acc_g[k];
          part[1][i] = acc_b[k];
        } else {
          float4& pg = part[0][i];
          float4& pb = part[1][i];
          pg = make_float4(pg.x + acc_g[k].x, pg.y + acc_g[k].y, pg.z + acc_g[k].z, pg.w + acc_g[k].w);
          pb = make_float4(pb.x + acc_b[k].x, pb.y + acc_b[k].y, pb.z + acc_b[k].z, pb.w + acc_b[k].w);
        }
      }
    }
    __syncthreads();
  }
  float* out = a.scratch + static_cast<int64_t>(blockIdx.x) * 2 * a.columns;
  for (int i = threadIdx.x; i < groups; i += kThreads) {
    store4(out + 4 * i, part[0][i]);
    store4(out + a.columns + 4 * i, part[1][i]);
  }
}

// dgamma/dbeta: column j of the (blocks, 2·C) partials summed over the blocks. A block takes 32
// columns; its 8 warps' lanes split the partial rows and add in shared memory in warp order.
__global__ void __launch_bounds__(kThreads)
    ln_param_grad_kernel(const float* __restrict__ scratch, int parts, int columns,
                         float* __restrict__ dgamma, float* __restrict__ dbeta) {
  __shared__ float sums[kWarps][32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int j = blockIdx.x * 32 + lane, width = 2 * columns;
  float s = 0.f;
  if (j < width)
    for (int p = warp; p < parts; p += kWarps) s += scratch[static_cast<int64_t>(p) * width + j];
  sums[warp][lane] = s;
  __syncthreads();
  if (warp == 0 && j < width) {
    float t = 0.f;
    for (int w = 0; w < kWarps; ++w) t += sums[w][lane];
    if (j < columns)
      dgamma[j] = t;
    else
      dbeta[j - columns] = t;
  }
}

int sm_count() {
  static std::mutex mu;
  static std::vector<int> counts;
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  if (static_cast<int>(counts.size()) <= dev) counts.resize(dev + 1, 0);
  if (counts[dev] == 0)
    CUDA_CHECK(cudaDeviceGetAttribute(&counts[dev], cudaDevAttrMultiProcessorCount, dev));
  return counts[dev];
}

// Blocks for a grid-stride loop over rows, a warp per row: at most blocks_per_sm per SM, never
// more than the rows need (at least one).
int64_t row_blocks(int64_t rows, int blocks_per_sm) {
  const int64_t full = static_cast<int64_t>(sm_count()) * blocks_per_sm;
  const int64_t need = (rows + kWarps - 1) / kWarps;
  return need < full ? (need > 0 ? need : 1) : full;
}

int64_t backward_blocks(int64_t rows) { return row_blocks(rows, kBwdBlocksPerSm); }

// VEC = float4 groups per lane: the smallest instantiated count that covers the row.
template <typename F>
void with_vec(int columns, F&& f) {
  const int groups_per_lane = (columns / 4 + 31) / 32;
  if (groups_per_lane <= 2) f(std::integral_constant<int, 2>());
  else if (groups_per_lane <= 4) f(std::integral_constant<int, 4>());
  else if (groups_per_lane <= 6) f(std::integral_constant<int, 6>());
  else if (groups_per_lane <= 8) f(std::integral_constant<int, 8>());
  else if (groups_per_lane <= 10) f(std::integral_constant<int, 10>());
  else f(std::integral_constant<int, 13>());
}

template <typename F>
void with_type(ElemType t, F&& f) {
  with_elem_type<float, __nv_bfloat16>(t, "layernorm", f);
}

// f(vec, a, b): the vector count of `columns` (with_vec) and the storage types of dtypes a, b.
template <typename F>
void with_vec_and_types(int columns, ElemType a, ElemType b, F&& f) {
  with_vec(columns, [&](auto vec) {
    with_type(a, [&](auto ta) { with_type(b, [&](auto tb) { f(vec, ta, tb); }); });
  });
}

}  // namespace

bool layernorm_kernel_supports(int64_t columns) {
  return columns > 0 && columns % 4 == 0 && columns <= kLnMaxColumns;
}

int64_t layernorm_backward_scratch_floats(int64_t rows, int64_t columns) {
  return backward_blocks(rows) * 2 * columns;
}

void launch_layernorm_forward(const LnForward& a, cudaStream_t stream) {
  if (a.rows == 0) return;
  const int grid = static_cast<int>(row_blocks(a.rows, kFwdBlocksPerSm));
  with_vec_and_types(a.columns, a.branch_dtype, a.y_dtype, [&](auto vec, auto tb, auto ty) {
    ln_forward_kernel<decltype(vec)::value, decltype(tb), decltype(ty)>
        <<<grid, kThreads, 0, stream>>>(a);
  });
  CUDA_CHECK_LAUNCH();
}

void launch_layernorm_backward(const LnBackward& a, cudaStream_t stream) {
  if (a.rows == 0) return;
  const int grid = static_cast<int>(backward_blocks(a.rows));
  with_vec_and_types(a.columns, a.dy_dtype, a.dbranch_dtype, [&](auto vec, auto td, auto tb) {
    ln_backward_kernel<decltype(vec)::value, decltype(td), decltype(tb)>
        <<<grid, kThreads, 0, stream>>>(a);
  });
  CUDA_CHECK_LAUNCH();
  const int width = 2 * a.columns;
  ln_param_grad_kernel<<<(width + 31) / 32, kThreads, 0, stream>>>(a.scratch, grid, a.columns,
                                                                    a.dgamma, a.dbeta);
  CUDA_CHECK_LAUNCH();
}

}  // namespace gptbench

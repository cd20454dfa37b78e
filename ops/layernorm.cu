// Fused residual add + LayerNorm, forward and backward (the launchers' contract is in
// ops/layernorm_kernels.h). What it replaces in a GPT-2 block under bf16 autocast: LibTorch's
// fp32 add (x + branch), its LayerNorm (which autocast runs in fp32), the cast of the fp32
// output to bf16 for the next Linear, and in backward the cast of the bf16 gradient to fp32,
// LayerNorm's input-gradient kernel, its gamma/beta reduction, and the add of the residual
// gradient: per LayerNorm and step about 8 passes over (rows, C) fp32 become 3 (forward: read
// x and branch, write h and y; backward: read dy, h and dres, write dx and dbranch).
// One warp per row, the row in registers (VEC float4 groups per lane), rows in a grid-stride
// loop. The backward keeps each warp's dgamma/dbeta sums over its rows in shared memory (each
// lane its own columns), adds the block's warps in warp order and writes one partial row per
// block; a second kernel adds the partials: no atomics, so the result is deterministic.
// The forward can also quantize its bf16 output to e4m3 per row or per 1×128 block while the
// row is in registers (LnForward's y_fp8; ops/fp8/layernorm_fp8.h).
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <type_traits>

#include "ops/cuda_check.h"
#include "ops/device/attributes.h"
#include "ops/device/convert.cuh"
#include "ops/device/reduce.cuh"
#include "ops/layernorm_kernels.h"

namespace gptbench {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kFwdBlocksPerSm = 8;  // the forward's grid: 8 blocks per SM, resident or queued

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

// e4m3(v · scale) of four values to 4 bytes, element 0 in the lowest (ops/fp8/quantize.cu's
// conversion: round to nearest even, saturating).
__device__ __forceinline__ uint32_t e4m3x4(float4 v, float scale) {
  const uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(v.x * scale, v.y * scale), __NV_SATFINITE, __NV_E4M3);
  const uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(v.z * scale, v.w * scale), __NV_SATFINITE, __NV_E4M3);
  return lo | (hi << 16);
}
__device__ __forceinline__ float amax4(float4 v) { return fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w))); }
__device__ __forceinline__ float4 round_bf16(float4 v) {
  const auto r = [](float f) { return to_float(from_float<__nv_bfloat16>(f)); };  // as store4 rounds
  return make_float4(r(v.x), r(v.y), r(v.z), r(v.w));
}

// Row r's bf16-rounded outputs (lane's groups, as ln_forward_kernel holds them) to e4m3, per row
// or per 1×128 block (LnForward's y_fp8). The whole warp calls it.
template <int VEC>
__device__ __forceinline__ void quantize_row(const LnForward& a, int64_t r, int lane, int groups, const float4* y) {
  uint8_t* q = a.y_fp8 + r * a.columns;
  if (a.fp8_granularity == Fp8Granularity::kRow) {
    float m = 0.f;
#pragma unroll
    for (int k = 0; k < VEC; ++k)
      if (group_ok(lane, k, groups)) m = fmaxf(m, amax4(y[k]));
    const float scale = fp8_scale_from_amax(warp_max(m));
    if (lane == 0) a.y_scale_inv[r] = 1.f / scale;
#pragma unroll
    for (int k = 0; k < VEC; ++k)
      if (group_ok(lane, k, groups))
        *reinterpret_cast<uint32_t*>(q + 4 * (lane + 32 * k)) = e4m3x4(y[k], scale);
    return;
  }
  // 1×128: group k of the warp's 32 lanes is columns 128·k .. 128·k + 127 (C a multiple of 128,
  // so a group is whole or absent for every lane alike).
#pragma unroll
  for (int k = 0; k < VEC; ++k) {
    if (32 * k >= groups) continue;
    const float scale = fp8_scale_from_amax(warp_max(amax4(y[k])));
    if (lane == 0) a.y_scale_inv[k * a.rows + r] = 1.f / scale;
    *reinterpret_cast<uint32_t*>(q + 4 * (lane + 32 * k)) = e4m3x4(y[k], scale);
  }
}

// FP8: also quantize the bf16-rounded y (LnForward's y_fp8; y itself is then written only where
// a.y is set).
template <int VEC, typename TB, typename TY, bool FP8 = false>
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
    float4 yq[FP8 ? VEC : 1];
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      if (!group_ok(lane, k, groups)) continue;
      const int c = 4 * (lane + 32 * k);
      const float4 g = load4(a.gamma + c), b = load4(a.beta + c);
      const float4 y = make_float4((h[k].x - mean) * rstd * g.x + b.x, (h[k].y - mean) * rstd * g.y + b.y,
                                   (h[k].z - mean) * rstd * g.z + b.z, (h[k].w - mean) * rstd * g.w + b.w);
      if (!FP8 || a.y != nullptr) store4(typed<TY>(a.y) + base + c, y);
      if constexpr (FP8) yq[k] = round_bf16(y);
    }
    if constexpr (FP8) quantize_row<VEC>(a, r, lane, groups, yq);
  }
}

// Per-warp dgamma/dbeta sums of the backward live in shared memory, not registers, and a row's
// dy, h and dres are loaded together (one round trip per row): the row then fits the registers
// of 4 blocks per SM at C ≤ 512 and of 2 at C ≤ 1,024. With the sums in registers and dres
// loaded after the row's reductions (the first version), C = 1,024 ran one block (8 warps) per
// SM at 162 µs per call on an H200 (16,384 rows, GPT-2 medium): about 40% of copy bandwidth.
constexpr int bwd_blocks_per_sm(int vec) { return vec <= 4 ? 4 : vec <= 8 ? 2 : 1; }

template <int VEC, typename TD, typename TB>
__global__ void __launch_bounds__(kThreads, bwd_blocks_per_sm(VEC))
    ln_backward_kernel(LnBackward a) {
  extern __shared__ float4 sums[];  // [kWarps][2][C/4]: each warp's dgamma, then dbeta sums
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, groups = a.columns / 4;
  const float inv_c = 1.f / static_cast<float>(a.columns);
  float4* acc_g = sums + static_cast<int64_t>(warp) * 2 * groups;  // this lane's slots only
  float4* acc_b = acc_g + groups;
#pragma unroll
  for (int k = 0; k < VEC; ++k)
    if (group_ok(lane, k, groups)) acc_g[lane + 32 * k] = acc_b[lane + 32 * k] = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + warp; r < a.rows;
       r += static_cast<int64_t>(gridDim.x) * kWarps) {
    const int64_t base = r * a.columns;
    const float mean = a.mean[r], rstd = a.rstd[r];
    float4 dy[VEC], xh[VEC], dres[VEC];
    float sg = 0.f, sgx = 0.f;
#pragma unroll
    for (int k = 0; k < VEC; ++k) {  // every load of the row first: one round trip per row
      if (!group_ok(lane, k, groups)) continue;
      const int c = 4 * (lane + 32 * k);
      dy[k] = load4(typed<TD>(a.dy) + base + c);
      xh[k] = load4(a.h + base + c);
      dres[k] = a.dres != nullptr ? load4(a.dres + base + c) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      if (!group_ok(lane, k, groups)) continue;
      const int i = lane + 32 * k, c = 4 * i;
      const float4 h = xh[k], g = load4(a.gamma + c);
      xh[k] = make_float4((h.x - mean) * rstd, (h.y - mean) * rstd, (h.z - mean) * rstd,
                          (h.w - mean) * rstd);
      const float4 gd = make_float4(dy[k].x * g.x, dy[k].y * g.y, dy[k].z * g.z, dy[k].w * g.w);
      sg += sum4(gd);
      sgx += (gd.x * xh[k].x + gd.y * xh[k].y) + (gd.z * xh[k].z + gd.w * xh[k].w);
      float4 ag = acc_g[i], ab = acc_b[i];
      ag.x += dy[k].x * xh[k].x;
      ag.y += dy[k].y * xh[k].y;
      ag.z += dy[k].z * xh[k].z;
      ag.w += dy[k].w * xh[k].w;
      ab.x += dy[k].x;
      ab.y += dy[k].y;
      ab.z += dy[k].z;
      ab.w += dy[k].w;
      acc_g[i] = ag;
      acc_b[i] = ab;
    }
    const float mg = warp_sum(sg) * inv_c, mgx = warp_sum(sgx) * inv_c;
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      if (!group_ok(lane, k, groups)) continue;
      const int c = 4 * (lane + 32 * k);
      const float4 g = load4(a.gamma + c);
      const float4 d = make_float4(rstd * (dy[k].x * g.x - mg - xh[k].x * mgx) + dres[k].x,
                                   rstd * (dy[k].y * g.y - mg - xh[k].y * mgx) + dres[k].y,
                                   rstd * (dy[k].z * g.z - mg - xh[k].z * mgx) + dres[k].z,
                                   rstd * (dy[k].w * g.w - mg - xh[k].w * mgx) + dres[k].w);
      store4(a.dx + base + c, d);
      if (a.dbranch != nullptr) store4(typed<TB>(a.dbranch) + base + c, d);
    }
  }
  // The block's sums, its warps added in warp order (deterministic), one partial row per block.
  __syncthreads();
  float* out = a.scratch + static_cast<int64_t>(blockIdx.x) * 2 * a.columns;
  for (int i = threadIdx.x; i < 2 * groups; i += kThreads) {
    float4 t = sums[i];
    for (int w = 1; w < kWarps; ++w) {
      const float4 v = sums[static_cast<int64_t>(w) * 2 * groups + i];
      t = make_float4(t.x + v.x, t.y + v.y, t.z + v.z, t.w + v.w);
    }
    store4(out + 4 * i, t);  // [0, C): dgamma; [C, 2C): dbeta
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

// Blocks for a grid-stride loop over rows, a warp per row: at most blocks_per_sm per SM, never
// more than the rows need (at least one).
int64_t row_blocks(int64_t rows, int blocks_per_sm) {
  const int64_t full = static_cast<int64_t>(sm_count()) * blocks_per_sm;
  const int64_t need = (rows + kWarps - 1) / kWarps;
  return need < full ? (need > 0 ? need : 1) : full;
}

// VEC = float4 groups per lane: the smallest instantiated count that covers the row.
int vec_for(int columns) {
  const int groups_per_lane = (columns / 4 + 31) / 32;
  for (int v : {2, 4, 6, 8, 10}) if (groups_per_lane <= v) return v;
  return 13;
}
template <typename F>
void with_vec(int columns, F&& f) {
  switch (vec_for(columns)) {
    case 2: f(std::integral_constant<int, 2>()); break;
    case 4: f(std::integral_constant<int, 4>()); break;
    case 6: f(std::integral_constant<int, 6>()); break;
    case 8: f(std::integral_constant<int, 8>()); break;
    case 10: f(std::integral_constant<int, 10>()); break;
    default: f(std::integral_constant<int, 13>());
  }
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

// The backward's shared memory (kWarps·2·C floats) and grid: as many blocks per SM as its
// launch bounds promise, at most what the rows need.
size_t backward_smem_bytes(int64_t columns) { return sizeof(float) * kWarps * 2 * columns; }
int64_t backward_blocks(int64_t rows, int64_t columns) {
  return row_blocks(rows, bwd_blocks_per_sm(vec_for(static_cast<int>(columns))));
}

}  // namespace

bool layernorm_kernel_supports(int64_t columns) {
  return columns > 0 && columns % 4 == 0 && columns <= kLnMaxColumns &&
         backward_smem_bytes(columns) <=
             static_cast<size_t>(device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin));
}

int64_t layernorm_backward_scratch_floats(int64_t rows, int64_t columns) {
  return backward_blocks(rows, columns) * 2 * columns;
}

void launch_layernorm_forward(const LnForward& a, cudaStream_t stream) {
  if (a.rows == 0) return;
  const int grid = static_cast<int>(row_blocks(a.rows, kFwdBlocksPerSm));
  with_vec_and_types(a.columns, a.branch_dtype, a.y_dtype, [&](auto vec, auto tb, auto ty) {
    constexpr int kVecN = decltype(vec)::value;
    if constexpr (std::is_same_v<decltype(ty), __nv_bfloat16>) {
      if (a.y_fp8 != nullptr) {
        ln_forward_kernel<kVecN, decltype(tb), __nv_bfloat16, true><<<grid, kThreads, 0, stream>>>(a);
        return;
      }
    }
    ln_forward_kernel<kVecN, decltype(tb), decltype(ty)><<<grid, kThreads, 0, stream>>>(a);
  });
  CUDA_CHECK_LAUNCH();
}

void launch_layernorm_backward(const LnBackward& a, cudaStream_t stream) {
  if (a.rows == 0) return;
  const int grid = static_cast<int>(backward_blocks(a.rows, a.columns));
  const size_t smem = backward_smem_bytes(a.columns);
  with_vec_and_types(a.columns, a.dy_dtype, a.dbranch_dtype, [&](auto vec, auto td, auto tb) {
    auto kernel = &ln_backward_kernel<decltype(vec)::value, decltype(td), decltype(tb)>;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(smem)));
    kernel<<<grid, kThreads, smem, stream>>>(a);
  });
  CUDA_CHECK_LAUNCH();
  const int width = 2 * a.columns;
  ln_param_grad_kernel<<<(width + 31) / 32, kThreads, 0, stream>>>(a.scratch, grid, a.columns,
                                                                    a.dgamma, a.dbeta);
  CUDA_CHECK_LAUNCH();
}

}  // namespace gptbench

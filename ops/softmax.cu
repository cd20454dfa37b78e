// Fused softmax over the last dimension, forward and backward, fp32 and bf16 storage with fp32
// arithmetic. Memory-bound: the goal is one read and one write of every element (forward: x in,
// y out; backward: y and dy in, dx out), so the kernels keep the row on chip between the
// reduction and the output pass.
//
//   cols <= 1024  one warp per row (4 rows per 128-thread block). Each lane holds its share of
//                 the row in registers (at most 32 values), so the row is read once.
//   cols >  1024  one block per row. The row is staged in shared memory while it is read
//                 (50,304 fp32 columns = 196 KiB fit the 227 KiB opt-in of sm_90); of a longer
//                 row, as much as fits is staged and the rest read a second time (from L2,
//                 where it usually still is).
//
// Loads and stores are 16 bytes wide (4 fp32 or 8 bf16) when every pointer is 16-byte aligned
// and cols is a multiple of the vector width; otherwise one element at a time.
//
// Forward uses the online max-and-sum (Milakov & Gimelshein, 2018): each thread keeps a running
// maximum m and a sum s of exp(x - m), rescaling s when m grows; partial (m, s) pairs from
// threads and warps merge as  M = max(m1, m2),  S = s1·e^(m1-M) + s2·e^(m2-M),  so a single
// reduction gives both the maximum and the normaliser. Non-finite inputs behave as in
// torch::softmax: a row of all -inf gives NaN (0/0), a +inf or NaN anywhere in a row makes the
// whole row NaN, and -inf entries of an otherwise finite row give 0.
//
// Backward: dx = y·(dy − Σ y·dy), the dot product accumulated in fp32.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "ops/cuda_check.h"
#include "ops/softmax_kernels.h"

namespace gptbench {
namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr int kWarp = 32;
constexpr int kWarpRowsPerBlock = 4;          // warp path: 128-thread blocks, one row per warp
constexpr int kMaxWarpCols = 1024;            // warp path: at most 32 values per lane
constexpr int kMaxBlockThreads = 1024;
constexpr int kBlockUnroll = 4;               // forward block path: packs loaded before use
constexpr int kBlockUnrollBwd = 2;            // backward: two tensors, same bytes in flight
constexpr int kPacksPerThread = 8;            // block path: threads ≈ packs / 8 (128..1024)
constexpr int64_t kSmemReserve = 1024;        // static shared memory of the block kernels
constexpr int64_t kDefaultDynamicSmem = 48 * 1024;

// ---- element conversion and 16-byte packs -------------------------------------------------

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// VEC consecutive elements, aligned to their size (16 bytes for the vector paths).
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
  T v[VEC];
};

template <typename T, int VEC>
__device__ __forceinline__ Pack<T, VEC> load_pack(const T* __restrict__ p) {
  Pack<T, VEC> r;
  if constexpr (sizeof(Pack<T, VEC>) == 16) {
    *reinterpret_cast<uint4*>(&r) = __ldg(reinterpret_cast<const uint4*>(p));
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k) r.v[k] = p[k];
  }
  return r;
}

template <typename T, int VEC>
__device__ __forceinline__ void store_pack(T* __restrict__ p, const Pack<T, VEC>& r) {
  if constexpr (sizeof(Pack<T, VEC>) == 16) {
    *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(&r);
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k) p[k] = r.v[k];
  }
}

// ---- online (max, sum) -------------------------------------------------------------------

// exp(v - m) for a softmax term; -inf entries contribute 0 even when m is -inf (a row or a
// thread's share with nothing but -inf), so that case does not produce exp(-inf + inf) = NaN.
__device__ __forceinline__ float exp_shifted(float v, float m) {
  return v == -INFINITY ? 0.f : exp2f((v - m) * kLog2e);
}

// (m, s) ⊕ (m2, s2). fmaxf never returns NaN unless both are NaN, and m starts at -inf, so m is
// never NaN; a NaN input reaches s instead and poisons the row, as in torch.
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mx = fmaxf(m, m2);
  const float a = (m == mx) ? s : s * exp2f((m - mx) * kLog2e);
  const float b = (m2 == mx) ? s2 : s2 * exp2f((m2 - mx) * kLog2e);
  m = mx;
  s = a + b;  // commutative, so every lane of a butterfly ends with the same bits
}

__device__ __forceinline__ void warp_merge(float& m, float& s) {
#pragma unroll
  for (int off = kWarp / 2; off > 0; off >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, off);
    const float s2 = __shfl_xor_sync(0xffffffffu, s, off);
    merge(m, s, m2, s2);
  }
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = kWarp / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// Every thread of the block gets the block's (m, s). Each warp reduces the per-warp partials
// itself, which saves a broadcast round trip through shared memory.
__device__ __forceinline__ void block_merge(float& m, float& s) {
  __shared__ float part_m[kMaxBlockThreads / kWarp], part_s[kMaxBlockThreads / kWarp];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int nwarps = blockDim.x / kWarp;
  warp_merge(m, s);
  if (lane == 0) {
    part_m[warp] = m;
    part_s[warp] = s;
  }
  __syncthreads();
  m = lane < nwarps ? part_m[lane] : -INFINITY;
  s = lane < nwarps ? part_s[lane] : 0.f;
  warp_merge(m, s);
  __syncthreads();  // part_* may be rewritten by the next call
}

__device__ __forceinline__ float block_sum(float v) {
  __shared__ float part[kMaxBlockThreads / kWarp];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int nwarps = blockDim.x / kWarp;
  v = warp_sum(v);
  if (lane == 0) part[warp] = v;
  __syncthreads();
  v = warp_sum(lane < nwarps ? part[lane] : 0.f);
  __syncthreads();
  return v;
}

// 1/S, or NaN for a row whose maximum is -inf (torch: exp(-inf - -inf) = NaN everywhere).
__device__ __forceinline__ float inverse_sum(float m, float s) {
  return m == -INFINITY ? __int_as_float(0x7fffffff) : 1.f / s;
}

// ---- warp per row ----------------------------------------------------------------------

// Lane l holds packs l, l+32, l+64, ... of its row: NV packs of VEC values (NV·VEC <= 32).
template <typename T, int VEC, int NV>
__global__ void __launch_bounds__(kWarp* kWarpRowsPerBlock)
    softmax_fwd_warp(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int cols) {
  const int lane = threadIdx.x % kWarp;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpRowsPerBlock + threadIdx.x / kWarp;
  if (row >= rows) return;  // the whole warp leaves together: row is uniform in a warp
  const T* xr = x + row * cols;
  T* yr = y + row * cols;

  float v[NV][VEC];
  float m = -INFINITY;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int c = (j * kWarp + lane) * VEC;
    if (c < cols) {  // cols is a multiple of VEC, so the whole pack is inside the row
      const Pack<T, VEC> p = load_pack<T, VEC>(xr + c);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        v[j][k] = to_float(p.v[k]);
        m = fmaxf(m, v[j][k]);
      }
    } else {
#pragma unroll
      for (int k = 0; k < VEC; ++k) v[j][k] = -INFINITY;
    }
  }
  // The lane's terms relative to its own maximum; one merge across the warp rescales them.
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < NV; ++j)
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      v[j][k] = exp_shifted(v[j][k], m);
      s += v[j][k];
    }
  float row_m = m, row_s = s;
  warp_merge(row_m, row_s);
  const float rescale = (m == row_m) ? 1.f : exp2f((m - row_m) * kLog2e);
  const float scale = rescale * inverse_sum(row_m, row_s);
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int c = (j * kWarp + lane) * VEC;
    if (c < cols) {
      Pack<T, VEC> p;
#pragma unroll
      for (int k = 0; k < VEC; ++k) p.v[k] = from_float<T>(v[j][k] * scale);
      store_pack<T, VEC>(yr + c, p);
    }
  }
}

template <typename T, int VEC, int NV>
__global__ void __launch_bounds__(kWarp* kWarpRowsPerBlock)
    softmax_bwd_warp(const T* __restrict__ y, const T* __restrict__ dy, T* __restrict__ dx,
                     int64_t rows, int cols) {
  const int lane = threadIdx.x % kWarp;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpRowsPerBlock + threadIdx.x / kWarp;
  if (row >= rows) return;
  const int64_t off = row * cols;

  float yv[NV][VEC], gv[NV][VEC];
  float dot = 0.f;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int c = (j * kWarp + lane) * VEC;
    if (c < cols) {
      const Pack<T, VEC> py = load_pack<T, VEC>(y + off + c);
      const Pack<T, VEC> pg = load_pack<T, VEC>(dy + off + c);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        yv[j][k] = to_float(py.v[k]);
        gv[j][k] = to_float(pg.v[k]);
        dot = fmaf(yv[j][k], gv[j][k], dot);
      }
    }
  }
  dot = warp_sum(dot);
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    const int c = (j * kWarp + lane) * VEC;
    if (c < cols) {
      Pack<T, VEC> p;
#pragma unroll
      for (int k = 0; k < VEC; ++k) p.v[k] = from_float<T>(yv[j][k] * (gv[j][k] - dot));
      store_pack<T, VEC>(dx + off + c, p);
    }
  }
}

// ---- block per row -------------------------------------------------------------------------

// Thread t handles packs t, t + blockDim, t + 2·blockDim, ... in both passes, so every thread
// reads back from shared memory only the packs it wrote itself. The first `staged` packs of the
// row are kept in shared memory between the passes; the rest (rows longer than shared memory)
// are read again from global memory, where L2 usually still holds them.
template <typename T, int VEC>
__global__ void __launch_bounds__(kMaxBlockThreads)
    softmax_fwd_block(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int cols,
                      int staged) {
  extern __shared__ __align__(16) unsigned char smem[];
  auto* buf = reinterpret_cast<Pack<T, VEC>*>(smem);  // (staged,)
  const int packs = cols / VEC;
  const int nthreads = blockDim.x;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    float m = -INFINITY, s = 0.f;
    for (int base = threadIdx.x; base < packs; base += kBlockUnroll * nthreads) {
      Pack<T, VEC> p[kBlockUnroll];
#pragma unroll
      for (int u = 0; u < kBlockUnroll; ++u) {  // issue every load before using any
        const int i = base + u * nthreads;
        if (i < packs) p[u] = load_pack<T, VEC>(xr + static_cast<int64_t>(i) * VEC);
      }
#pragma unroll
      for (int u = 0; u < kBlockUnroll; ++u) {
        const int i = base + u * nthreads;
        if (i < packs) {
          if (i < staged) buf[i] = p[u];
          float pm = -INFINITY;
#pragma unroll
          for (int k = 0; k < VEC; ++k) pm = fmaxf(pm, to_float(p[u].v[k]));
          if (pm > m) {  // the running maximum grows: rescale what was summed so far
            s *= exp2f((m - pm) * kLog2e);
            m = pm;
          }
#pragma unroll
          for (int k = 0; k < VEC; ++k) s += exp_shifted(to_float(p[u].v[k]), m);
        }
      }
    }
    block_merge(m, s);
    const float inv = inverse_sum(m, s);
    for (int i = threadIdx.x; i < packs; i += nthreads) {
      const Pack<T, VEC> p =
          i < staged ? buf[i] : load_pack<T, VEC>(xr + static_cast<int64_t>(i) * VEC);
      Pack<T, VEC> o;
#pragma unroll
      for (int k = 0; k < VEC; ++k) o.v[k] = from_float<T>(exp_shifted(to_float(p.v[k]), m) * inv);
      store_pack<T, VEC>(yr + static_cast<int64_t>(i) * VEC, o);
    }
  }
}

// Backward: shared memory holds the first `staged` packs of y, then the first `staged` of dy.
template <typename T, int VEC>
__global__ void __launch_bounds__(kMaxBlockThreads)
    softmax_bwd_block(const T* __restrict__ y, const T* __restrict__ dy, T* __restrict__ dx,
                      int64_t rows, int cols, int staged) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int packs = cols / VEC;
  auto* buf_y = reinterpret_cast<Pack<T, VEC>*>(smem);  // (staged,)
  auto* buf_g = buf_y + staged;                         // (staged,)
  const int nthreads = blockDim.x;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t off = row * cols;
    float dot = 0.f;
    for (int base = threadIdx.x; base < packs; base += kBlockUnrollBwd * nthreads) {
      Pack<T, VEC> py[kBlockUnrollBwd], pg[kBlockUnrollBwd];
#pragma unroll
      for (int u = 0; u < kBlockUnrollBwd; ++u) {
        const int i = base + u * nthreads;
        if (i < packs) {
          py[u] = load_pack<T, VEC>(y + off + static_cast<int64_t>(i) * VEC);
          pg[u] = load_pack<T, VEC>(dy + off + static_cast<int64_t>(i) * VEC);
        }
      }
#pragma unroll
      for (int u = 0; u < kBlockUnrollBwd; ++u) {
        const int i = base + u * nthreads;
        if (i < packs) {
          if (i < staged) {
            buf_y[i] = py[u];
            buf_g[i] = pg[u];
          }
#pragma unroll
          for (int k = 0; k < VEC; ++k) dot = fmaf(to_float(py[u].v[k]), to_float(pg[u].v[k]), dot);
        }
      }
    }
    dot = block_sum(dot);
    for (int i = threadIdx.x; i < packs; i += nthreads) {
      Pack<T, VEC> py, pg;
      if (i < staged) {
        py = buf_y[i];
        pg = buf_g[i];
      } else {
        py = load_pack<T, VEC>(y + off + static_cast<int64_t>(i) * VEC);
        pg = load_pack<T, VEC>(dy + off + static_cast<int64_t>(i) * VEC);
      }
      Pack<T, VEC> o;
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const float yk = to_float(py.v[k]);
        o.v[k] = from_float<T>(yk * (to_float(pg.v[k]) - dot));
      }
      store_pack<T, VEC>(dx + off + static_cast<int64_t>(i) * VEC, o);
    }
  }
}

// ---- host side -------------------------------------------------------------------------------

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t smem_optin_of_current_device() {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  int v = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  return v;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

void check_shape(int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0 || cols > INT_MAX / 2)
    throw std::invalid_argument("softmax: unsupported shape rows=" + std::to_string(rows) +
                                " cols=" + std::to_string(cols));
}

// Smallest power of two NV with 32·NV·VEC >= cols.
int warp_packs_per_lane(int64_t cols, int vec) {
  const int64_t need = ceil_div(ceil_div(cols, vec), kWarp);
  int nv = 1;
  while (nv < need) nv *= 2;
  return nv;
}

dim3 warp_grid(int64_t rows) {
  const int64_t blocks = ceil_div(rows, kWarpRowsPerBlock);
  if (blocks > INT_MAX) throw std::invalid_argument("softmax: too many rows for one launch");
  return dim3(static_cast<unsigned>(blocks));
}

dim3 block_grid(int64_t rows) {  // the block kernels loop over rows beyond the grid
  return dim3(static_cast<unsigned>(rows < (int64_t{1} << 30) ? rows : (int64_t{1} << 30)));
}

template <typename T, int VEC, int NV>
void fwd_warp(const T* x, T* y, int64_t rows, int cols, cudaStream_t st) {
  if constexpr (NV * VEC <= kMaxWarpCols / kWarp) {
    softmax_fwd_warp<T, VEC, NV><<<warp_grid(rows), kWarp * kWarpRowsPerBlock, 0, st>>>(x, y, rows, cols);
    CUDA_CHECK_LAUNCH();
  } else {
    throw std::logic_error("softmax: warp path with too many values per lane");
  }
}

template <typename T, int VEC, int NV>
void bwd_warp(const T* y, const T* dy, T* dx, int64_t rows, int cols, cudaStream_t st) {
  if constexpr (NV * VEC <= kMaxWarpCols / kWarp) {
    softmax_bwd_warp<T, VEC, NV><<<warp_grid(rows), kWarp * kWarpRowsPerBlock, 0, st>>>(
        y, dy, dx, rows, cols);
    CUDA_CHECK_LAUNCH();
  } else {
    throw std::logic_error("softmax: warp path with too many values per lane");
  }
}

// Calls f.template operator()<NV>() for NV in {1, 2, 4, 8, 16, 32}.
template <typename F>
void with_packs_per_lane(int nv, F&& f) {
  switch (nv) {
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 4: f(std::integral_constant<int, 4>{}); break;
    case 8: f(std::integral_constant<int, 8>{}); break;
    case 16: f(std::integral_constant<int, 16>{}); break;
    case 32: f(std::integral_constant<int, 32>{}); break;
    default: throw std::logic_error("softmax: unexpected packs per lane " + std::to_string(nv));
  }
}

template <typename Kernel>
void allow_smem(Kernel kernel, int64_t bytes) {
  if (bytes > kDefaultDynamicSmem)
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(bytes)));
}

template <typename T, int VEC>
void forward_vec(const T* x, T* y, int64_t rows, int cols, const SoftmaxPlan& plan,
                 cudaStream_t st) {
  switch (plan.path) {
    case SoftmaxPath::kWarpVec:
    case SoftmaxPath::kWarpScalar:
      with_packs_per_lane(warp_packs_per_lane(cols, VEC), [&](auto nv) {
        fwd_warp<T, VEC, decltype(nv)::value>(x, y, rows, cols, st);
      });
      return;
    case SoftmaxPath::kBlockVec:
    case SoftmaxPath::kBlockScalar:
    case SoftmaxPath::kBlockPartial: {
      auto kernel = softmax_fwd_block<T, VEC>;
      allow_smem(kernel, plan.smem_bytes);
      const int staged = static_cast<int>(plan.smem_bytes / (VEC * sizeof(T)));
      kernel<<<block_grid(rows), plan.threads, plan.smem_bytes, st>>>(x, y, rows, cols, staged);
      CUDA_CHECK_LAUNCH();
      return;
    }
  }
}

template <typename T, int VEC>
void backward_vec(const T* y, const T* dy, T* dx, int64_t rows, int cols, const SoftmaxPlan& plan,
                  cudaStream_t st) {
  switch (plan.path) {
    case SoftmaxPath::kWarpVec:
    case SoftmaxPath::kWarpScalar:
      with_packs_per_lane(warp_packs_per_lane(cols, VEC), [&](auto nv) {
        bwd_warp<T, VEC, decltype(nv)::value>(y, dy, dx, rows, cols, st);
      });
      return;
    case SoftmaxPath::kBlockVec:
    case SoftmaxPath::kBlockScalar:
    case SoftmaxPath::kBlockPartial: {
      auto kernel = softmax_bwd_block<T, VEC>;
      allow_smem(kernel, plan.smem_bytes);
      const int staged = static_cast<int>(plan.smem_bytes / (2 * VEC * sizeof(T)));
      kernel<<<block_grid(rows), plan.threads, plan.smem_bytes, st>>>(y, dy, dx, rows, cols,
                                                                       staged);
      CUDA_CHECK_LAUNCH();
      return;
    }
  }
}

template <typename T>
void forward_typed(const void* x, void* y, int64_t rows, int64_t cols, cudaStream_t st) {
  const SoftmaxDtype dt = sizeof(T) == 4 ? SoftmaxDtype::kFloat32 : SoftmaxDtype::kBFloat16;
  const SoftmaxPlan plan = softmax_plan(cols, dt, /*backward=*/false, aligned16(x) && aligned16(y),
                                        smem_optin_of_current_device());
  const auto* xt = static_cast<const T*>(x);
  auto* yt = static_cast<T*>(y);
  const int c = static_cast<int>(cols);
  if (plan.vec == 1)
    forward_vec<T, 1>(xt, yt, rows, c, plan, st);
  else
    forward_vec<T, 16 / sizeof(T)>(xt, yt, rows, c, plan, st);
}

template <typename T>
void backward_typed(const void* y, const void* dy, void* dx, int64_t rows, int64_t cols,
                    cudaStream_t st) {
  const SoftmaxDtype dt = sizeof(T) == 4 ? SoftmaxDtype::kFloat32 : SoftmaxDtype::kBFloat16;
  const SoftmaxPlan plan =
      softmax_plan(cols, dt, /*backward=*/true, aligned16(y) && aligned16(dy) && aligned16(dx),
                   smem_optin_of_current_device());
  const auto* yt = static_cast<const T*>(y);
  const auto* gt = static_cast<const T*>(dy);
  auto* dxt = static_cast<T*>(dx);
  const int c = static_cast<int>(cols);
  if (plan.vec == 1)
    backward_vec<T, 1>(yt, gt, dxt, rows, c, plan, st);
  else
    backward_vec<T, 16 / sizeof(T)>(yt, gt, dxt, rows, c, plan, st);
}

}  // namespace

SoftmaxPlan softmax_plan(int64_t cols, SoftmaxDtype dtype, bool backward, bool aligned,
                         int64_t smem_optin) {
  const int64_t elem = dtype == SoftmaxDtype::kFloat32 ? 4 : 2;
  const int vec16 = static_cast<int>(16 / elem);
  const int vec = (aligned && cols % vec16 == 0) ? vec16 : 1;
  if (cols <= kMaxWarpCols)
    return {vec > 1 ? SoftmaxPath::kWarpVec : SoftmaxPath::kWarpScalar, vec,
            kWarp * kWarpRowsPerBlock, 0};
  const int64_t packs = cols / vec;
  const int64_t rows_staged = backward ? 2 : 1;  // y and dy, or x
  const int64_t pack_bytes = vec * elem;
  const int64_t bytes = packs * pack_bytes * rows_staged;
  // About kPacksPerThread packs per thread, 128 to 1024 threads. Where shared memory lets two or
  // more rows share an SM, blocks stop at 512 threads so that registers (≤ 64 per thread under
  // __launch_bounds__(1024)) let two blocks be resident too, and one row's reduction overlaps
  // another's loads; an SM's shared memory is taken as the opt-in per block plus the reserve.
  const bool two_rows_fit = 2 * (bytes + kSmemReserve) <= smem_optin + kSmemReserve;
  const int max_threads = two_rows_fit ? kMaxBlockThreads / 2 : kMaxBlockThreads;
  int threads = 128;
  while (threads < max_threads && packs > int64_t{threads} * kPacksPerThread) threads *= 2;
  if (bytes + kSmemReserve <= smem_optin)
    return {vec > 1 ? SoftmaxPath::kBlockVec : SoftmaxPath::kBlockScalar, vec, threads, bytes};
  // As many packs as fit; the rest of the row is read twice.
  const int64_t fit = std::max<int64_t>(0, (smem_optin - kSmemReserve) / (pack_bytes * rows_staged));
  return {SoftmaxPath::kBlockPartial, vec, threads, fit * pack_bytes * rows_staged};
}

void launch_softmax_forward(const void* x, void* y, int64_t rows, int64_t cols,
                            SoftmaxDtype dtype, cudaStream_t stream) {
  check_shape(rows, cols);
  if (rows == 0 || cols == 0) return;
  if (dtype == SoftmaxDtype::kFloat32)
    forward_typed<float>(x, y, rows, cols, stream);
  else
    forward_typed<__nv_bfloat16>(x, y, rows, cols, stream);
}

void launch_softmax_backward(const void* y, const void* dy, void* dx, int64_t rows, int64_t cols,
                             SoftmaxDtype dtype, cudaStream_t stream) {
  check_shape(rows, cols);
  if (rows == 0 || cols == 0) return;
  if (dtype == SoftmaxDtype::kFloat32)
    backward_typed<float>(y, dy, dx, rows, cols, stream);
  else
    backward_typed<__nv_bfloat16>(y, dy, dx, rows, cols, stream);
}

}  // namespace gptbench

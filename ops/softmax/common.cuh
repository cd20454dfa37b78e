#pragma once
// Constants, the fast exp, pack conversions and the online (max, sum) reductions of the softmax kernels.
// Part of the fused softmax: ops/softmax.cu includes it, nothing else does.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ops/device/convert.cuh"
#include "ops/device/pack.cuh"
#include "ops/device/reduce.cuh"

namespace gptbench {
namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr int kWarp = kWarpSize;
constexpr int kWarpRowsPerBlock = 4;          // warp path: 128-thread blocks (4 warps)
constexpr int kMaxWarpCols = 1024;            // warp path: at most 32 values per lane
constexpr int kGroupPacksVec = 1;             // warp path: 16-byte packs per lane of short rows
constexpr int kGroupPacksScalar = 4;          // warp path: elements per lane of short rows
constexpr int kMaxBlockThreads = 1024;
constexpr int kBlockUnroll = 4;               // partial/scalar block path: loads before use
constexpr int kBlockUnrollBwd = 2;            // backward: two tensors, same bytes in flight
constexpr int kPacksPerThread = 8;            // block path: threads ≈ packs / 8 (128..1024)
constexpr int64_t kSmemReserve = 1024;        // static shared memory of the block kernels
constexpr int kRegsValues = 32;               // register path: values per thread, exponentials kept
constexpr int64_t kRegsLongBf16 = 8192;       // longer bf16 rows: 64 values per thread, recomputed
constexpr int kRegsMaxWarpsBf16 = 16;         // bf16 register path: one block of <= 16 warps
constexpr int kRegsPacks = 8;                 // longer rows: 16-byte packs per thread in registers
constexpr int kRegsPairWarps = 16;            // longer rows: blocks of 16 warps run two per SM
constexpr int kMaxCluster = 8;                // portable thread-block cluster size

// 2^v in one MUFU instruction: -inf -> 0, +inf -> +inf, NaN -> NaN, results below 2^-126 -> 0.
__device__ __forceinline__ float exp2_approx(float v) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
}

// A pack's values as fp32. AGAIN (bf16): the conversion (a shift and a mask of each 32-bit pair) is
// an opaque asm on the packed words, so the compiler converts again where a value is used instead
// of keeping every converted (or unpacked 16-bit) value alive: the register path's raw row of 64
// bf16 values per thread takes 32 registers, a converted copy would take 64 more (and spill).
template <bool AGAIN, typename T, int VEC>
__device__ __forceinline__ void unpack(const Pack<T, VEC>& p, float (&f)[VEC]) {
  if constexpr (AGAIN && std::is_same_v<T, __nv_bfloat16> && VEC % 2 == 0) {
    const auto* w = reinterpret_cast<const unsigned*>(&p);
#pragma unroll
    for (int k = 0; k < VEC / 2; ++k) {
      unsigned lo, hi;
      asm volatile("shl.b32 %0, %2, 16;\n\tand.b32 %1, %2, 0xffff0000;"
                   : "=r"(lo), "=r"(hi)
                   : "r"(w[k]));
      f[2 * k] = __uint_as_float(lo);
      f[2 * k + 1] = __uint_as_float(hi);
    }
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k) f[k] = to_float(p.v[k]);
  }
}

// VEC fp32 values rounded to T and stored; bf16 pairs go through one packed conversion.
template <typename T, int VEC>
__device__ __forceinline__ void store_floats(T* __restrict__ p, const float (&f)[VEC]) {
  Pack<T, VEC> o;
  if constexpr (std::is_same_v<T, __nv_bfloat16> && VEC % 2 == 0) {
    auto* o2 = reinterpret_cast<__nv_bfloat162*>(o.v);
#pragma unroll
    for (int k = 0; k < VEC / 2; ++k) o2[k] = __floats2bfloat162_rn(f[2 * k], f[2 * k + 1]);
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k) o.v[k] = from_float<T>(f[k]);
  }
  store_pack<T, VEC>(p, o);
}

// ---- reductions ------------------------------------------------------------------------------

// exp(v - m) for a softmax term of the online sum; -inf entries contribute 0 even when m is
// -inf (a thread's share with nothing but -inf), so that case does not produce NaN.
__device__ __forceinline__ float exp_shifted(float v, float m) {
  return v == -INFINITY ? 0.f : exp2_approx((v - m) * kLog2e);
}

// (m, s) ⊕ (m2, s2). fmaxf never returns NaN unless both are NaN, and m starts at -inf, so m is
// never NaN; a NaN input reaches s instead and poisons the row, as in torch.
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mx = fmaxf(m, m2);
  const float a = (m == mx) ? s : s * exp2_approx((m - mx) * kLog2e);
  const float b = (m2 == mx) ? s2 : s2 * exp2_approx((m2 - mx) * kLog2e);
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

}  // namespace
}  // namespace gptbench

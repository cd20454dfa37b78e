#pragma once
// Element conversions between storage types (fp32, bf16, fp16) and the fp32 our kernels compute
// in: rounding to nearest even on the way back. CUDA only.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace gptbench {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }

// Calls f(A()) when `is_a`, else f(B()): a launcher picking which of the two storage types its
// kernels are instantiated for (f reads the type from its argument's).
template <typename A, typename B, typename F>
void with_either_type(bool is_a, F&& f) {
  if (is_a)
    f(A());
  else
    f(B());
}

}  // namespace gptbench

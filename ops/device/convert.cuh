#pragma once
// Element conversions between storage types (fp32, bf16, fp16) and the fp32 our kernels compute
// in: rounding to nearest even on the way back; the ElemType of each, and the launchers' choice
// of kernel by ElemType. CUDA only.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdexcept>
#include <string>
#include <type_traits>

#include "ops/device/elem_type.h"

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

// The ElemType of each storage type (elem_type_v<__nv_bfloat16> == ElemType::kBF16).
template <typename T>
struct ElemTypeOf;
template <>
struct ElemTypeOf<float> : std::integral_constant<ElemType, ElemType::kF32> {};
template <>
struct ElemTypeOf<__nv_bfloat16> : std::integral_constant<ElemType, ElemType::kBF16> {};
template <>
struct ElemTypeOf<__half> : std::integral_constant<ElemType, ElemType::kF16> {};
template <typename T>
inline constexpr ElemType elem_type_v = ElemTypeOf<T>::value;

// Calls f(T()) for the T of Ts (the storage types a launcher instantiates its kernels for)
// whose ElemType is `t`; f reads the type from its argument's. Any other `t` is an error:
// std::invalid_argument naming `what` and the type.
template <typename... Ts, typename F>
void with_elem_type(ElemType t, const char* what, F&& f) {
  const bool launched = ((t == elem_type_v<Ts> ? (f(Ts()), true) : false) || ...);
  if (!launched)
    throw std::invalid_argument(std::string(what) + ": no kernel for " + elem_type_name(t) +
                                " elements");
}

}  // namespace gptbench

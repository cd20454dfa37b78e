#pragma once
// VEC consecutive elements moved as one access: 16 bytes (4 fp32 or 8 bf16/fp16) when the pack
// is 16 bytes, element by element otherwise. The caller guarantees the alignment (every pointer
// 16-byte aligned and the offset a multiple of VEC) before choosing a 16-byte pack. CUDA only.
#include <cuda_runtime.h>

namespace gptbench {

template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
  T v[VEC];
};

// READ_ONLY: through the read-only (non-coherent) path, only for data no thread of the kernel
// writes; otherwise a plain load (L1-cached, coherent with writes of the same kernel).
template <typename T, int VEC, bool READ_ONLY = false>
__device__ __forceinline__ Pack<T, VEC> load_pack(const T* __restrict__ p) {
  Pack<T, VEC> r;
  if constexpr (sizeof(Pack<T, VEC>) == 16) {
    const auto* q = reinterpret_cast<const uint4*>(p);
    if constexpr (READ_ONLY)
      *reinterpret_cast<uint4*>(&r) = __ldg(q);
    else
      *reinterpret_cast<uint4*>(&r) = *q;
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

}  // namespace gptbench

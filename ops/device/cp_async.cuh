#pragma once
// cp.async (global -> shared, asynchronous) primitives shared by our kernels: the flash
// attention tile loads (ops/attention/flash_common.cuh), the 8-bit Adam staging
// (ops/optim/adam8bit.cu) and the softmax's staged rows (ops/softmax/). CUDA only (no LibTorch).
#include <cuda_runtime.h>

#include <cstdint>

namespace gptbench {

// The shared-space byte address of a pointer to shared memory (the copies' destination).
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte global -> shared copy, bypassing L1; !valid zero-fills the 16 bytes (the source
// address must still be a valid one).
__device__ __forceinline__ void cp_async16(uint32_t s, const void* gmem, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem),
               "r"(src_bytes)
               : "memory");
}

// 4-byte global -> shared copy (zero-fills when !valid).
__device__ __forceinline__ void cp_async4(uint32_t s, const void* gmem, bool valid) {
  const int src_bytes = valid ? 4 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(gmem),
               "r"(src_bytes)
               : "memory");
}

// An N-byte copy (N = 4, 8 or 16; 16 bypasses L1), always in bounds.
template <int N>
__device__ __forceinline__ void cp_async(uint32_t s, const void* gmem) {
  static_assert(N == 4 || N == 8 || N == 16, "cp.async copies 4, 8 or 16 bytes");
  if constexpr (N == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(s), "l"(gmem), "n"(N));
}

// 16-byte global -> shared copy to a generic shared-memory pointer, always in bounds; the
// "memory" clobber keeps the compiler from moving shared-memory accesses across it.
__device__ __forceinline__ void cp_async16(void* smem_dst, const void* gmem_src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_u32(smem_dst)), "l"(gmem_src)
               : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Waits until at most N committed groups of this thread are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Every copy this thread issued has landed and is visible to it (to it only: other threads need
// a barrier after their own waits).
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}

}  // namespace gptbench

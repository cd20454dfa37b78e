#pragma once
// Hopper (sm_90a) building blocks written as inline PTX: mbarriers, the tensor copy engine
// (TMA, cp.async.bulk.tensor), warpgroup MMA fences, shared-memory matrix descriptors and
// register reallocation. Device code compiled for sm_90a only (ops/attention/sm90/); PTX ISA
// sections named per function. CUDA only (no LibTorch).
#include <cuda.h>  // CUtensorMap
#include <cuda_runtime.h>

#include <cstdint>

namespace gptbench {
namespace sm90 {

// ---- mbarrier (PTX ISA "Parallel Synchronization and Communication Instructions: mbarrier") --
// `bar` is the shared-space byte address of an 8-byte aligned 64-bit mbarrier.

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(arrivals) : "memory");
}
// Makes initialised mbarriers visible to the copy engine (then a block barrier for the threads).
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// One arrival that also announces `bytes` of copies completing on this barrier in this phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// One arrival per warp, from lane 0, once every lane of the warp got here (barriers that count
// warps: the consumers' *_empty).
__device__ __forceinline__ void warp_arrive(uint32_t bar) {
  __syncwarp();
  if (threadIdx.x % 32 == 0) mbar_arrive(bar);
}
// Waits until the phase of parity `parity` (0, 1, 0, ... for phases 0, 1, 2, ...) has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n"
        " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

// ---- Tensor copies (cp.async.bulk.tensor) -----------------------------------------------------
// A 4-D tile of `map` at element coordinates (c0 innermost .. c3) into shared memory at `dst`
// (aligned as the map's swizzle needs: 1024 bytes for 128-byte swizzle); completes `bytes` of
// the transaction count of mbarrier `bar`. Elements outside the tensor are filled with zeros.
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                            int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
      : "memory");
}
// Adds a 4-D tile in shared memory at `src` into the tensor of `map` at element coordinates
// (c0 .. c3) (elements outside the tensor are skipped), as one bulk group per bulk_commit.
__device__ __forceinline__ void tma_reduce_add_4d(const CUtensorMap* map, uint32_t src, int c0,
                                                  int c1, int c2, int c3) {
  asm volatile(
      "cp.reduce.async.bulk.tensor.4d.global.shared::cta.add.tile.bulk_group"
      " [%0, {%1, %2, %3, %4}], [%5];" ::"l"(reinterpret_cast<uint64_t>(map)),
      "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(src)
      : "memory");
}
__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
// Waits until at most kPending bulk groups of this thread still read their shared memory.
template <int kPending>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(kPending) : "memory");
}
// Waits until at most kPending bulk groups of this thread are incomplete.
template <int kPending>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(kPending) : "memory");
}

// Orders this thread's ordinary shared-memory stores before later reads by the tensor cores or
// the copy engine (the async proxy); a barrier then publishes them to the other threads.
__device__ __forceinline__ void fence_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// ---- Warpgroup MMA ordering (wgmma.fence / commit_group / wait_group) ---------------------------
// fence: before the first wgmma that reads registers (accumulators, A fragments) written since
// the last fence. commit: closes a group of issued wgmmas. wait<N>: until at most N groups pend.
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}
// Keeps the compiler from moving reads or writes of r across asynchronous MMAs that use it.
template <int N>
__device__ __forceinline__ void pin_registers(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

// ---- Shared-memory matrix descriptors (PTX ISA "Matrix Descriptor Format") ---------------------
// For 128-byte swizzled tiles (swizzle atoms of 8 rows × 128 bytes = 1024 bytes, starting on
// 1024-byte boundaries, so the base offset is 0). Canonical layouts, in 16-byte units T:
//   K-major:  ((8, m), (T, 2k)) : ((8T, SBO), (1, T))   — SBO: from one 8-row group to the next;
//             LBO unused (1). A step of 16 elements along K adds 32 bytes to the start address.
//   MN-major: ((T, 8, m), (8, k)) : ((1, T, LBO), (8T, SBO)) — LBO: from one 64-element (128 B)
//             column block to the next along MN; SBO: from one 8-row group to the next along K.
__device__ __forceinline__ uint64_t sw128_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return uint64_t{(addr & 0x3FFFFu) >> 4} | uint64_t{(lbo & 0x3FFFFu) >> 4} << 16 |
         uint64_t{(sbo & 0x3FFFFu) >> 4} << 32 | uint64_t{1} << 62;
}
// The descriptor of the same layout `bytes` further on (a multiple of 16): the start address
// field holds address / 16 in bits 0..13, and shared-memory addresses stay below 2^18, so the sum
// never carries into the next field. One add in place of rebuilding the descriptor per wgmma.
__device__ __forceinline__ uint64_t desc_advance(uint64_t desc, uint32_t bytes) {
  return desc + (bytes >> 4);
}
// The index of the calling thread's warpgroup, as a value the compiler knows to be the same for
// every thread of a warp (it then keeps descriptors derived from it in uniform registers).
__device__ __forceinline__ int warpgroup_index() {
  return __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);
}
// The byte offset of 16-byte chunk `chunk` of row `row` in such a tile (rows of 128 bytes): the
// chunk's position is XORed with the row's within its 8-row atom. This is what the copy engine's
// 128-byte swizzle writes and what sw128_desc describes; threads storing a tile use it too.
__device__ __forceinline__ uint32_t sw128_offset(int row, int chunk) {
  return row * 128 + ((chunk ^ (row & 7)) << 4);
}
// Ordinary stores to a shared-space byte address: 4 bytes, and two floats (8-byte aligned).
// Volatile, so they keep their order with fence_async_shared and the barriers after them.
__device__ __forceinline__ void st_shared(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v));
}
__device__ __forceinline__ void st_shared(uint32_t addr, float a, float b) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(a), "f"(b));
}

// ---- Named barriers (bar.sync / bar.arrive with an id and a thread count) ----------------------
// Id 0 is __syncthreads'. sync waits until `threads` threads have arrived (itself included);
// arrive counts the caller without waiting.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// ---- Register reallocation between warpgroups (setmaxnreg) --------------------------------------
// Takes effect only in a kernel with a register cap at entry (__launch_bounds__(threads, 1)) and
// when every warp of a warpgroup executes it.
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
}

}  // namespace sm90
}  // namespace gptbench

#pragma once
// What the Hopper attention kernels (flash_fwd_sm90.cu, flash_bwd_sm90.cu) share: the block's
// warpgroups and their register split, the aligned shared-memory base, and the launch helpers.
// CUDA only.
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "ops/attention/flash_common.cuh"
#include "ops/attention/flash_tiles.h"
#include "ops/cuda_check.h"

namespace gptbench {
namespace flash_sm90 {

constexpr int kPanelCols = 64;  // one 128-byte swizzle row of 16-bit elements

// A block of one producer warpgroup and kConsumers consumer warpgroups, and its register split:
// at launch each thread has 65,536 / threads registers (in steps of 8); setmaxnreg moves them
// from the producer warpgroup to the consumers, whose increase waits until the producer's
// decrease has freed enough. Two consumers: 128 · (168 − 24) = 256 · (240 − 168); three:
// 128 · (128 − 32) = 384 · (160 − 128).
template <int kConsumers>
struct Warpgroups {
  static_assert(kConsumers == 2 || kConsumers == 3, "two or three consumer warpgroups");
  static constexpr int kThreads = 128 * (kConsumers + 1);
  static constexpr int kConsumerWarps = 4 * kConsumers;
  static constexpr int kEntryRegs = 65536 / kThreads / 8 * 8;
  static constexpr int kProducerRegs = kConsumers == 2 ? 24 : 32;
  static constexpr int kConsumerRegs = kConsumers == 2 ? 240 : 160;
  static_assert(128 * (kEntryRegs - kProducerRegs) >=
                    128 * kConsumers * (kConsumerRegs - kEntryRegs),
                "the consumers' registers come from the producer's");
};

// Work item t of a grid of `items` per batch·head, in the order both kernels use: heads in groups
// (hg: all of them, or as many as a third of the L2 cache holds the tiles of, the last groups
// merged into one of a few waves of items; head_groups), each group's items in turn across its
// heads (item 0 of every head, then item 1, …; item 0 is the heaviest under the causal mask), so
// the blocks at work at once share a few heads' tiles in L2 and the lightest items come last: a
// short tail. Returns the batch·head and its item.
struct HeadItem {
  int bh, item;
};
__device__ __forceinline__ HeadItem grouped_order(int t, int items, FlashHeadGroups hg,
                                                  int bh_total) {
  const int tail_t = hg.tail_begin * items;
  if (t >= tail_t) {  // the last group
    const int r = t - tail_t, heads = bh_total - hg.tail_begin;
    return {hg.tail_begin + r % heads, r / heads};
  }
  const int per_group = hg.group * items;
  const int g0 = t / per_group * hg.group, r = t % per_group;
  return {g0 + r % hg.group, r / hg.group};
}

// The first 1024-byte boundary of the dynamic shared memory `raw` (128-byte swizzled tiles start
// on one; the kernels ask for 1024 bytes of slack), as a shared-space address.
__device__ __forceinline__ uint32_t aligned_base(const unsigned char* raw) {
  return (smem_u32(raw) + 1023u) & ~1023u;
}
// A generic pointer to byte `offset` past that boundary.
template <typename T>
__device__ __forceinline__ T* smem_at(unsigned char* raw, uint32_t offset) {
  return reinterpret_cast<T*>(raw + (aligned_base(raw) - smem_u32(raw)) + offset);
}

// Packs a 64 × N fp32 accumulator fragment to 16 bits as the A fragments of its N/16 k-chunks
// (the register layouts in ops/device/wgmma.cuh): P for P·V, Pᵀ and dSᵀ for dV and dK.
template <typename T, int N>
__device__ __forceinline__ void pack_a_fragments(const float (&d)[N / 2], uint32_t (&a)[N / 16][4]) {
#pragma unroll
  for (int j = 0; j < N / 8; ++j) {
    a[j / 2][(j % 2) * 2] = flash::Ops<T>::pack(d[4 * j], d[4 * j + 1]);
    a[j / 2][(j % 2) * 2 + 1] = flash::Ops<T>::pack(d[4 * j + 2], d[4 * j + 3]);
  }
}

// The same for the e4m3 A operand of k = 32 (ops/device/wgmma.cuh): a thread holds columns
// 4t .. 4t + 3 and 16 + 4t .. of each 32, where its accumulators hold columns 2t, 2t + 1 of each
// 8. Packing its own values, a[c] = {d of chunks 4c and 4c + 1 of row g; of row g + 8; chunks
// 4c + 2, 4c + 3 of row g; of row g + 8}, makes A column 4t + i of chunk c stand for column
// 8 (i / 2) + 2t + i % 2 (and 16 more in the second half): V's rows are stored in that order
// (flash_fp8_v_key), so no value moves between threads. pack_e4m3x4: four floats to e4m3 (round
// to nearest even, saturating at ±448), x0 in the lowest byte (also the quantizer's rounding).
__device__ __forceinline__ uint32_t pack_e4m3x4(float x0, float x1, float x2, float x3) {
  uint16_t lo, hi;  // cvt packs its first source into the upper byte
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(lo) : "f"(x1), "f"(x0));
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(hi) : "f"(x3), "f"(x2));
  return uint32_t{lo} | (uint32_t{hi} << 16);
}
template <int N>
__device__ __forceinline__ void pack_a_fragments_e4m3(const float (&d)[N / 2],
                                                      uint32_t (&a)[N / 32][4]) {
#pragma unroll
  for (int c = 0; c < N / 32; ++c) {
    const float* x = d + 16 * c;
    a[c][0] = pack_e4m3x4(x[0], x[1], x[4], x[5]);
    a[c][1] = pack_e4m3x4(x[2], x[3], x[6], x[7]);
    a[c][2] = pack_e4m3x4(x[8], x[9], x[12], x[13]);
    a[c][3] = pack_e4m3x4(x[10], x[11], x[14], x[15]);
  }
}

// Writes this thread's share of one row of a 64 × N accumulator fragment, times `scale`, as
// 16-bit values into `row` (N contiguous elements): r = 0 for its row 16w + g, 1 for 16w + g + 8.
template <typename T, int N>
__device__ __forceinline__ void store_row(T* row, const float (&d)[N / 2], int r, float scale) {
  uint32_t* dst = reinterpret_cast<uint32_t*>(row);
  const int t4 = threadIdx.x & 3;
#pragma unroll
  for (int j = 0; j < N / 8; ++j)
    dst[4 * j + t4] = flash::Ops<T>::pack(d[4 * j + 2 * r] * scale, d[4 * j + 2 * r + 1] * scale);
}

// Raises kKernel's dynamic shared-memory limit to `bytes`, once per kernel.
template <auto kKernel>
void allow_smem(int bytes) {
  static const bool once = [bytes] {
    CUDA_CHECK(cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    return true;
  }();
  (void)once;
}

// Calls f(T{}, std::integral_constant<int, d>{}) for p's 16-bit element type and head dim d
// (64 or 128; another throws std::invalid_argument).
template <typename Params, typename F>
void with_type_and_dim(const Params& p, F&& f) {
  if (p.d != 64 && p.d != 128)
    throw std::invalid_argument("flash attention (sm90): head dim " + std::to_string(p.d) +
                                " unsupported (64, 128)");
  flash::with_dtype(p.dtype, [&](auto t) {
    if (p.d == 64)
      f(t, std::integral_constant<int, 64>{});
    else
      f(t, std::integral_constant<int, 128>{});
  });
}

}  // namespace flash_sm90
}  // namespace gptbench

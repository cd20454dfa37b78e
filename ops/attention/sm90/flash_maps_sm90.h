#pragma once
// Host side of the Hopper attention kernels (flash_fwd_sm90.cu, flash_bwd_sm90.cu): the copy
// engine's maps of (B, H, L, d) operands and the checks of what the kernels take. CUDA only.
#include <cuda.h>

#include <initializer_list>
#include <string>

#include "ops/attention/flash_kernels.h"
#include "ops/attention/flash_tiles.h"

namespace gptbench {
namespace flash_sm90 {

// The copy map of a (B, H, L, d) operand of 16-bit `dtype` with strides `st` (elements): dims
// innermost first (d, L, H, B), boxes of 64 columns × box_rows rows with 128-byte swizzle (the
// layout wgmma reads, ops/device/hopper.cuh), zero fill outside the tensor.
// Throws CudaError when the driver rejects the map.
CUtensorMap tensor_map(const void* data, const FlashStrides& st, int B, int H, int L, int d,
                       ElemType dtype, int box_rows);
// The same for an e4m3 (B, H, rows, cols) tensor (FP8 q, k: rows L, cols d; vᵀ: rows d, cols Lv),
// boxes of 128 columns (128 bytes) × box_rows rows.
CUtensorMap tensor_map_e4m3(const void* data, const FlashStrides& st, int B, int H, int rows,
                            int cols, int box_rows);
// The same for an fp32 (B, H, L, d) tensor (the dQ workspace), boxes of 32 columns (128 bytes).
CUtensorMap tensor_map_f32(const float* data, const FlashStrides& st, int B, int H, int L, int d,
                           int box_rows);

// The head groups of grouped_order (flash_sm90_common.cuh) for the current device, with
// bytes_per_head of data shared by a head's `items` work items: flash_sm90_heads_per_group for
// its L2 cache, the last groups merged into one of at least tail_waves items per multiprocessor
// (flash_sm90_head_groups; 0: the last group alone).
FlashHeadGroups head_groups(int64_t bytes_per_head, int bh_total, int items, int tail_waves);

// Why the Hopper kernels cannot run a problem of head dim d, B·H = batch_heads and length L whose
// operands have these strides and pointers on a GPU of compute capability cc_major.cc_minor, or
// "" when they can.
std::string unsupported(int d, int64_t batch_heads, int L, int cc_major, int cc_minor,
                        std::initializer_list<FlashStrides> strides,
                        std::initializer_list<const void*> ptrs);

}  // namespace flash_sm90
}  // namespace gptbench

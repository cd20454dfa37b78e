#pragma once
// Tile arithmetic of our FlashAttention-2-style kernels, shared by the kernels
// (ops/attention/flash_fwd.cu, flash_bwd.cu) and by the CPU emulation of the algorithm
// (flash_attention_tiled_cpu in ops/attention/flash.h), so that CPU tests exercise the very loop
// bounds and masking rules the kernels use. No CUDA or LibTorch headers: usable in every build.

#ifdef __CUDACC__
#define GPTBENCH_FLASH_HD __host__ __device__
#else
#define GPTBENCH_FLASH_HD
#endif

namespace gptbench {

struct FlashTile {
  int block_m;  // query rows per tile
  int block_n;  // key rows per tile
  int warps;    // warps per thread block
};

// Forward: 128 query rows per block. d = 64 and 128: 4 warps of 32 rows, key tiles of 128
// (d = 64) and 64 (d = 128): the 128 S accumulators at d = 64, and the 128 O + 64 S at d = 128,
// fit 255 registers without spill only with V's copies issued after the softmax (flash_fwd.cu);
// d <= 32: 8 warps of 16 rows, key tiles of 64.
constexpr FlashTile flash_fwd_tile(int d) {
  return d == 128 ? FlashTile{128, 64, 4} : d == 64 ? FlashTile{128, 128, 4} : FlashTile{128, 64, 8};
}
// Backward: 16 keys per warp; key tiles of 128 (8 warps) for d >= 64, of 64 (4 warps) below;
// query tiles of 64 rows, 32 at d = 128 (64 would need more than 255 registers: the dK, dV
// accumulators alone take 128).
constexpr FlashTile flash_bwd_tile(int d) {
  return d == 128 ? FlashTile{32, 128, 8} : d == 64 ? FlashTile{64, 128, 8} : FlashTile{64, 64, 4};
}

// Bytes of dynamic shared memory per block (rows padded by 8 elements = 16 bytes so that the
// eight 16-byte rows one ldmatrix phase reads fall in distinct banks).
// Forward: Q once; K, V double-buffered.
constexpr int flash_fwd_smem_bytes(int d, FlashTile t) {
  return (t.block_m + 4 * t.block_n) * (d + 8) * 2;
}
// Backward: K, V once; Q, dO, dSᵀ (block_n, block_m + 8; 16-bit), lse and D double-buffered.
constexpr int flash_bwd_smem_bytes(int d, FlashTile t) {
  return (2 * t.block_n + 4 * t.block_m) * (d + 8) * 2 + 2 * t.block_n * (t.block_m + 8) * 2 +
         4 * t.block_m * 4;
}
constexpr int flash_fwd_smem_bytes(int d) { return flash_fwd_smem_bytes(d, flash_fwd_tile(d)); }
constexpr int flash_bwd_smem_bytes(int d) { return flash_bwd_smem_bytes(d, flash_bwd_tile(d)); }

// Element (row, col) of the score matrix takes no part: a padded key or query beyond L, or a
// key after the query under the causal mask.
GPTBENCH_FLASH_HD inline bool flash_masked(int row, int col, int L, bool causal) {
  return col >= L || row >= L || (causal && col > row);
}

// Whether a tile (rows m0.., cols n0..) may hold a masked element; tiles that cannot skip the
// per-element test.
GPTBENCH_FLASH_HD inline bool flash_tile_needs_mask(int m0, int n0, int block_m, int block_n,
                                                    int L, bool causal) {
  return n0 + block_n > L || m0 + block_m > L || (causal && n0 + block_n - 1 > m0);
}

// Forward: the key tiles query tile m_block visits are 0 .. n_blocks-1; under the causal mask
// the tiles wholly after the tile's last query are skipped.
GPTBENCH_FLASH_HD inline int flash_fwd_n_blocks(int m_block, int L, bool causal, int block_m,
                                                int block_n) {
  int n_end = L;
  if (causal && (m_block + 1) * block_m < L) n_end = (m_block + 1) * block_m;
  return (n_end + block_n - 1) / block_n;
}

// Backward: key tile n_block visits query tiles m_begin .. ceil(L / block_m)-1; under the causal
// mask the query tiles wholly before the tile's first key are skipped.
GPTBENCH_FLASH_HD inline int flash_bwd_m_begin(int n_block, bool causal, int block_m,
                                               int block_n) {
  return causal ? (n_block * block_n) / block_m : 0;
}

GPTBENCH_FLASH_HD inline int flash_num_blocks(int L, int block) { return (L + block - 1) / block; }

// Backward block scheduling: grid (heads per group, key tiles, groups), so that the blocks
// resident at once cover one group of heads, key tile 0 first. With all heads in one group that
// is "every head's heaviest tile first" (best balance under the causal mask); a smaller group
// keeps what its blocks share (Q, dO and the fp32 dQ workspace) within L2 at long L.
// Bytes of L2 a head group's shared data may take: a third of the H100/H200's 50 MB L2
// (8, 16, 32 MB and no grouping timed on the H200: 16 and 32 MB best, within 1%).
constexpr long long kFlashL2GroupBytes = 16ll << 20;
// Heads per group: at most as many as fit `budget` bytes at bytes_per_head each (at least 1),
// evened out over the groups so that the last is not much shorter than the others.
inline int flash_heads_per_group(int bh_count, long long bytes_per_head,
                                 long long budget = kFlashL2GroupBytes) {
  const long long n = bh_count > 0 ? bh_count : 1;  // 64-bit: no overflow near 2^31 heads
  const long long fit = budget / (bytes_per_head > 0 ? bytes_per_head : 1);
  const long long g = fit < 1 ? 1 : fit > n ? n : fit;
  const long long groups = (n + g - 1) / g;
  return static_cast<int>((n + groups - 1) / groups);
}

// Forward block scheduling: the same grouping of heads, each group's blocks heaviest query tile
// first, so that the blocks resident at once stream few heads' K and V (4·L·d bytes per head)
// instead of every head's (805 MB at B = 8, H = 12, L = 16384, d = 128). Budget 32 MB (16, 32 and
// 64 MB timed on the H200, 2026-11-24: 32 best); one group (grid as before grouping: every
// head's heaviest tile first) where all heads fit it, or where the groups would not fit gridDim.z.
constexpr long long kFlashFwdGroupBytes = 32ll << 20;
inline int flash_fwd_heads_per_group(int bh_count, int L, int d) {
  const int g = flash_heads_per_group(bh_count, 4ll * L * d, kFlashFwdGroupBytes);
  return (bh_count + g - 1) / g > 65535 ? bh_count : g;
}

// The Hopper kernels' head groups (their grids are flat: no gridDim.z bound), for an L2 cache of
// l2_bytes: one group where the data of all heads (bytes_per_head each) fits half of it (every
// head's heaviest tile first: the best balance); else as many heads as a third of it holds,
// evened out over the groups. A short last group is a long tail: the blocks that reach it take
// its heaviest tiles last. H200, 2026-11-26, forward at B = 8, H = 12, L = 1,024 (TFLOP/s; a third
// of L2 uneven / evened / one group): d = 64 (24 MB in all) 238–243 / 263–265 / 281–283,
// d = 128 (48 MB) 344 / 363–367 / 351–353; fwd+bwd at L = 1,024, d = 128 +2–5% from evening; at
// L = 4,096 the groups come out the same either way.
inline int flash_sm90_heads_per_group(int bh_count, long long bytes_per_head, long long l2_bytes) {
  const long long per_head = bytes_per_head > 0 ? bytes_per_head : 1;
  if (bh_count <= 0 || per_head <= l2_bytes / 2 / bh_count) return bh_count > 0 ? bh_count : 1;
  return flash_heads_per_group(bh_count, per_head, l2_bytes / 3);
}

// The Hopper kernels' work order over heads (grouped_order, flash_sm90_common.cuh): groups of
// `group` heads in turn, the heads from tail_begin on (a multiple of group) one last group.
struct FlashHeadGroups {
  int group, tail_begin;
};
// The last groups merged into one of at least min_items work items (items per head each) where
// the heads allow: a last group of fewer items than the GPU runs at once leaves multiprocessors
// idle while its heaviest items run.
inline FlashHeadGroups flash_sm90_head_groups(int bh_count, int group, long long items,
                                              long long min_items) {
  const int n = bh_count > 0 ? bh_count : 1, g = group > 0 && group < n ? group : n;
  const int groups = (n + g - 1) / g;
  int merged = 1;
  while (merged < groups && static_cast<long long>(n - (groups - merged) * g) * items < min_items)
    ++merged;
  return {g, (groups - merged) * g};
}

// The FP8 forward's order of v's keys (ops/attention/flash_fp8.h): the key stored at position p
// (0 .. 31) of a group of 32. The e4m3 MMA's register operand gives a thread columns 4t .. 4t + 3
// (and 16 more) of each 32 where the S accumulator gives it columns 2t, 2t + 1 of each 8; packed
// in register order (pack_a_fragments_e4m3), operand column 4t + i holds key 8 (i / 2) + 2t + i % 2.
GPTBENCH_FLASH_HD inline int flash_fp8_v_key(int p) {
  const int i = p % 4, t = (p % 16) / 4;
  return 16 * (p / 16) + 8 * (i / 2) + 2 * t + i % 2;
}

}  // namespace gptbench

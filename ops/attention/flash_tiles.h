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

// Forward: 128 query rows per block, one 16-row slice per warp (8 warps), key tiles of 64.
constexpr FlashTile flash_fwd_tile(int /*d*/) { return FlashTile{128, 64, 8}; }
// Backward: key tiles of 64 (one 16-key slice per warp, 4 warps), query tiles of 64; 32 for
// d = 128, where 64 would need more than 255 registers (dK, dV accumulators alone take 128) and
// spill to local memory.
constexpr FlashTile flash_bwd_tile(int d) { return FlashTile{d == 128 ? 32 : 64, 64, 4}; }

// Bytes of dynamic shared memory per block (rows padded by 8 elements = 16 bytes so that the
// eight 16-byte rows one ldmatrix phase reads fall in distinct banks).
constexpr int flash_fwd_smem_bytes(int d) {
  return (flash_fwd_tile(d).block_m + 4 * flash_fwd_tile(d).block_n) * (d + 8) * 2;
}
constexpr int flash_bwd_smem_bytes(int d) {
  // K, V once; Q, dO double-buffered; dSᵀ (block_n, block_m + 8) in 16-bit; lse, D double-buffered.
  return (2 * flash_bwd_tile(d).block_n + 4 * flash_bwd_tile(d).block_m) * (d + 8) * 2 +
         flash_bwd_tile(d).block_n * (flash_bwd_tile(d).block_m + 8) * 2 +
         4 * flash_bwd_tile(d).block_m * 4;
}

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

}  // namespace gptbench

// ops/attention/flash_tiles.h: the tile bounds and masking rules, exhaustively on small L;
// shared-memory budgets; the head groups of the portable kernels' backward and forward and of
// the Hopper kernels.
#include "ops/attention/flash_tiles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace gptbench {
namespace {

// Every tile the masking test lets through (needs_mask false) really has no masked element;
// causal tile skipping drops only wholly masked tiles and keeps no wholly masked tile.
TEST(FlashAttentionTiles, MaskAndSkipRulesAreExact) {
  for (int bm : {16, 32, 64, 128}) {
    for (int bn : {16, 32, 64, 128}) {
      for (int L = 1; L <= 200; L += (L < 40 ? 1 : 13)) {
        for (bool causal : {false, true}) {
          const int nm = flash_num_blocks(L, bm), nn = flash_num_blocks(L, bn);
          for (int mb = 0; mb < nm; ++mb) {
            for (int nb = 0; nb < nn; ++nb) {
              bool any_masked = false, any_live = false;
              for (int r = mb * bm; r < (mb + 1) * bm; ++r)
                for (int c = nb * bn; c < (nb + 1) * bn; ++c) {
                  const bool m = flash_masked(r, c, L, causal);
                  any_masked |= m;
                  any_live |= !m;
                }
              if (!flash_tile_needs_mask(mb * bm, nb * bn, bm, bn, L, causal)) {
                ASSERT_FALSE(any_masked) << "L=" << L << " tile " << mb << "," << nb;
              }
              // Forward visits key tiles [0, n_blocks); backward visits query tiles
              // [m_begin, nm) of key tile nb.
              const bool fwd_visits = nb < flash_fwd_n_blocks(mb, L, causal, bm, bn);
              const bool bwd_visits = mb >= flash_bwd_m_begin(nb, causal, bm, bn);
              ASSERT_EQ(fwd_visits, any_live) << "fwd L=" << L << " tile " << mb << "," << nb;
              ASSERT_EQ(bwd_visits, any_live) << "bwd L=" << L << " tile " << mb << "," << nb;
            }
          }
        }
      }
    }
  }
}

TEST(FlashAttentionTiles, SharedMemoryFitsOneHopperBlock) {
  constexpr int kHopperOptin = 227 * 1024;  // cudaDevAttrMaxSharedMemoryPerBlockOptin on sm_90
  for (int d : {16, 32, 64, 128}) {
    EXPECT_LE(flash_fwd_smem_bytes(d), kHopperOptin) << d;
    EXPECT_LE(flash_bwd_smem_bytes(d), kHopperOptin) << d;
    // Forward: 16 or 32 query rows per warp; backward: 16 keys per warp.
    const FlashTile f = flash_fwd_tile(d);
    EXPECT_TRUE(f.block_m == 16 * f.warps || f.block_m == 32 * f.warps) << d;
    EXPECT_EQ(flash_bwd_tile(d).block_n, 16 * flash_bwd_tile(d).warps) << d;
  }
  // Eight warps per SM need two blocks of the 4-warp kernels (the forward; the backward at
  // d <= 32): shared memory must leave room for them (228 KB, 1 KB reserved per block). The
  // 8-warp backward (d = 64, 128) runs one block per SM, which its registers impose anyway.
  for (int d : {16, 32, 64, 128}) {
    if (flash_fwd_tile(d).warps == 4) {
      EXPECT_LE(2 * (flash_fwd_smem_bytes(d) + 1024), 228 * 1024) << d;
    }
    if (flash_bwd_tile(d).warps == 4) {
      EXPECT_LE(2 * (flash_bwd_smem_bytes(d) + 1024), 228 * 1024) << d;
    }
  }
}

// Backward head groups: within [1, heads], within the L2 budget unless one head alone exceeds
// it, as few groups as the budget allows, and evened out (the last group is short by fewer heads
// than there are groups).
TEST(FlashAttentionTiles, HeadGroupsFitTheBudgetAndBalance) {
  for (int heads : {1, 2, 3, 12, 96, 100, 65535}) {
    for (long long per_head : {1ll, 1ll << 16, 1ll << 20, 3ll << 20, 16ll << 20, 64ll << 20}) {
      const int g = flash_heads_per_group(heads, per_head);
      ASSERT_GE(g, 1);
      ASSERT_LE(g, heads);
      if (per_head <= kFlashL2GroupBytes) {
        EXPECT_LE(g * per_head, kFlashL2GroupBytes);
      }
      const int groups = (heads + g - 1) / g;
      EXPECT_LT(groups * g - heads, groups) << heads << " " << per_head;  // last group not short
      // As few groups as the budget allows.
      const long long fit =
          std::max(1ll, std::min<long long>(heads, kFlashL2GroupBytes / per_head));
      EXPECT_EQ(groups, (heads + fit - 1) / fit) << heads << " " << per_head;
    }
  }
}

// Forward head groups: one group (the ungrouped grid) where the K and V of all heads (4·L·d
// bytes per head) fit kFlashFwdGroupBytes; else flash_heads_per_group with that budget, unless
// the groups would exceed gridDim.z's 65535.
TEST(FlashAttentionTiles, ForwardHeadGroups) {
  EXPECT_EQ(flash_fwd_heads_per_group(96, 1024, 64), 96);   // 24 MB in all: one group
  EXPECT_EQ(flash_fwd_heads_per_group(96, 1024, 128), 48);  // 48 MB: two groups
  EXPECT_EQ(flash_fwd_heads_per_group(96, 4096, 128), 16);  // 2 MB per head: 6 groups
  EXPECT_EQ(flash_fwd_heads_per_group(96, 16384, 64), 8);   // 4 MB per head: 12 groups
  EXPECT_EQ(flash_fwd_heads_per_group(96, 16384, 128), 4);  // 8 MB per head: 24 groups
  EXPECT_EQ(flash_fwd_heads_per_group(300000, 16384, 128), 300000);  // 75000 groups: one
  for (int heads : {1, 7, 96, 70000})
    for (int L : {1, 1000, 4096, 16384, 100000})
      for (int d : {16, 32, 64, 128}) {
        const int g = flash_fwd_heads_per_group(heads, L, d);
        const long long per_head = 4ll * L * d;
        ASSERT_GE(g, 1);
        ASSERT_LE(g, heads);
        if (per_head * heads <= kFlashFwdGroupBytes) {
          EXPECT_EQ(g, heads) << heads << " " << L;
        }
        const int hg = flash_heads_per_group(heads, per_head, kFlashFwdGroupBytes);
        EXPECT_EQ(g, (heads + hg - 1) / hg <= 65535 ? hg : heads) << heads << " " << L << " " << d;
      }
}

// The Hopper kernels' head groups: one group where all heads' data fits half the L2, else
// evened-out groups within a third of it (the last group not short: a long tail otherwise).
TEST(FlashAttentionTiles, Sm90HeadGroups) {
  constexpr long long kL2 = 60ll << 20;  // the H200's
  EXPECT_EQ(flash_sm90_heads_per_group(96, 4ll * 1024 * 64, kL2), 96);   // 24 MB: one group
  EXPECT_EQ(flash_sm90_heads_per_group(96, 4ll * 1024 * 128, kL2), 32);  // 48 MB: 40, 40, 16 evened
  EXPECT_EQ(flash_sm90_heads_per_group(96, 12ll * 1024 * 64, kL2), 24);  // backward, 72 MB
  EXPECT_EQ(flash_sm90_heads_per_group(96, 4ll * 16384 * 128, kL2), 2);  // 8 MB per head
  EXPECT_EQ(flash_sm90_heads_per_group(3, 1ll << 40, kL2), 1);           // a head above L2
  EXPECT_EQ(flash_sm90_heads_per_group(0, 1, kL2), 1);
  for (int heads : {1, 7, 96, 70000, 2000000000})
    for (long long per_head : {0ll, 1ll, 1ll << 16, 1ll << 20, 3ll << 20, 24ll << 20, 1ll << 42}) {
      const int g = flash_sm90_heads_per_group(heads, per_head, kL2);
      ASSERT_GE(g, 1);
      ASSERT_LE(g, heads);
      const long long each = std::max(per_head, 1ll);
      if (each <= kL2 / 2 / heads) {
        EXPECT_EQ(g, heads) << heads << " " << per_head;
        continue;
      }
      if (each <= kL2 / 3) {
        EXPECT_LE(g * each, kL2 / 3) << heads << " " << per_head;
      }
      const long long groups = (heads + g - 1ll) / g;
      EXPECT_LT(groups * g - heads, groups) << heads << " " << per_head;  // last group not short
    }
}

// The last head groups merged into one of at least min_items work items where the heads allow;
// every group before it whole.
TEST(FlashAttentionTiles, Sm90LastGroupsMerged) {
  // Backward at L = 4,096, d = 128 on an H200: 32 groups of 3 heads, 32 key tiles per head.
  const FlashHeadGroups bwd = flash_sm90_head_groups(96, 3, 32, 2 * 132);
  EXPECT_EQ(bwd.group, 3);
  EXPECT_EQ(bwd.tail_begin, 87);  // 9 heads, 288 items
  EXPECT_EQ(flash_sm90_head_groups(96, 3, 32, 0).tail_begin, 93);   // the last group alone
  EXPECT_EQ(flash_sm90_head_groups(96, 96, 8, 1000).tail_begin, 0);  // one group
  EXPECT_EQ(flash_sm90_head_groups(10, 4, 1, 1000).tail_begin, 0);   // all merged
  for (int heads : {1, 7, 96, 1000})
    for (int group : {1, 3, 7, 96, 2000})
      for (long long items : {1ll, 8ll, 100ll})
        for (long long min_items : {0ll, 264ll, 1ll << 40}) {
          const FlashHeadGroups hg = flash_sm90_head_groups(heads, group, items, min_items);
          const std::string at_ = std::to_string(heads) + " " + std::to_string(group) + " " +
                                  std::to_string(items) + " " + std::to_string(min_items);
          ASSERT_EQ(hg.group, std::min(group, heads)) << at_;
          ASSERT_EQ(hg.tail_begin % hg.group, 0) << at_;
          ASSERT_GE(hg.tail_begin, 0) << at_;
          ASSERT_LT(hg.tail_begin, heads) << at_;  // the last group holds a head at least
          const long long tail_items = (heads - hg.tail_begin) * items;
          if (hg.tail_begin > 0) {
            EXPECT_GE(tail_items, min_items) << at_;
          }
          if (heads - hg.tail_begin > hg.group) {  // groups merged: no more than needed
            EXPECT_LT(tail_items - hg.group * items, min_items) << at_;
          }
        }
}

}  // namespace
}  // namespace gptbench

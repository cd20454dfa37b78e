// Tests of ops/attention/flash.*: our FlashAttention-2-style kernels.
//   CPU (always run): the float64 references against the textbook formula and LibTorch
//   autograd; the CPU emulation of the kernels' tiled algorithm (same tile arithmetic, from
//   flash_tiles.h) against the references; the tile bounds and masking rules exhaustively on
//   small L; shared-memory budgets and the backward's head groups; the error paths (CPU
//   tensors, unsupported head dims and dtypes, bad shapes).
//   GPU (skipped without a GPU or a CUDA build): o, lse, dQ, dK, dV for bf16 and fp16, every head
//   dim, causal and not, L in {1, 17, 130, 1000, 4097}, against float64 on the CPU (L <= 130) or
//   at::scaled_dot_product_attention's math backend in fp32 on the GPU (larger L); outputs
//   poisoned with NaN before each call; strided and misaligned inputs; the autograd function in a
//   GPT-2-shaped attention layer.
// Sanitizer run (small shapes only):
//   compute-sanitizer --tool memcheck  build/gptbench_tests --gtest_filter='*FlashAttentionGpu*_L17_*:*FlashAttentionGpu*_L130_*'
//   compute-sanitizer --tool racecheck build/gptbench_tests --gtest_filter='*FlashAttentionGpu*_L17_*:*FlashAttentionGpu*_L130_*'
#include "ops/attention/flash.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "fixtures/verify.h"
#include "ops/attention/flash_tiles.h"
#include "ops/tf32_guard.h"

namespace gptbench {
namespace {

const double kInf = std::numeric_limits<double>::infinity();

at::Tensor randn_dbl(int64_t B, int64_t H, int64_t L, int64_t d) {
  return at::randn({B, H, L, d}, at::TensorOptions().dtype(at::kDouble));
}

// The textbook formula, independent of flash.cpp: softmax(q kᵀ / sqrt(d) + mask) v.
at::Tensor softmax_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             bool causal) {
  const int64_t L = q.size(2);
  auto s = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(3)));
  if (causal)
    s = s.masked_fill(at::ones({L, L}, q.options().dtype(at::kBool)).triu(1),
                      -std::numeric_limits<double>::infinity());
  return at::matmul(at::softmax(s, -1), v);
}

struct Case {
  int64_t B, H, L, d;
};

// "" when a gradient matches its reference: ‖out − ref‖ / max(‖ref‖, 1e-3·‖dv_ref‖) <= tol
// (NaN never passes). dq and dk vanish at L = 1 — a softmax over one key is constant — and the
// computed values are rounding residue, so a plain relative error is 0/0 there; dv never
// vanishes and sets the scale of the floor.
std::string check_grad(const at::Tensor& out, const at::Tensor& ref, const at::Tensor& dv_ref,
                       double tol) {
  const auto o = out.detach().to(at::kCPU, at::kDouble), r = ref.detach().to(at::kCPU, at::kDouble);
  if (o.sizes() != r.sizes()) return "shape mismatch";
  const double den = std::max(r.norm().item<double>(),
                              1e-3 * dv_ref.detach().to(at::kCPU, at::kDouble).norm().item<double>());
  const double err = (o - r).norm().item<double>() / den;
  if (err <= tol) return "";
  return "relative error " + std::to_string(err) + " exceeds " + std::to_string(tol);
}

// ---- The references ---------------------------------------------------------------------------

TEST(FlashAttentionReference, MatchesSoftmaxFormulaAndAutograd) {
  at::manual_seed(1);
  for (bool causal : {false, true}) {
    for (Case c : {Case{2, 3, 1, 16}, Case{2, 3, 17, 32}, Case{1, 2, 70, 16}}) {
      auto q = randn_dbl(c.B, c.H, c.L, c.d), k = randn_dbl(c.B, c.H, c.L, c.d);
      auto v = randn_dbl(c.B, c.H, c.L, c.d), dout = randn_dbl(c.B, c.H, c.L, c.d);
      const auto ref = flash_attention_reference(q, k, v, causal);
      // Both are float64 evaluations of one formula: agreement to ~1e-15; 1e-12 allows for
      // different summation orders.
      EXPECT_EQ(check_close(ref.o, softmax_attention(q, k, v, causal), 1e-12), "")
          << "L=" << c.L << " causal=" << causal;
      auto s = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(c.d));
      if (causal)
        s = s.masked_fill(at::ones({c.L, c.L}, at::kBool).triu(1), -kInf);
      EXPECT_LT(max_abs_error(ref.lse, at::logsumexp(s, -1)), 1e-12);

      auto qg = q.clone().requires_grad_(true), kg = k.clone().requires_grad_(true);
      auto vg = v.clone().requires_grad_(true);
      softmax_attention(qg, kg, vg, causal).backward(dout);
      const auto g = flash_attention_backward_reference(q, k, v, dout, causal);
      const auto& dv = vg.grad();
      EXPECT_EQ(check_grad(g.dq, qg.grad(), dv, 1e-10), "") << "dq L=" << c.L << " causal=" << causal;
      EXPECT_EQ(check_grad(g.dk, kg.grad(), dv, 1e-10), "") << "dk L=" << c.L << " causal=" << causal;
      EXPECT_EQ(check_grad(g.dv, dv, dv, 1e-10), "") << "dv L=" << c.L << " causal=" << causal;
    }
  }
}

// The kernels' algorithm on the CPU: the tile sizes the kernels use and smaller, odd ones, so
// that several tiles, tails and the causal diagonal all occur.
TEST(FlashAttentionTiledCpu, MatchesReference) {
  at::manual_seed(2);
  struct Tiles {
    int bm, bn;
  };
  // Few at:: calls per tile, but many tiles: L and the tile list are kept small for CI's 2 cores.
  const Tiles fwd_tiles[] = {{flash_fwd_tile(64).block_m, flash_fwd_tile(64).block_n},
                             {flash_fwd_tile(128).block_m, flash_fwd_tile(128).block_n},
                             {32, 16}, {16, 48}};
  const Tiles bwd_tiles[] = {{flash_bwd_tile(32).block_m, flash_bwd_tile(32).block_n},
                             {flash_bwd_tile(64).block_m, flash_bwd_tile(64).block_n},
                             {flash_bwd_tile(128).block_m, flash_bwd_tile(128).block_n},
                             {48, 16}};
  for (bool causal : {false, true}) {
    for (int64_t L : {1, 17, 65, 130}) {
      auto q = randn_dbl(1, 2, L, 16), k = randn_dbl(1, 2, L, 16), v = randn_dbl(1, 2, L, 16);
      auto dout = randn_dbl(1, 2, L, 16);
      const auto ref = flash_attention_reference(q, k, v, causal);
      const auto gref = flash_attention_backward_reference(q, k, v, dout, causal);
      // float64 throughout; the online rescaling reorders sums only: 1e-12 relative.
      for (auto t : fwd_tiles) {
        const auto out = flash_attention_tiled_cpu(q, k, v, causal, t.bm, t.bn);
        EXPECT_EQ(check_close(out.o, ref.o, 1e-12), "")
            << "L=" << L << " causal=" << causal << " tiles " << t.bm << "x" << t.bn;
        EXPECT_LT(max_abs_error(out.lse, ref.lse), 1e-12) << "L=" << L << " tiles " << t.bm;
      }
      for (auto t : bwd_tiles) {
        const auto g = flash_attention_backward_tiled_cpu(q, k, v, ref.o, ref.lse, dout, causal,
                                                          t.bm, t.bn);
        const std::string where = "L=" + std::to_string(L) + " causal=" +
                                  std::to_string(causal) + " tiles " + std::to_string(t.bm) +
                                  "x" + std::to_string(t.bn);
        EXPECT_EQ(check_grad(g.dq, gref.dq, gref.dv, 1e-11), "") << "dq " << where;
        EXPECT_EQ(check_grad(g.dk, gref.dk, gref.dv, 1e-11), "") << "dk " << where;
        EXPECT_EQ(check_grad(g.dv, gref.dv, gref.dv, 1e-11), "") << "dv " << where;
      }
    }
  }
}

// ---- Tile arithmetic, exhaustively on small problems --------------------------------------------

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

// ---- Error paths (CPU) ---------------------------------------------------------------------------

// The c10::Error message of f(), or "" when it does not throw one.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "";
}

TEST(FlashAttention, CpuTensorsGiveClearError) {
  auto q = at::randn({1, 2, 8, 64}).to(at::kBFloat16);
  const std::string fwd = error_of([&] { flash_attention_forward(q, q, q, true); });
  EXPECT_NE(fwd.find("flash_attention_forward: needs CUDA tensors"), std::string::npos) << fwd;
  const std::string ag = error_of([&] { flash_attention(q, q, q, false); });
  EXPECT_NE(ag.find("needs CUDA tensors"), std::string::npos) << ag;
  auto lse = at::zeros({1, 2, 8});
  const std::string bwd = error_of([&] { flash_attention_backward(q, q, q, q, lse, q, true); });
  EXPECT_NE(bwd.find("flash_attention_backward: needs CUDA tensors"), std::string::npos) << bwd;
  // Forcing the Hopper kernels, or asking whether they can run, checks the input first too.
  const std::string sm90 =
      error_of([&] { flash_attention_forward(q, q, q, true, FlashKernel::kSm90); });
  EXPECT_NE(sm90.find("needs CUDA tensors"), std::string::npos) << sm90;
  const std::string ask = error_of([&] { flash_sm90_unsupported(q, q, q); });
  EXPECT_NE(ask.find("flash_sm90_unsupported: needs CUDA tensors"), std::string::npos) << ask;
  const std::string shape =
      error_of([&] { flash_sm90_unsupported(q, q, q.narrow(2, 0, 4)); });
  EXPECT_NE(shape.find("same shape"), std::string::npos) << shape;
}

TEST(FlashAttention, UnsupportedShapesAndDtypesGiveClearErrors) {
  auto bf = at::TensorOptions().dtype(at::kBFloat16);
  auto d80 = at::randn({1, 2, 8, 80}, bf);
  std::string e = error_of([&] { flash_attention_forward(d80, d80, d80, true); });
  EXPECT_NE(e.find("head dim 80 unsupported (supported: 16, 32, 64, 128)"), std::string::npos) << e;
  e = error_of([&] { flash_attention(d80, d80, d80, true); });
  EXPECT_NE(e.find("head dim 80 unsupported"), std::string::npos) << e;

  auto f32 = at::randn({1, 2, 8, 64});
  e = error_of([&] { flash_attention_forward(f32, f32, f32, false); });
  EXPECT_NE(e.find("bf16 or fp16 inputs only"), std::string::npos) << e;

  auto q = at::randn({1, 2, 8, 64}, bf), k = at::randn({1, 2, 9, 64}, bf);
  e = error_of([&] { flash_attention_forward(q, k, q, false); });
  EXPECT_NE(e.find("same shape"), std::string::npos) << e;

  auto q3 = at::randn({2, 8, 64}, bf);
  e = error_of([&] { flash_attention_forward(q3, q3, q3, false); });
  EXPECT_NE(e.find("must be 4-D"), std::string::npos) << e;

  auto h = at::randn({1, 2, 8, 64}).to(at::kHalf);
  e = error_of([&] { flash_attention_forward(q, h, q, false); });
  EXPECT_NE(e.find("share a dtype"), std::string::npos) << e;
}

TEST(FlashAttention, HeadDimSupport) {
  for (int64_t d : {16, 32, 64, 128}) EXPECT_TRUE(flash_attention_supports_head_dim(d));
  for (int64_t d : {0, 8, 48, 80, 96, 256}) EXPECT_FALSE(flash_attention_supports_head_dim(d));
}

// ---- GPU -----------------------------------------------------------------------------------------

bool gpu_ready(std::string* why) {
  if (!flash_attention_available()) {
    *why = "built without CUDA kernels";
    return false;
  }
  if (!torch::cuda::is_available()) {
    *why = "no CUDA GPU";
    return false;
  }
  return true;
}

// Forces SDPA's math backend for the guard's lifetime (restoring the user's choices after).
class MathSdpOnly {
 public:
  MathSdpOnly()
      : flash_(ctx().userEnabledFlashSDP()), mem_(ctx().userEnabledMemEfficientSDP()),
        math_(ctx().userEnabledMathSDP()), cudnn_(ctx().userEnabledCuDNNSDP()) {
    ctx().setSDPUseFlash(false);
    ctx().setSDPUseMemEfficient(false);
    ctx().setSDPUseCuDNN(false);
    ctx().setSDPUseMath(true);
  }
  ~MathSdpOnly() {
    ctx().setSDPUseFlash(flash_);
    ctx().setSDPUseMemEfficient(mem_);
    ctx().setSDPUseCuDNN(cudnn_);
    ctx().setSDPUseMath(math_);
  }
  MathSdpOnly(const MathSdpOnly&) = delete;
  MathSdpOnly& operator=(const MathSdpOnly&) = delete;

 private:
  static at::Context& ctx() { return at::globalContext(); }
  bool flash_, mem_, math_, cudnn_;
};

struct Reference {
  at::Tensor o, lse, dq, dk, dv;
};

// float64 on the CPU for small L; for larger L, SDPA's math backend in fp32 on the GPU (inputs
// upcast from the same 16-bit values, TF32 off) with its autograd for the gradients, and lse
// from logsumexp of the fp32 scores.
Reference reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                    const at::Tensor& dout, bool causal) {
  Reference r;
  if (q.size(2) <= 256) {
    auto f = flash_attention_reference(q, k, v, causal);
    auto g = flash_attention_backward_reference(q, k, v, dout, causal);
    return {f.o, f.lse, g.dq, g.dk, g.dv};
  }
  Tf32Guard no_tf32(false);
  MathSdpOnly math;
  auto q32 = q.to(at::kFloat).requires_grad_(true), k32 = k.to(at::kFloat).requires_grad_(true);
  auto v32 = v.to(at::kFloat).requires_grad_(true);
  auto o = at::scaled_dot_product_attention(q32, k32, v32, {}, 0.0, causal);
  o.backward(dout.to(at::kFloat));
  {
    const int64_t L = q.size(2);
    auto s = at::matmul(q32.detach(), k32.detach().transpose(-2, -1)) /
             std::sqrt(static_cast<double>(q.size(3)));
    if (causal)
      s = s.masked_fill(at::ones({L, L}, s.options().dtype(at::kBool)).triu(1),
                        -std::numeric_limits<float>::infinity());
    r.lse = at::logsumexp(s, -1);
  }
  r.o = o.detach();
  r.dq = q32.grad();
  r.dk = k32.grad();
  r.dv = v32.grad();
  return r;
}

// Relative Frobenius tolerances for 16-bit inputs (the references see the same 16-bit values,
// so only the kernels' own roundings count):
//  o:  rounded to the storage type once (unit roundoff u = 2^-9 bf16, 2^-11 fp16, ~u/√3 in
//      Frobenius norm) plus P rounded to 16 bits before P·V (u again, averaged over the keys):
//      ~1.5e-3 bf16, ~4e-4 fp16 expected; allowed 1e-2 and 3e-3.
//  dq, dk, dv: P and dS rounded to 16 bits before their products, D from the 16-bit o, and the
//      outputs rounded once: ~2–4e-3 bf16, ~1e-3 fp16 expected; allowed 2e-2 and 5e-3.
// Any indexing, masking or tiling mistake moves whole rows or tiles and gives errors of order
// 1e-1 and above, far outside these.
//  lse (fp32): scores are exact products of 16-bit values summed in fp32, exp2/log approximations
//      ~1e-6 relative: allowed 1e-3 absolute (an error in lse is the relative error of the row's
//      sum of exponentials; one missing 64-key tile of a 4,097-key row moves it by ~1e-2).
double tol_o(at::ScalarType t) { return t == at::kBFloat16 ? 1e-2 : 3e-3; }
double tol_grad(at::ScalarType t) { return t == at::kBFloat16 ? 2e-2 : 5e-3; }
constexpr double kTolLse = 1e-3;

// o, lse, dq, dk, dv of 16-bit type t against the reference, each failure naming `what`.
void expect_matches(const at::Tensor& o, const at::Tensor& lse, const at::Tensor& dq,
                    const at::Tensor& dk, const at::Tensor& dv, const Reference& ref,
                    at::ScalarType t, const std::string& what) {
  EXPECT_EQ(check_close(o, ref.o, tol_o(t)), "") << "o, " << what;
  EXPECT_LT(max_abs_error(lse, ref.lse), kTolLse) << "lse, " << what;
  EXPECT_EQ(check_grad(dq, ref.dq, ref.dv, tol_grad(t)), "") << "dq, " << what;
  EXPECT_EQ(check_grad(dk, ref.dk, ref.dv, tol_grad(t)), "") << "dk, " << what;
  EXPECT_EQ(check_grad(dv, ref.dv, ref.dv, tol_grad(t)), "") << "dv, " << what;
}

// dtype, d, L, causal, kernel (forward and backward).
using GpuParam = std::tuple<std::string, int, int, bool, FlashKernel>;

}  // namespace

// How the test names print a kernel choice (found by gtest in FlashKernel's namespace).
void PrintTo(FlashKernel k, std::ostream* os) {
  *os << (k == FlashKernel::kSm90 ? "sm90" : k == FlashKernel::kPortable ? "portable" : "auto");
}

namespace {

// Why the Hopper forward cannot run on this GPU at head dim d, or "" when it can.
std::string sm90_skip_reason(int d) {
  const auto x = at::zeros({1, 1, 8, d}, at::TensorOptions().dtype(at::kBFloat16).device(at::kCUDA));
  return flash_sm90_unsupported(x, x, x);
}

class FlashAttentionGpu : public ::testing::TestWithParam<GpuParam> {
 protected:
  void SetUp() override {
    std::string why;
    if (!gpu_ready(&why)) GTEST_SKIP() << why;
    if (std::get<4>(GetParam()) == FlashKernel::kSm90) {
      why = sm90_skip_reason(std::get<1>(GetParam()));
      if (!why.empty()) GTEST_SKIP() << why;
    }
  }
};

TEST_P(FlashAttentionGpu, ForwardBackwardMatchReference) {
  const auto [dtype_name, d, L, causal, kernel] = GetParam();
  const at::ScalarType dtype = dtype_name == "bf16" ? at::kBFloat16 : at::kHalf;
  // B != H so that a swapped batch/head index shows; fewer heads at the longest L.
  const int64_t B = L > 2000 ? 1 : 2, H = L > 2000 ? 2 : 3;
  at::manual_seed(1000 * d + L + (causal ? 7 : 0));
  const auto opts = at::TensorOptions().dtype(dtype).device(at::kCUDA);
  auto q = at::randn({B, H, L, d}, opts), k = at::randn({B, H, L, d}, opts);
  auto v = at::randn({B, H, L, d}, opts), dout = at::randn({B, H, L, d}, opts);

  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto o = at::full({B, H, L, d}, nan, opts);
  auto lse = at::full({B, H, L}, nan, opts.dtype(at::kFloat));
  flash_attention_forward_out(q, k, v, causal, o, lse, kernel);
  auto dq = at::full({B, H, L, d}, nan, opts), dk = at::full({B, H, L, d}, nan, opts);
  auto dv = at::full({B, H, L, d}, nan, opts);
  flash_attention_backward_out(q, k, v, o, lse, dout, causal, dq, dk, dv, kernel);
  ASSERT_NO_THROW(torch::cuda::synchronize());  // surfaces an asynchronous kernel fault here

  expect_matches(o, lse, dq, dk, dv, reference(q, k, v, dout, causal), dtype, "");

  // The forward has no atomics: a second run is bitwise identical.
  auto o2 = flash_attention_forward(q, k, v, causal, kernel);
  EXPECT_TRUE(at::equal(o2.o, o)) << "forward not deterministic";
  EXPECT_TRUE(at::equal(o2.lse, lse)) << "lse not deterministic";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FlashAttentionGpu,
    ::testing::Combine(::testing::Values("bf16", "fp16"), ::testing::Values(16, 32, 64, 128),
                       ::testing::Values(1, 17, 130, 1000, 4097), ::testing::Bool(),
                       ::testing::Values(FlashKernel::kPortable, FlashKernel::kSm90)),
    [](const ::testing::TestParamInfo<GpuParam>& info) {
      return std::get<0>(info.param) + "_d" + std::to_string(std::get<1>(info.param)) + "_L" +
             std::to_string(std::get<2>(info.param)) + "_" +
             (std::get<3>(info.param) ? "causal" : "noncausal") +
             (std::get<4>(info.param) == FlashKernel::kSm90 ? "_sm90" : "_portable");
    });

// kAuto runs the Hopper forward where it can and the portable one elsewhere; forcing the sm90
// kernel where it cannot run is a clear error, not a wrong answer.
TEST(FlashAttentionDispatch, AutoPicksSm90OnHopperAndForcingItElsewhereThrows) {
  std::string why;
  if (!gpu_ready(&why)) GTEST_SKIP() << why;
  at::manual_seed(11);
  const auto opts = at::TensorOptions().dtype(at::kBFloat16).device(at::kCUDA);
  for (int64_t d : {32, 64}) {
    auto q = at::randn({1, 2, 200, d}, opts), k = at::randn({1, 2, 200, d}, opts);
    auto v = at::randn({1, 2, 200, d}, opts);
    const auto autod = flash_attention_forward(q, k, v, true);
    const std::string sm90_why = sm90_skip_reason(static_cast<int>(d));
    if (sm90_why.empty()) {
      EXPECT_TRUE(at::equal(autod.o, flash_attention_forward(q, k, v, true, FlashKernel::kSm90).o))
          << "d = " << d;
    } else {
      EXPECT_TRUE(
          at::equal(autod.o, flash_attention_forward(q, k, v, true, FlashKernel::kPortable).o))
          << "d = " << d;
      auto expect_sm90_error = [&](const std::function<void()>& fn, const char* what) {
        try {
          fn();
          ADD_FAILURE() << what << " with the sm90 kernel forced did not throw, d = " << d;
        } catch (const c10::Error& e) {
          EXPECT_NE(std::string(e.what()).find("sm90"), std::string::npos) << e.what();
        }
      };
      expect_sm90_error([&] { flash_attention_forward(q, k, v, true, FlashKernel::kSm90); },
                        "forward");
      expect_sm90_error(
          [&] {
            flash_attention_backward(q, k, v, autod.o, autod.lse, q, true, FlashKernel::kSm90);
          },
          "backward");
    }
  }
}

// Random bf16 inputs of shape (B, H, L, d) from `seed` through the Hopper forward and backward,
// against the reference.
void expect_sm90_matches_reference(int64_t B, int64_t H, int64_t L, int64_t d, bool causal,
                                   uint64_t seed, const std::string& what) {
  at::manual_seed(seed);
  const auto opts = at::TensorOptions().dtype(at::kBFloat16).device(at::kCUDA);
  auto q = at::randn({B, H, L, d}, opts), k = at::randn({B, H, L, d}, opts);
  auto v = at::randn({B, H, L, d}, opts), dout = at::randn({B, H, L, d}, opts);
  const auto out = flash_attention_forward(q, k, v, causal, FlashKernel::kSm90);
  const auto g = flash_attention_backward(q, k, v, out.o, out.lse, dout, causal,
                                          FlashKernel::kSm90);
  expect_matches(out.o, out.lse, g.dq, g.dk, g.dv, reference(q, k, v, dout, causal),
                 at::kBFloat16, what);
}

// More work tiles than multiprocessors: the Hopper kernels' blocks each take several tiles (the
// forward's persistent blocks from its work counter, its rings and barriers carried from tile to
// tile), forward and backward against the reference.
TEST(FlashAttentionSm90, BlocksTakeSeveralTiles) {
  std::string why;
  if (!gpu_ready(&why)) GTEST_SKIP() << why;
  for (int d : {64, 128}) {
    why = sm90_skip_reason(d);
    if (!why.empty()) GTEST_SKIP() << why;
    for (bool causal : {true, false})  // 2 · 9 · 16 = 288 query tiles
      expect_sm90_matches_reference(2, 9, 2000, d, causal, d + (causal ? 1 : 0),
                                    "d = " + std::to_string(d) + (causal ? " causal" : " noncausal"));
  }
}

// Heads in several groups (their K and V exceed half the L2 of an H100 or H200): the forward's
// evened groups with its last ones merged, the backward's with a short last group (on an H200:
// 16 heads a group, the last two merged; the backward's 6 a group, the last 4), forward and
// backward against the reference.
TEST(FlashAttentionSm90, HeadsInSeveralGroups) {
  std::string why;
  if (!gpu_ready(&why)) GTEST_SKIP() << why;
  why = sm90_skip_reason(64);
  if (!why.empty()) GTEST_SKIP() << why;
  expect_sm90_matches_reference(2, 32, 4096, 64, true, 11, "64 heads");  // K, V: 64 MB in all
}

// More batch·heads than a grid dimension's 65,535 (both Hopper kernels index one flat grid),
// forward and backward against the reference.
TEST(FlashAttentionSm90, MoreBatchHeadsThanAGridDimension) {
  std::string why;
  if (!gpu_ready(&why)) GTEST_SKIP() << why;
  why = sm90_skip_reason(64);
  if (!why.empty()) GTEST_SKIP() << why;
  expect_sm90_matches_reference(2, 33001, 3, 64, true, 7, "66,002 heads");
}

#ifdef GPTBENCH_WITH_CUDA
// The training step replays attention in a CUDA graph: the Hopper forward and backward captured
// once and replayed on new inputs, twice, against the reference each time (a work counter or
// workspace captured by address and left over from the previous replay would show).
TEST(FlashAttentionSm90, GraphReplaysOnNewInputsMatchTheReference) {
  std::string why;
  if (!gpu_ready(&why)) GTEST_SKIP() << why;
  if (std::getenv("PYTORCH_NO_CUDA_MEMORY_CACHING"))  // as compute-sanitizer runs set it
    GTEST_SKIP() << "graph capture allocates from the caching allocator, which is off";
  why = sm90_skip_reason(64);
  if (!why.empty()) GTEST_SKIP() << why;
  const int64_t B = 2, H = 3, L = 1000, d = 64;
  const auto opts = at::TensorOptions().dtype(at::kBFloat16).device(at::kCUDA);
  auto q = at::randn({B, H, L, d}, opts), k = at::randn({B, H, L, d}, opts);
  auto v = at::randn({B, H, L, d}, opts), dout = at::randn({B, H, L, d}, opts);
  auto step = [&] {
    const auto out = flash_attention_forward(q, k, v, true, FlashKernel::kSm90);
    const auto g = flash_attention_backward(q, k, v, out.o, out.lse, dout, true,
                                            FlashKernel::kSm90);
    return std::vector<at::Tensor>{out.o, out.lse, g.dq, g.dk, g.dv};
  };
  auto side = c10::cuda::getStreamFromPool(false, 0);
  at::cuda::CUDAGraph graph;
  std::vector<at::Tensor> res;
  {
    c10::cuda::CUDAStreamGuard guard(side);
    step();  // warm-up outside the capture (the kernels' one-time attribute calls)
    side.synchronize();
    graph.capture_begin();
    res = step();
    graph.capture_end();
  }
  for (int replay = 0; replay < 2; ++replay) {
    at::manual_seed(100 + replay);
    for (at::Tensor* x : {&q, &k, &v, &dout}) x->copy_(at::randn_like(*x));
    graph.replay();
    torch::cuda::synchronize();
    expect_matches(res[0], res[1], res[2], res[3], res[4], reference(q, k, v, dout, true),
                   at::kBFloat16, "replay " + std::to_string(replay));
  }
}
#endif

class FlashAttentionGpuLayout : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!gpu_ready(&why)) GTEST_SKIP() << why;
  }
};

// GPT-2's layout: q, k, v are strided views of one (B, T, 3C) projection, and the gradient of
// the output arrives through transpose(1, 2).contiguous() as a strided view too. The autograd
// function must give the same input gradient as SDPA's math backend in fp32.
TEST_F(FlashAttentionGpuLayout, AutogradOnGpt2StridedViews) {
  at::manual_seed(5);
  const int64_t B = 2, T = 300, H = 4, hd = 64, C = H * hd;
  const auto opts = at::TensorOptions().dtype(at::kBFloat16).device(at::kCUDA);
  auto x = at::randn({B, T, 3 * C}, opts);
  auto w = at::randn({B, T, C}, opts.dtype(at::kFloat));
  auto run = [&](const at::Tensor& xin, bool ours) {
    auto qkv = xin.split(C, 2);
    auto heads = [&](const at::Tensor& t) { return t.view({B, T, H, hd}).transpose(1, 2); };
    at::Tensor y;
    if (ours) {
      y = flash_attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]), /*causal=*/true);
    } else {
      MathSdpOnly math;
      y = at::scaled_dot_product_attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]), {}, 0.0,
                                           true);
    }
    auto out = y.transpose(1, 2).contiguous().view({B, T, C});
    (out.to(at::kFloat) * w).sum().backward();
    return out;
  };
  auto x_ours = x.detach().clone().requires_grad_(true);
  auto out = run(x_ours, true);
  Tf32Guard no_tf32(false);
  auto x_ref = x.detach().to(at::kFloat).requires_grad_(true);
  auto out_ref = run(x_ref, false);
  EXPECT_EQ(check_close(out, out_ref, 1e-2), "") << "output";
  // The input gradient concatenates dq, dk, dv: the gradient tolerance of bf16 applies.
  EXPECT_EQ(check_close(x_ours.grad(), x_ref.grad(), 2e-2), "") << "dx";
}

// Inputs the kernels cannot read in place (2-byte misaligned, non-unit last stride) are copied;
// results must still be right.
TEST_F(FlashAttentionGpuLayout, MisalignedAndTransposedInputs) {
  at::manual_seed(6);
  const auto opts = at::TensorOptions().dtype(at::kHalf).device(at::kCUDA);
  const int64_t B = 2, H = 3, L = 77, d = 32;
  auto big = at::randn({B, H, L, d + 1}, opts);
  auto q = big.narrow(3, 1, d);                                      // data 2 bytes off
  auto k = at::randn({B, H, d, L}, opts).transpose(2, 3);            // last stride L
  auto v = at::randn({B, H, L, d}, opts);
  auto dout = at::randn({B, H, L, d}, opts);
  auto out = flash_attention_forward(q, k, v, true);
  auto g = flash_attention_backward(q, k, v, out.o, out.lse, dout, true);
  const Reference ref = reference(q, k, v, dout, true);
  EXPECT_EQ(check_close(out.o, ref.o, tol_o(at::kHalf)), "");
  EXPECT_LT(max_abs_error(out.lse, ref.lse), kTolLse);
  EXPECT_EQ(check_grad(g.dq, ref.dq, ref.dv, tol_grad(at::kHalf)), "");
  EXPECT_EQ(check_grad(g.dk, ref.dk, ref.dv, tol_grad(at::kHalf)), "");
  EXPECT_EQ(check_grad(g.dv, ref.dv, ref.dv, tol_grad(at::kHalf)), "");
}

}  // namespace
}  // namespace gptbench

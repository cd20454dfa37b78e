// ops/attention/flash.*'s references and the kernels' algorithm, on the CPU: the float64
// references against the textbook formula and LibTorch autograd, and the CPU emulation of the
// kernels' tiled algorithm (same tile arithmetic, from flash_tiles.h) against the references.
#include "ops/attention/flash.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "fixtures/verify.h"
#include "ops/attention/flash_tiles.h"
#include "tests/ops/attention/flash_test_util.h"

namespace gptbench {
namespace {

using testing_flash::check_grad;

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

}  // namespace
}  // namespace gptbench

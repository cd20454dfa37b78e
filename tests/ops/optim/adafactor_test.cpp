// Adafactor's reference path against an element-by-element float64 implementation written here
// from torch.optim.Adafactor's documented algorithm (Shazeer & Stern 2018, as PyTorch states it).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "ops/optim/adafactor.h"
#include "ops/optim/optim_cost.h"
#include "tests/ops/optim/optim_test_util.h"

namespace gptbench {
namespace {

using namespace testing_optim;

// State and one step for a 1-D (rows = 1, factored = false) or 2-D tensor, in double.
struct RefState {
  std::vector<double> p, row, col, v;
  int64_t rows = 1, cols = 1;
  bool factored = false;
};

RefState ref_init(const at::Tensor& p) {
  RefState s;
  auto d = p.to(at::kDouble).contiguous();
  s.p.assign(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
  s.factored = p.dim() == 2;
  s.rows = s.factored ? p.size(0) : 1;
  s.cols = s.factored ? p.size(1) : p.numel();
  s.row.assign(s.rows, 0.0);
  s.col.assign(s.cols, 0.0);
  s.v.assign(p.numel(), 0.0);
  return s;
}

void ref_step(RefState& s, const at::Tensor& grad, int64_t t, const AdafactorOptions& o) {
  auto gd = grad.to(at::kDouble).contiguous();
  const double* g = gd.data_ptr<double>();
  const int64_t n = static_cast<int64_t>(s.p.size());
  const double eps1 = o.eps1 ? *o.eps1 : std::numeric_limits<float>::epsilon();
  const double one_minus_beta2 = std::pow(static_cast<double>(t), o.beta2_decay);
  const double rho = std::min(o.lr, 1.0 / std::sqrt(static_cast<double>(t)));
  double psq = 0;
  for (double x : s.p) psq += x * x;
  const double alpha = std::max(o.eps2, std::sqrt(psq / n)) * rho;
  for (double& x : s.p) x *= 1 - o.lr * o.weight_decay;
  std::vector<double> var(n);
  if (s.factored) {
    for (int64_t i = 0; i < s.rows; ++i) {
      double acc = 0;
      for (int64_t j = 0; j < s.cols; ++j) acc += g[i * s.cols + j] * g[i * s.cols + j];
      s.row[i] += one_minus_beta2 * (acc / s.cols - s.row[i]);
    }
    for (int64_t j = 0; j < s.cols; ++j) {
      double acc = 0;
      for (int64_t i = 0; i < s.rows; ++i) acc += g[i * s.cols + j] * g[i * s.cols + j];
      s.col[j] += one_minus_beta2 * (acc / s.rows - s.col[j]);
    }
    double rmean = 0;
    for (double r : s.row) rmean += r;
    rmean = std::max(rmean / s.rows, eps1);
    for (int64_t i = 0; i < s.rows; ++i)
      for (int64_t j = 0; j < s.cols; ++j) var[i * s.cols + j] = s.row[i] * s.col[j] / rmean;
  } else {
    for (int64_t k = 0; k < n; ++k) {
      s.v[k] += one_minus_beta2 * (g[k] * g[k] - s.v[k]);
      var[k] = s.v[k];
    }
  }
  std::vector<double> u(n);
  double usq = 0;
  for (int64_t k = 0; k < n; ++k) {
    u[k] = g[k] / std::sqrt(std::max(var[k], eps1 * eps1));
    usq += u[k] * u[k];
  }
  const double denom = std::max(1.0, std::sqrt(usq / n) / o.d);
  for (int64_t k = 0; k < n; ++k) s.p[k] -= alpha / denom * u[k];
}

void expect_matches_reference(const AdafactorOptions& o, double grad_scale, double tol = 1e-6) {
  auto ps = awkward_params(at::kCPU, 9);
  std::vector<RefState> ref;
  for (const auto& p : ps) ref.push_back(ref_init(p));
  Adafactor opt(ps, o, OptimBackend::kReference);
  for (int t = 1; t <= 10; ++t) {
    auto grads = random_grads(ps, 300 + t);
    for (auto& g : grads) g.mul_(grad_scale);
    opt.step(grads);
    for (size_t i = 0; i < ps.size(); ++i) ref_step(ref[i], grads[i], t, o);
  }
  for (size_t i = 0; i < ps.size(); ++i) {
    const auto want = at::tensor(ref[i].p, at::kDouble).view(ps[i].sizes());
    // fp32 against float64: each step's update carries ~1e-7 relative error (sums of squares
    // over ≤ 1,300 terms, rsqrt) and moves p by ≤ ρ·RMS(p) per element (ρ ≤ 1e-2 by default):
    // ≤ 1e-6 after 10 steps; `tol` is larger where ρ is.
    EXPECT_LT(rel_err(ps[i], want), tol) << "tensor " << i;
    if (ps[i].dim() == 2) {
      EXPECT_LT(rel_err(opt.row_var(i).view({-1}), at::tensor(ref[i].row, at::kDouble)), 1e-5) << i;
      EXPECT_LT(rel_err(opt.col_var(i).view({-1}), at::tensor(ref[i].col, at::kDouble)), 1e-5) << i;
    } else {
      EXPECT_LT(rel_err(opt.variance(i).view({-1}), at::tensor(ref[i].v, at::kDouble)), 1e-5) << i;
    }
  }
}

TEST(OptimAdafactor, MatchesReferenceDefaults) {
  SingleThread one_thread;
  expect_matches_reference({}, 1.0);
}

// Large gradients make RMS(u) exceed d, so the update clipping is exercised; weight decay on.
TEST(OptimAdafactor, MatchesReferenceClippingAndDecay) {
  SingleThread one_thread;
  AdafactorOptions o;
  o.weight_decay = 0.05;
  o.d = 1.0;
  o.lr = 0.3;  // ρ_t = min(lr, 1/√t) = 0.3 for all 10 steps (1/√10 = 0.316)
  // Each step moves p by ~30% of its RMS, so the fp32 rounding of the update (~1e-7 of it) is
  // 30× larger relative to p than with the default lr: allow 1e-5 (measured 2.2e-6).
  expect_matches_reference(o, 30.0, 1e-5);
}

// Tiny gradients reach the eps1² floor of the variance estimate.
TEST(OptimAdafactor, MatchesReferenceTinyGradients) {
  SingleThread one_thread;
  expect_matches_reference({}, 1e-9);
}

// Golden values from PyTorch itself: the sum of each parameter after the 10 default steps of
// MatchesReferenceDefaults, as torch.optim.Adafactor(foreach=False) (PyTorch 2.14.1, CPU)
// computes them on the same seeded data (at::manual_seed and torch.manual_seed draw the same
// numbers). Regenerate with:
//   def awkward(seed): torch.manual_seed(seed); return [torch.randn(1), torch.randn(4095),
//     torch.randn(4097), torch.randn(64, 96) * 0.1, torch.randn(33, 17), torch.randn(3, 1030),
//     torch.randn(5001)[1:], torch.randn(768), torch.randn(300, 1300) * 0.02]
//   grads for step t: torch.manual_seed(300 + t); [torch.randn(p.shape) * 0.01 * (i + 1) ...]
// The foreach variant agrees with these to ~1e-7 relative; so must we.
TEST(OptimAdafactor, MatchesTorchOptimAdafactorGolden) {
  SingleThread one_thread;
  const double golden[] = {0.0457594097, -75.6881552, -5.06084121, 0.179688912, -12.9838863,
                           -93.2362252,  10.5863743,  -28.8215008, 1.44660409};
  auto ps = awkward_params(at::kCPU, 9);
  Adafactor opt(ps, {}, OptimBackend::kReference);
  for (int t = 1; t <= 10; ++t) opt.step(random_grads(ps, 300 + t));
  ASSERT_EQ(ps.size(), std::size(golden));
  for (size_t i = 0; i < ps.size(); ++i) {
    const double sum = ps[i].to(at::kDouble).sum().item<double>();
    EXPECT_NEAR(sum, golden[i], 1e-6 * std::abs(golden[i]) + 1e-9) << "tensor " << i;
  }
}

TEST(OptimAdafactor, DefaultsMatchTorch) {
  SingleThread one_thread;
  AdafactorOptions o;
  EXPECT_EQ(o.lr, 1e-2);
  EXPECT_EQ(o.beta2_decay, -0.8);
  EXPECT_FALSE(o.eps1.has_value());
  EXPECT_EQ(o.eps2, 1e-3);
  EXPECT_EQ(o.d, 1.0);
  EXPECT_EQ(o.weight_decay, 0.0);
}

TEST(OptimAdafactor, StateIsFactored) {
  SingleThread one_thread;
  auto ps = awkward_params(at::kCPU);
  Adafactor opt(ps, {}, OptimBackend::kReference);
  int64_t want = 0;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < ps.size(); ++i) {
    shapes.push_back(ps[i].sizes().vec());
    if (ps[i].dim() == 2) {
      want += 4 * (ps[i].size(0) + ps[i].size(1));
      EXPECT_EQ(opt.row_var(i).sizes(), (at::IntArrayRef{ps[i].size(0), 1}));
      EXPECT_EQ(opt.col_var(i).sizes(), (at::IntArrayRef{1, ps[i].size(1)}));
    } else {
      want += 4 * ps[i].numel();
    }
  }
  EXPECT_EQ(opt.state_bytes(), want);
  // A (768, 3072) matrix: 24 B/param plus the factors; a vector: 32 B/param.
  EXPECT_DOUBLE_EQ(optim::adafactor_step_bytes({{768, 3072}}, 4), 24.0 * 768 * 3072 + 24.0 * 3840);
  EXPECT_DOUBLE_EQ(optim::adafactor_step_bytes({{768}}, 4), 32.0 * 768);
  EXPECT_DOUBLE_EQ(optim::adafactor_step_bytes({{768, 3072}}, 2), 18.0 * 768 * 3072 + 24.0 * 3840);
}

// A 3-D parameter is factored over its last two dimensions (torch.optim.Adafactor's rule).
TEST(OptimAdafactor, ThreeDimensionsFactorLastTwo) {
  SingleThread one_thread;
  auto p = at::randn({2, 5, 7});
  Adafactor opt({p}, {}, OptimBackend::kReference);
  opt.step({at::randn({2, 5, 7})});
  EXPECT_EQ(opt.row_var(0).sizes(), (at::IntArrayRef{2, 5, 1}));
  EXPECT_EQ(opt.col_var(0).sizes(), (at::IntArrayRef{2, 1, 7}));
  EXPECT_TRUE(at::isfinite(p).all().item<bool>());
}

}  // namespace
}  // namespace gptbench

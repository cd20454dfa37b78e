// Tests of ops/cross_entropy.*: the float64 reference against LibTorch's cross-entropy and
// autograd, the CPU path, argument errors, and the fused kernels on a GPU (skipped without one)
// against the float64 reference on fresh random logits: odd and padded widths, both load paths
// (16-byte packs and elements), ignored rows, extreme and non-finite values.
#include "ops/cross_entropy.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>
#include <torch/cuda.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "tests/ops/have_gpu.h"

namespace gptbench {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Random logits of spread ~3 (like a trained LM head's) and targets in [0, classes), with
// every `ignore_every`-th row's target (rows k-1, 2k-1, ...) set to ignore_index (-100).
struct Problem {
  at::Tensor logits, targets;
};
Problem make_problem(int64_t rows, int64_t classes, int64_t cols, at::ScalarType dtype,
                     uint64_t seed, int64_t ignore_every = 0) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  Problem p;
  p.logits = (at::randn({rows, cols}, gen, at::TensorOptions().dtype(at::kDouble)) * 3).to(dtype);
  p.targets = at::randint(classes, {rows}, gen, at::TensorOptions().dtype(at::kLong));
  if (ignore_every > 0)
    for (int64_t r = ignore_every - 1; r < rows; r += ignore_every) p.targets[r] = -100;
  return p;
}

// (loss, d loss / d logits) from autograd through `fn`.
template <typename Fn>
std::pair<at::Tensor, at::Tensor> loss_and_grad(const at::Tensor& logits, Fn fn) {
  auto x = logits.detach().clone().set_requires_grad(true);
  auto loss = fn(x);
  loss.backward();
  return {loss.detach(), x.grad()};
}

TEST(CrossEntropyReference, MatchesLibTorchAndAutogradInFloat64) {
  auto p = make_problem(37, 100, 128, at::kDouble, 1, /*ignore_every=*/5);
  auto ref = cross_entropy_reference(p.logits, p.targets, 100);
  auto [loss, grad] = loss_and_grad(p.logits, [&](const at::Tensor& x) {
    return at::cross_entropy_loss(x.narrow(1, 0, 100), p.targets, {}, at::Reduction::Mean, -100);
  });
  EXPECT_NEAR(ref.loss.item<double>(), loss.item<double>(), 1e-12);
  EXPECT_TRUE(at::allclose(ref.grad, grad, 0, 1e-14));
  EXPECT_EQ(ref.grad.narrow(1, 100, 28).abs().max().item<double>(), 0.0) << "padding gradient";
}

TEST(CrossEntropyCpu, FusedFallsBackToLibTorchOnTheCpu) {
  auto p = make_problem(16, 50, 64, at::kFloat, 2, /*ignore_every=*/3);
  auto ref = cross_entropy_reference(p.logits, p.targets, 50);
  auto [loss, grad] = loss_and_grad(p.logits, [&](const at::Tensor& x) {
    return fused_cross_entropy(x, p.targets, 50);
  });
  // fp32 arithmetic in LibTorch's log_softmax over 50 values: ~1e-6 relative.
  EXPECT_NEAR(loss.item<double>(), ref.loss.item<double>(), 1e-5);
  EXPECT_TRUE(at::allclose(grad.to(at::kDouble), ref.grad, 1e-5, 1e-7));
}

TEST(CrossEntropyCpu, BadArgumentsThrowNamingTheProblem) {
  auto x = at::zeros({4, 10});
  auto t = at::zeros({4}, at::kLong);
  auto expect_throw = [](auto fn, const std::string& needle) {
    try {
      fn();
      ADD_FAILURE() << "no exception; expected one mentioning '" << needle << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_throw([&] { fused_cross_entropy(x.unsqueeze(0), t, 10); }, "2-D");
  expect_throw([&] { fused_cross_entropy(x, t.to(at::kInt), 10); }, "int64");
  expect_throw([&] { fused_cross_entropy(x, at::zeros({3}, at::kLong), 10); }, "one entry per");
  expect_throw([&] { fused_cross_entropy(x, t, 11); }, "classes");
  expect_throw([&] { fused_cross_entropy(x, t, 0); }, "classes");
}

// Allowances. Loss: fp32 arithmetic over <= 50,304 terms (per-thread serial sums of <= ~100
// exponentials, then a tree), exp2f within 2 ulp and an argument error of |x|·2^-24: < 3e-6
// relative on the logsumexp of ~11, so 2e-5 absolute + 2e-6 relative. Gradient: the same
// relative error in exp(x - lse) (< 1e-5 for |x - lse| < 40), then one rounding to the output
// dtype (2^-24 fp32, 2^-8 bf16, 2^-11 fp16, relative); fp16 values below 6.1e-5 are subnormal
// with spacing 6e-8, an absolute floor.
double grad_rtol(at::ScalarType t) {
  return 1e-5 + (t == at::kFloat ? 0x1p-24 : t == at::kBFloat16 ? 0x1p-8 : 0x1p-11);
}

void expect_matches_reference(const Problem& p, int64_t classes, const std::string& what) {
  const auto dtype = p.logits.scalar_type();
  auto ref = cross_entropy_reference(p.logits, p.targets, classes);
  auto [loss, grad] = loss_and_grad(p.logits.cuda(), [&](const at::Tensor& x) {
    return fused_cross_entropy(x, p.targets.cuda(), classes);
  });
  const double rl = ref.loss.item<double>();
  EXPECT_NEAR(loss.item<double>(), rl, 2e-5 + 2e-6 * std::abs(rl)) << what;
  ASSERT_EQ(grad.scalar_type(), dtype) << what;
  auto g = grad.to(at::kCPU, at::kDouble);
  const double floor = dtype == at::kHalf ? 6e-8 : 1e-12;
  // At a row's target the gradient is (p - 1)·scale: when p is close to 1 the difference
  // cancels, so its error is relative to the terms (1·scale), not to the result.
  const auto t = p.targets.clamp_min(0).unsqueeze(1);
  const auto counted = p.targets.ne(-100).sum().item<double>();
  auto terms = ref.grad.abs().scatter_add(
      1, t, p.targets.ne(-100).to(at::kDouble).unsqueeze(1) / counted);
  auto excess = (g - ref.grad).abs() - (terms * grad_rtol(dtype) + floor);
  const double worst = excess.max().item<double>();
  if (worst > 0) {
    const int64_t i = excess.flatten().argmax().item<int64_t>();
    ADD_FAILURE() << what << ": gradient element " << i << " = " << g.flatten()[i].item<double>()
                  << ", reference " << ref.grad.flatten()[i].item<double>();
  }
  if (classes < p.logits.size(1)) {
    EXPECT_EQ(g.narrow(1, classes, p.logits.size(1) - classes).abs().max().item<double>(), 0.0)
        << what << ": padding gradient";
  }
}

TEST(CrossEntropyGpu, MatchesFloat64ReferenceAtOddAndPaddedWidths) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU and a build with CUDA kernels";
  struct Shape {
    int64_t rows, classes, cols;
  };
  // 16-byte packs need cols % (16 / element size) == 0: 1024, 4096, 50304 take them (also fp32's
  // 1000-wide rows), the others take element loads; 50257 in 50304 is GPT-2's padded LM head.
  const Shape shapes[] = {{1, 1, 1},       {3, 31, 31},    {5, 1023, 1023}, {9, 1000, 1024},
                          {33, 4096, 4096}, {7, 50257, 50304}, {4, 50257, 50257}};
  uint64_t seed = 100;
  for (auto dtype : {at::kFloat, at::kBFloat16, at::kHalf})
    for (const auto& s : shapes) {
      auto p = make_problem(s.rows, s.classes, s.cols, dtype, ++seed, /*ignore_every=*/4);
      if (s.rows > 1) p.targets[1] = s.classes - 1;  // the last class, next to the padding
      expect_matches_reference(p, s.classes,
                               std::string(c10::toString(dtype)) + " " + std::to_string(s.rows) +
                                   "x" + std::to_string(s.classes) + "/" + std::to_string(s.cols));
    }
}

TEST(CrossEntropyGpu, LargeAndNonFiniteValuesBehaveLikeLibTorch) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU and a build with CUDA kernels";
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    auto p = make_problem(5, 64, 64, at::kDouble, 7);
    p.logits[0][3] = 3e4;                                    // a huge logit: no overflow
    p.logits[1].fill_(-kInf);                                // a row of -inf: NaN
    p.logits[2].narrow(0, 0, 32).fill_(-kInf);               // half -inf: finite
    p.targets[2] = 40;
    p.logits[3][p.targets[3].item<int64_t>()] = -kInf;       // the target at -inf: inf
    p.logits[4].narrow(0, 0, 40).fill_(-kInf);               // a NaN among -inf, finite after:
    p.logits[4][5] = std::nan("");                           // NaN
    auto x = p.logits.to(dtype);
    for (int64_t r = 0; r < 5; ++r) {
      auto row = x.narrow(0, r, 1);
      auto tgt = p.targets.narrow(0, r, 1);
      auto ours = fused_cross_entropy(row.cuda(), tgt.cuda(), 64).item<double>();
      auto theirs = torch_cross_entropy(row, tgt, 64).item<double>();
      if (std::isnan(theirs)) {
        EXPECT_TRUE(std::isnan(ours)) << "row " << r << ": " << ours;
      } else if (std::isinf(theirs)) {
        EXPECT_EQ(ours, theirs) << "row " << r;
      } else {
        EXPECT_NEAR(ours, theirs, 1e-4 * std::max(1.0, std::abs(theirs))) << "row " << r;
      }
    }
  }
}

TEST(CrossEntropyGpu, OutOfRangeTargetGivesNaNNotACrash) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU and a build with CUDA kernels";
  auto p = make_problem(8, 100, 128, at::kBFloat16, 9);
  p.targets[5] = 100;  // a padding column: out of range
  EXPECT_TRUE(std::isnan(fused_cross_entropy(p.logits.cuda(), p.targets.cuda(), 100).item<double>()));
  p.targets[5] = -3;
  EXPECT_TRUE(std::isnan(fused_cross_entropy(p.logits.cuda(), p.targets.cuda(), 100).item<double>()));
}

TEST(CrossEntropyGpu, AllRowsIgnoredGivesNaNAsLibTorch) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU and a build with CUDA kernels";
  auto p = make_problem(3, 10, 16, at::kFloat, 11);
  p.targets.fill_(-100);
  EXPECT_TRUE(std::isnan(torch_cross_entropy(p.logits, p.targets, 10).item<double>()));
  EXPECT_TRUE(std::isnan(fused_cross_entropy(p.logits.cuda(), p.targets.cuda(), 10).item<double>()));
}

}  // namespace
}  // namespace gptbench

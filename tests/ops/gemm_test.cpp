#include "ops/gemm.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "fixtures/dtype.h"
#include "fixtures/verify.h"
#include "model/shapes.h"

namespace gptbench {
namespace {

struct Problem {
  int64_t m, n, k;
  bool ta, tb;
};

// Odd sizes (not multiples of 8 or 16) and every transpose combination.
const Problem kProblems[] = {{64, 96, 32, false, false}, {127, 255, 63, false, true},
                             {33, 17, 129, true, false}, {128, 64, 256, true, true},
                             {1, 1, 1, false, false}};

std::pair<at::Tensor, at::Tensor> operands(const Problem& p, at::TensorOptions opts) {
  auto a = p.ta ? at::randn({p.k, p.m}, opts) : at::randn({p.m, p.k}, opts);
  auto b = p.tb ? at::randn({p.n, p.k}, opts) : at::randn({p.k, p.n}, opts);
  return {a, b};
}

TEST(Gemm, TorchPathMatchesFloat64Reference) {
  for (const auto& p : kProblems) {
    auto [a, b] = operands(p, at::kFloat);
    auto c = at::empty({p.m, p.n}, at::kFloat);
    GemmArgs args{p.ta, p.tb, false};
    gemm_torch(a, b, c, args);
    // fp32 sums of ≤ 256 products: relative error ~1e-7; 1e-5 leaves room, catches any bug.
    EXPECT_EQ(check_close(c, gemm_reference(a, b, args), 1e-5), "") << p.m << "x" << p.n << "x" << p.k;
  }
}

TEST(Gemm, TrainingShapesAreConsistent) {
  auto cfg = model_config("small");
  auto shapes = training_gemms(cfg, 8 * 1024);
  ASSERT_EQ(shapes.size(), 15u);
  EXPECT_EQ(shapes[0].name, "qkv.fwd");
  EXPECT_EQ(shapes[0].m, 8192);
  EXPECT_EQ(shapes[0].n, 2304);
  EXPECT_EQ(shapes[0].k, 768);
  EXPECT_TRUE(shapes[0].trans_b);
  const auto& lm_wgrad = shapes.back();
  EXPECT_EQ(lm_wgrad.name, "lm_head.wgrad");
  EXPECT_EQ(lm_wgrad.m, 50304);
  EXPECT_EQ(lm_wgrad.k, 8192);
  EXPECT_TRUE(lm_wgrad.trans_a);
  EXPECT_EQ(square_gemms(256, 2048).size(), 4u);
}

#ifndef GPTBENCH_WITH_CUDA
TEST(Gemm, CublasLtNeedsCudaBuild) {
  auto a = at::randn({4, 4});
  auto c = at::empty({4, 4});
  EXPECT_THROW(gemm_cublaslt(a, a, c, {}, false), std::runtime_error);
}
#endif

class GemmGpu : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
#ifndef GPTBENCH_WITH_CUDA
    GTEST_SKIP() << "built without CUDA kernels";
#endif
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU";
  }
};

// Tolerances on ‖C − C_ref‖/‖C_ref‖ against torch::matmul in float64 of the same operands:
// fp32 ~1e-6 (1e-5 allowed), tf32 operands rounded to 10 bits (~3e-4, 2e-3 allowed), bf16 and
// fp16 outputs rounded to 8 and 11 bits (1e-2 and 4e-3 allowed).
double tolerance(const std::string& dtype) {
  return dtype == "fp32" ? 1e-5 : dtype == "tf32" ? 2e-3 : dtype == "bf16" ? 1e-2 : 4e-3;
}

TEST_P(GemmGpu, CublasLtMatchesReference) {
  const DtypeSpec spec = dtype_spec(GetParam());
  auto opts = at::TensorOptions().device(at::kCUDA).dtype(spec.type);
  for (bool search : {false, true}) {
    for (const auto& p : kProblems) {
      auto [a, b] = operands(p, opts);
      auto c = at::full({p.m, p.n}, std::numeric_limits<float>::quiet_NaN(), opts);
      GemmArgs args{p.ta, p.tb, spec.tf32};
      gemm_cublaslt(a, b, c, args, search);
      EXPECT_EQ(check_close(c, gemm_reference(a, b, args), tolerance(spec.name)), "")
          << spec.name << " " << p.m << "x" << p.n << "x" << p.k << " ta=" << p.ta
          << " tb=" << p.tb << " search=" << search;
    }
  }
}

TEST_P(GemmGpu, LargeShapeAgreesWithTorchMatmul) {
  const DtypeSpec spec = dtype_spec(GetParam());
  auto opts = at::TensorOptions().device(at::kCUDA).dtype(spec.type);
  // The LM-head weight gradient of a tiny step: dW(V, C) = dYᵀ(V, BT)·X(BT, C).
  Problem p{1024, 256, 2048, true, false};
  auto [a, b] = operands(p, opts);
  auto mine = at::empty({p.m, p.n}, opts), theirs = at::empty({p.m, p.n}, opts);
  GemmArgs args{p.ta, p.tb, spec.tf32};
  gemm_cublaslt(a, b, mine, args, false);
  gemm_torch(a, b, theirs, args);
  EXPECT_EQ(check_close(mine, gemm_reference(a, b, args), tolerance(spec.name)), "");
  EXPECT_EQ(check_close(theirs, gemm_reference(a, b, args), tolerance(spec.name)), "");
}

TEST_P(GemmGpu, AlgorithmChoiceIsCachedPerShape) {
  const DtypeSpec spec = dtype_spec(GetParam());
  auto opts = at::TensorOptions().device(at::kCUDA).dtype(spec.type);
  auto a = at::randn({96, 80}, opts), b = at::randn({80, 112}, opts), c = at::empty({96, 112}, opts);
  GemmArgs args{false, false, spec.tf32};
  const int64_t before = cublaslt_cache_size();
  gemm_cublaslt(a, b, c, args, true);
  EXPECT_EQ(cublaslt_cache_size(), before + 1);
  gemm_cublaslt(a, b, c, args, true);  // same shape: cached
  EXPECT_EQ(cublaslt_cache_size(), before + 1);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GemmGpu, ::testing::Values("fp32", "tf32", "bf16", "fp16"));

TEST(GemmGpuErrors, BadOperandsAreClearErrors) {
#ifndef GPTBENCH_WITH_CUDA
  GTEST_SKIP() << "built without CUDA kernels";
#endif
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU";
  auto f = at::randn({8, 8}, at::kCUDA), h = f.to(at::kHalf), c = at::empty({8, 8}, at::kCUDA);
  EXPECT_THROW(gemm_cublaslt(f, h, c, {}, false), c10::Error);           // mixed dtypes
  auto wrong = at::randn({9, 8}, at::kCUDA);
  EXPECT_THROW(gemm_cublaslt(f, wrong, c, {}, false), c10::Error);       // K mismatch
  EXPECT_THROW(gemm_cublaslt(f.cpu(), f.cpu(), c, {}, false), c10::Error);  // not on CUDA
}

}  // namespace
}  // namespace gptbench

// ops/gemm_carveout: the carveout's bounds, and GEMMs narrowed by it (our cuBLASLt plans and
// LibTorch's cuBLAS) giving the products the full-width GEMMs give, on fresh random data.
#include "ops/gemm_carveout.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "ops/linear_lt.h"
#include "tests/ops/have_gpu.h"

#ifdef GPTBENCH_WITH_CUDA
#include "ops/device/attributes.h"
#endif

namespace gptbench {
namespace {

// A CUDA build needs a device to know its SM count; elsewhere the count is not checked
// against one.
bool can_engage() {
#ifdef GPTBENCH_WITH_CUDA
  return have_gpu();
#else
  return true;
#endif
}

TEST(GemmCarveout, EngageSetsTheCountAndReleaseClearsIt) {
  if (!can_engage()) GTEST_SKIP() << "a CUDA build without a GPU has no SM count";
  EXPECT_EQ(gemm_sm_carveout(), 0);
  engage_gemm_sm_carveout(8);
  EXPECT_EQ(gemm_sm_carveout(), 8);
  engage_gemm_sm_carveout(16);  // engaged again: the new count
  EXPECT_EQ(gemm_sm_carveout(), 16);
  release_gemm_sm_carveout();
  EXPECT_EQ(gemm_sm_carveout(), 0);
}

TEST(GemmCarveout, CountsOutsideTheDeviceAreClearErrors) {
  if (!can_engage()) GTEST_SKIP() << "a CUDA build without a GPU has no SM count";
  EXPECT_THROW(engage_gemm_sm_carveout(0), std::invalid_argument);
  EXPECT_THROW(engage_gemm_sm_carveout(-4), std::invalid_argument);
#ifdef GPTBENCH_WITH_CUDA
  EXPECT_THROW(engage_gemm_sm_carveout(sm_count()), std::invalid_argument);
#endif
  EXPECT_EQ(gemm_sm_carveout(), 0) << "a refused count leaves none engaged";
}

// Narrowed GEMMs may tile or split differently, so their fp32 sums add in another order: the
// bf16 outputs then differ by at most an ulp of bf16 (2^-8 of the value) where a sum rounds
// the other way, and by far less than the product's rms elsewhere.
TEST(GemmCarveoutGpu, NarrowedGemmsGiveTheFullWidthProducts) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or built without CUDA kernels)";
  at::manual_seed(11);
  const auto bf16 = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  const at::Tensor x = at::randn({2048, 1024}, bf16);
  const at::Tensor w = at::randn({3072, 1024}, bf16) * 0.03;
  const at::Tensor b = at::randn({3072}, bf16);
  const at::Tensor full_lt = lt_linear(x, w, b);
  const at::Tensor full_mm = at::mm(x, w.t());
  const int64_t plans = lt_plan_cache_size();

  engage_gemm_sm_carveout(16);
  const at::Tensor narrow_lt = lt_linear(x, w, b);
  const at::Tensor narrow_mm = at::mm(x, w.t());
  const int64_t narrowed_plans = lt_plan_cache_size();
  release_gemm_sm_carveout();
  EXPECT_EQ(narrowed_plans, plans + 1) << "a narrowed plan is made beside the full-width one";
  EXPECT_EQ(lt_plan_cache_size(), narrowed_plans);
  lt_linear(x, w, b);
  EXPECT_EQ(lt_plan_cache_size(), narrowed_plans) << "released: the full-width plan again";

  for (const auto& [full, narrow] : {std::pair{full_lt, narrow_lt}, std::pair{full_mm, narrow_mm}}) {
    const at::Tensor f = full.to(at::kDouble), n = narrow.to(at::kDouble);
    const double rms = f.square().mean().sqrt().item<double>();
    const at::Tensor excess = (n - f).abs() - f.abs() * (1.0 / 256) - 1e-3 * rms;
    EXPECT_LE(excess.max().item<double>(), 0.0);
  }
}

}  // namespace
}  // namespace gptbench

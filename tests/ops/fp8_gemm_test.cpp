// Tests of ops/fp8/gemm.*: why a GEMM cannot run (CPU, argument errors, the scale layouts handed
// to at::_scaled_mm), the float64 reference on the CPU; on a GPU with FP8 tensor cores (skipped
// elsewhere, with the reason) our cuBLASLt call and LibTorch's against the float64 GEMM of the
// dequantized operands for every scaling, including K = 768 (6 blocks of 128: the 128 × 128
// scales' rows padded to 8), that each call reads its own scales, and the plan cache.
#include "ops/fp8/gemm.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "fixtures/device_info.h"
#include "fixtures/verify.h"
#include "tests/ops/have_gpu.h"

namespace gptbench {
namespace {

const Fp8GemmScaling kScalings[] = {Fp8GemmScaling::kTensor, Fp8GemmScaling::kRow, Fp8GemmScaling::kBlock};

struct Operands {
  Fp8Tensor a, b;
};
Operands operands(int64_t m, int64_t n, int64_t k, Fp8GemmScaling s, c10::Device device) {
  const auto opts = at::TensorOptions().device(device).dtype(at::kBFloat16);
  return {quantize_fp8(fp8_test_input(m, k, opts), fp8_a_granularity(s)),
          quantize_fp8(fp8_test_input(n, k, opts), fp8_b_granularity(s))};
}

TEST(Fp8Gemm, CannotRunOnTheCpu) {
  for (Fp8GemmScaling s : kScalings) {
    EXPECT_NE(gemm_fp8_unsupported("cublaslt", s, at::kCPU), "");
    EXPECT_NE(gemm_fp8_unsupported("torch", s, at::kCPU), "");
  }
  EXPECT_NE(gemm_fp8_unsupported("cutlass", Fp8GemmScaling::kTensor, at::kCPU).find("unknown"),
            std::string::npos);
  Operands o = operands(32, 16, 128, Fp8GemmScaling::kTensor, at::kCPU);
  at::Tensor c = at::empty({32, 16}, at::kBFloat16);
  EXPECT_THROW(gemm_fp8_cublaslt(o.a, o.b, Fp8GemmScaling::kTensor, c), std::invalid_argument);
}

TEST(Fp8Gemm, RejectsOperandsThatDoNotFit) {
  Operands o = operands(32, 16, 128, Fp8GemmScaling::kTensor, at::kCPU);
  at::Tensor c = at::empty({32, 16}, at::kBFloat16);
  // Granularities of another scaling.
  EXPECT_THROW(gemm_fp8_cublaslt(o.a, o.b, Fp8GemmScaling::kRow, c), std::invalid_argument);
  // Output of the wrong shape or dtype.
  at::Tensor wrong = at::empty({16, 32}, at::kBFloat16);
  EXPECT_THROW(gemm_fp8_cublaslt(o.a, o.b, Fp8GemmScaling::kTensor, wrong), std::invalid_argument);
  at::Tensor f32 = at::empty({32, 16}, at::kFloat);
  EXPECT_THROW(gemm_fp8_cublaslt(o.a, o.b, Fp8GemmScaling::kTensor, f32), std::invalid_argument);
  // K not shared, K not a multiple of 16.
  Operands other = operands(32, 16, 256, Fp8GemmScaling::kTensor, at::kCPU);
  EXPECT_THROW(gemm_fp8_cublaslt(o.a, other.b, Fp8GemmScaling::kTensor, c), std::invalid_argument);
  Operands odd = operands(32, 16, 24, Fp8GemmScaling::kTensor, at::kCPU);
  EXPECT_THROW(gemm_fp8_cublaslt(odd.a, odd.b, Fp8GemmScaling::kTensor, c), std::invalid_argument);
}

// The layouts LibTorch's checks ask for, as views of ours: row-wise (M, 1) and (1, N); 1×128
// scales (M, K/128) with M fastest; 128×128 scales whose transpose is row-major (N/128, K/128).
TEST(Fp8Gemm, ScaledMmArgumentLayouts) {
  const int64_t m = 256, n = 384, k = 768;
  Operands row = operands(m, n, k, Fp8GemmScaling::kRow, at::kCPU);
  Fp8ScaledMmArgs r = scaled_mm_args(row.a, row.b, Fp8GemmScaling::kRow);
  EXPECT_EQ(r.scale_a.sizes(), (std::vector<int64_t>{m, 1}));
  EXPECT_EQ(r.scale_b.sizes(), (std::vector<int64_t>{1, n}));
  EXPECT_EQ(r.mat2.sizes(), (std::vector<int64_t>{k, n}));
  EXPECT_EQ(r.mat2.stride(0), 1);  // column-major: K-major storage of b
  Operands blk = operands(m, n, k, Fp8GemmScaling::kBlock, at::kCPU);
  Fp8ScaledMmArgs b = scaled_mm_args(blk.a, blk.b, Fp8GemmScaling::kBlock);
  EXPECT_EQ(b.scale_a.sizes(), (std::vector<int64_t>{m, 6}));
  EXPECT_EQ(b.scale_a.strides(), (std::vector<int64_t>{1, m}));
  EXPECT_EQ(b.scale_b.sizes(), (std::vector<int64_t>{6, 3}));
  EXPECT_TRUE(b.scale_b.t().is_contiguous());
  // Same values as ours, without the padding of 6 blocks to 8.
  EXPECT_TRUE(at::equal(b.scale_b.t(), blk.b.scale_inv.narrow(1, 0, 6)));
}

// The reference's selected rows are those rows of the full float64 product.
TEST(Fp8Gemm, ReferenceRowsAreRowsOfTheProduct) {
  Operands o = operands(300, 40, 256, Fp8GemmScaling::kBlock, at::kCPU);
  const at::Tensor full = at::matmul(dequantize_fp8(o.a), dequantize_fp8(o.b).t());
  const at::Tensor rows = at::tensor({0, 129, 299}, at::kLong);
  const at::Tensor ref = gemm_fp8_reference(o.a, o.b, rows);
  EXPECT_EQ(ref.scalar_type(), at::kDouble);
  EXPECT_TRUE(at::allclose(ref, full.index_select(0, rows), 1e-12, 1e-12));
}

// The datasheet dense FP8 peaks the rows' mfu_datasheet_pct divides by: twice bf16's on every
// listed GPU with FP8 tensor cores (within the datasheets' rounding, ≤ 2%: H100 SXM 1,979 vs
// 2 × 989, L40S 733 vs 2 × 362), none for the A100 (fixtures/datasheet_peaks.inc).
TEST(Fp8Datasheet, DenseE4m3PeakByGpuName) {
  EXPECT_DOUBLE_EQ(datasheet_e4m3_flops("NVIDIA H100 80GB HBM3"), 1979e12);
  EXPECT_DOUBLE_EQ(datasheet_e4m3_flops("NVIDIA H200"), 1979e12);
  EXPECT_DOUBLE_EQ(datasheet_e4m3_flops("NVIDIA H100 PCIe"), 1513e12);
  EXPECT_DOUBLE_EQ(datasheet_e4m3_flops("NVIDIA H100 NVL"), 1671e12);
  EXPECT_EQ(datasheet_e4m3_flops("NVIDIA A100-SXM4-80GB"), 0);
  for (const char* gpu : {"NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA L40S", "NVIDIA L4", "NVIDIA B200"})
    EXPECT_NEAR(datasheet_e4m3_flops(gpu), 2 * datasheet_bf16_flops(gpu), 0.02 * datasheet_e4m3_flops(gpu)) << gpu;
  // The FP8 rows leave the bf16 lookup as it was.
  EXPECT_DOUBLE_EQ(datasheet_bf16_flops("NVIDIA H100 80GB HBM3"), 989e12);
}

class Fp8GemmGpu : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or built without CUDA kernels)";
  }
  void run(const Operands& o, Fp8GemmScaling s, at::Tensor& c) {
    if (GetParam() == "torch")
      gemm_fp8_torch(scaled_mm_args(o.a, o.b, s), c);
    else
      gemm_fp8_cublaslt(o.a, o.b, s, c, {},
                        GetParam() == "cublaslt_search" ? LtAlgoChoice::kSearch : LtAlgoChoice::kHeuristic);
  }
};

// Relative Frobenius error against the float64 product of the dequantized operands: C's
// rounding to bf16 (≈ 1.1e-3 RMS) plus fp32 accumulation; 5e-3 as bench/gemm_fp8.cpp.
TEST_P(Fp8GemmGpu, MatchesFloat64Reference) {
  at::manual_seed(4);
  struct Problem {
    int64_t m, n, k;
  };
  for (Fp8GemmScaling s : kScalings) {
    if (auto why = gemm_fp8_unsupported(GetParam(), s, at::Device(at::kCUDA, 0)); !why.empty()) {
      std::printf("[ skipped  ] %s scaling: %s\n", fp8_gemm_scaling_name(s), why.c_str());
      continue;
    }
    for (Problem p : {Problem{256, 384, 512}, Problem{128, 256, 768}, Problem{384, 128, 1024},
                      Problem{1024, 2304, 768}}) {
      Operands o = operands(p.m, p.n, p.k, s, at::kCUDA);
      at::Tensor c = at::full({p.m, p.n}, std::nan(""), at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16));
      run(o, s, c);
      const at::Tensor all = at::arange(p.m, at::TensorOptions().device(at::kCUDA).dtype(at::kLong));
      EXPECT_EQ(check_close(c, gemm_fp8_reference(o.a, o.b, all), 5e-3), "")
          << GetParam() << " " << fp8_gemm_scaling_name(s) << " " << p.m << "x" << p.n << "x" << p.k;
    }
  }
}

// Each call multiplies by the scales of the operands it is given, not those of the first call of
// the same shape (cuBLASLt's descriptors are cached per shape).
TEST_P(Fp8GemmGpu, EachCallReadsItsOwnScales) {
  for (Fp8GemmScaling s : kScalings) {
    if (!gemm_fp8_unsupported(GetParam(), s, at::Device(at::kCUDA, 0)).empty()) continue;
    Operands o = operands(256, 256, 512, s, at::kCUDA);
    const auto opts = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
    at::Tensor c1 = at::empty({256, 256}, opts), c2 = at::empty({256, 256}, opts);
    run(o, s, c1);
    Operands doubled = o;
    doubled.a.scale_inv = o.a.scale_inv * 2;
    run(doubled, s, c2);
    // Doubling is exact; 1e-3 allows another algorithm's rounding, stale scales are off by 0.5.
    EXPECT_EQ(check_close(c2, c1 * 2, 1e-3), "") << GetParam() << " " << fp8_gemm_scaling_name(s);
  }
}

INSTANTIATE_TEST_SUITE_P(Impls, Fp8GemmGpu, ::testing::Values("cublaslt", "cublaslt_search", "torch"));

// The bias epilogue: C = Â·B̂ᵀ + bias, the bias added in fp32 before C's one rounding, so the
// same 5e-3 against the float64 product plus the (bf16) bias; a bias read along the wrong
// dimension or not added is off by order 1 (bias values N(0, 1) beside C's of order 1). Per-tensor
// scales (what the FP8 linear layer runs), with a plan of its own beside the plain GEMM of the
// same shape. A bias that does not fit is an invalid_argument.
TEST(Fp8GemmGpuBias, AddsTheBiasToEveryRow) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or built without CUDA kernels)";
  at::manual_seed(8);
  const auto bf = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  for (Fp8GemmScaling s : {Fp8GemmScaling::kTensor}) {
    if (auto why = gemm_fp8_unsupported("cublaslt", s, at::Device(at::kCUDA, 0)); !why.empty()) {
      std::printf("[ skipped  ] %s scaling: %s\n", fp8_gemm_scaling_name(s), why.c_str());
      continue;
    }
    Operands o = operands(512, 768, 768, s, at::kCUDA);
    const at::Tensor bias = at::randn({768}, bf);
    at::Tensor plain = at::empty({512, 768}, bf), c = at::full({512, 768}, std::nan(""), bf);
    gemm_fp8_cublaslt(o.a, o.b, s, plain);
    gemm_fp8_cublaslt(o.a, o.b, s, c, bias);
    const at::Tensor all = at::arange(512, bf.dtype(at::kLong));
    const at::Tensor ref = gemm_fp8_reference(o.a, o.b, all) + bias.to(at::kDouble);
    EXPECT_EQ(check_close(c, ref, 5e-3), "") << fp8_gemm_scaling_name(s);
    EXPECT_EQ(check_close(plain, gemm_fp8_reference(o.a, o.b, all), 5e-3), "") << fp8_gemm_scaling_name(s);
    EXPECT_THROW(gemm_fp8_cublaslt(o.a, o.b, s, c, bias.narrow(0, 0, 512)), std::invalid_argument);
    EXPECT_THROW(gemm_fp8_cublaslt(o.a, o.b, s, c, bias.to(at::kFloat)), std::invalid_argument);
  }
}

TEST(Fp8GemmGpuCache, OnePlanPerShapeAndScaling) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or built without CUDA kernels)";
  if (auto why = gemm_fp8_unsupported("cublaslt", Fp8GemmScaling::kTensor, at::Device(at::kCUDA, 0));
      !why.empty())
    GTEST_SKIP() << why;
  Operands o = operands(128, 128, 256, Fp8GemmScaling::kTensor, at::kCUDA);
  at::Tensor c = at::empty({128, 128}, at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16));
  gemm_fp8_cublaslt(o.a, o.b, Fp8GemmScaling::kTensor, c);
  const int64_t before = gemm_fp8_cache_size();
  gemm_fp8_cublaslt(o.a, o.b, Fp8GemmScaling::kTensor, c);
  EXPECT_EQ(gemm_fp8_cache_size(), before);
  Operands other = operands(128, 256, 256, Fp8GemmScaling::kTensor, at::kCUDA);
  at::Tensor c2 = at::empty({128, 256}, c.options());
  gemm_fp8_cublaslt(other.a, other.b, Fp8GemmScaling::kTensor, c2);
  EXPECT_EQ(gemm_fp8_cache_size(), before + 1);
}

}  // namespace
}  // namespace gptbench

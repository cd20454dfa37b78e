// Tests of ops/column_sum.*: the kernels on a GPU (skipped without one) against float64 sums of
// fresh random matrices — bf16 and fp32, row counts that do not divide into the parts, column
// counts below, at and above one 256-column tile — their determinism, the LibTorch fallback for
// what they do not take, and bad input.
#include "ops/column_sum.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "tests/ops/have_gpu.h"

namespace gptbench {
namespace {

at::Tensor random_matrix(int64_t rows, int64_t cols, at::ScalarType dtype, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randn({rows, cols}, gen, at::TensorOptions().dtype(at::kDouble)).to(dtype);
}

// "" when every column sum is within n·2^-24·Σ|x| of the float64 sum of the same (rounded)
// values: the worst-case error of any order of n fp32 additions (unit roundoff 2^-24), n the
// row count; no tighter bound holds for every order, and the kernel's order differs from
// LibTorch's.
std::string check_sums(const at::Tensor& got, const at::Tensor& x) {
  const auto xd = x.to(at::kCPU, at::kDouble);
  const auto ref = xd.sum(0), bound = xd.abs().sum(0) * (static_cast<double>(x.size(0)) * 0x1p-24);
  const auto err = (got.to(at::kCPU, at::kDouble) - ref).abs() - bound;
  const int64_t worst = err.argmax().item<int64_t>();
  if (got.scalar_type() != at::kFloat) return "result is not fp32";
  if (!(err[worst].item<double>() <= 0))
    return "column " + std::to_string(worst) + ": " + std::to_string(got[worst].item<double>()) +
           " vs " + std::to_string(ref[worst].item<double>());
  return "";
}

TEST(ColumnSum, CpuIsLibTorchsSum) {
  const auto x = random_matrix(37, 24, at::kFloat, 1);
  EXPECT_FALSE(column_sum_uses_kernel(x));
  EXPECT_TRUE(at::equal(column_sum(x), x.sum(0)));
  EXPECT_EQ(check_sums(column_sum(x.to(at::kBFloat16)), x.to(at::kBFloat16)), "");
}

TEST(ColumnSum, RejectsWhatIsNotAMatrix) {
  EXPECT_THROW(column_sum(at::randn({4})), std::invalid_argument);
  EXPECT_THROW(column_sum(at::randn({2, 3, 4})), std::invalid_argument);
  EXPECT_THROW(column_sum(at::Tensor()), std::invalid_argument);
}

TEST(ColumnSumGpu, KernelMatchesFloat64AcrossShapes) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU";
  struct Shape {
    int64_t rows, cols;
  };
  // GPT-2 medium's c_attn gradient (16,384 × 3,072), one row, a part boundary inside the rows,
  // 8 columns (a partial tile), 1,032 (4 tiles and 8 columns).
  for (const Shape s : {Shape{16384, 3072}, Shape{1, 64}, Shape{1001, 8}, Shape{4099, 1032}}) {
    for (auto dtype : {at::kBFloat16, at::kFloat}) {
      SCOPED_TRACE(std::to_string(s.rows) + " x " + std::to_string(s.cols) + " " + at::toString(dtype));
      const auto x = random_matrix(s.rows, s.cols, dtype, s.rows + s.cols).to(at::kCUDA);
      ASSERT_TRUE(column_sum_uses_kernel(x));
      const auto got = column_sum(x);
      EXPECT_EQ(check_sums(got, x), "");
      EXPECT_TRUE(at::equal(got, column_sum(x))) << "not deterministic";
    }
  }
}

TEST(ColumnSumGpu, FallsBackForWhatTheKernelDoesNotTake) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU";
  const auto base = random_matrix(64, 72, at::kBFloat16, 7).to(at::kCUDA);
  const at::Tensor cases[] = {base.narrow(1, 0, 60),                  // not contiguous, 60 columns
                              base.narrow(1, 0, 60).contiguous(),     // 60 % 8 != 0
                              base.to(at::kHalf),                     // fp16
                              base.flatten().narrow(0, 4, 63 * 72).view({63, 72})};  // 8-byte offset
  for (const auto& x : cases) {
    EXPECT_FALSE(column_sum_uses_kernel(x));
    EXPECT_EQ(check_sums(column_sum(x), x), "");
  }
}

// d_pre = bf16(dh · gelu_tanh'(pre)): within bf16's rounding (2^-8 relative) of the float64
// derivative, plus 2^-12 of |dh| for tanhf's error inside the derivative; its column sums are
// the fp32 sums of the d_pre written (the bound of check_sums).
TEST(ColumnSumGpu, GeluBackwardAndItsSumInOnePass) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU";
  for (int64_t rows : {1, 4099}) {
    SCOPED_TRACE(std::to_string(rows) + " rows");
    const auto dh = random_matrix(rows, 1032, at::kBFloat16, 11).to(at::kCUDA);
    const auto pre = (random_matrix(rows, 1032, at::kDouble, 12) * 3).to(at::kBFloat16).to(at::kCUDA);
    auto [d_pre, sums] = gelu_backward_column_sum(dh, pre);
    ASSERT_EQ(d_pre.scalar_type(), at::kBFloat16);
    const auto ref = at::gelu_backward(dh.to(at::kCPU, at::kDouble), pre.to(at::kCPU, at::kDouble), "tanh");
    const auto err = (d_pre.to(at::kCPU, at::kDouble) - ref).abs() - ref.abs() * 0x1p-8 -
                     dh.to(at::kCPU, at::kDouble).abs() * 0x1p-12;
    EXPECT_LE(err.max().item<double>(), 0.0) << "d_pre";
    EXPECT_EQ(check_sums(sums, d_pre), "");
  }
  // With a bias: GELU's input is bf16(pre + bias), formed in the kernel as LibTorch's bf16 add
  // forms it; the same bounds around the float64 derivative at those bf16 values.
  {
    const auto dh = random_matrix(515, 1032, at::kBFloat16, 13).to(at::kCUDA);
    const auto pre = (random_matrix(515, 1032, at::kDouble, 14) * 3).to(at::kBFloat16).to(at::kCUDA);
    const auto bias = random_matrix(1, 1032, at::kBFloat16, 15).reshape({1032}).to(at::kCUDA);
    auto [d_pre, sums] = gelu_backward_column_sum(dh, pre, bias);
    const auto x = (pre + bias).to(at::kCPU, at::kDouble);  // bf16 add, then exact widening
    const auto ref = at::gelu_backward(dh.to(at::kCPU, at::kDouble), x, "tanh");
    const auto err = (d_pre.to(at::kCPU, at::kDouble) - ref).abs() - ref.abs() * 0x1p-8 -
                     dh.to(at::kCPU, at::kDouble).abs() * 0x1p-12;
    EXPECT_LE(err.max().item<double>(), 0.0) << "d_pre with a bias";
    EXPECT_EQ(check_sums(sums, d_pre), "");
  }
  const auto cpu = random_matrix(16, 8, at::kBFloat16, 3);
  auto [d_cpu, s_cpu] = gelu_backward_column_sum(cpu, cpu);  // the LibTorch composition
  EXPECT_TRUE(at::equal(d_cpu, at::gelu_backward(cpu, cpu, "tanh")));
  EXPECT_THROW(gelu_backward_column_sum(cpu, cpu.narrow(0, 0, 8)), std::invalid_argument);
}

}  // namespace
}  // namespace gptbench

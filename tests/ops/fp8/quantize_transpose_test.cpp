// Tests of ops/fp8/quantize_transpose.*: the CPU reference against hand-computed e5m2 values,
// round-to-nearest-even, zero tensors, quantize_fp8's per-tensor e4m3 scaling and a plain
// LibTorch quantize-then-transpose, bit for bit, for both formats; the LibTorch composition
// against the reference; on a GPU (skipped without one) our kernels against the reference bit
// for bit, on shapes with partial tiles in both dimensions. Exactness is the tolerance: every
// implementation does the same correctly rounded fp32 operations.
#include "ops/fp8/quantize_transpose.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ops/fp8/quantize.h"
#include "tests/ops/have_gpu.h"

namespace gptbench {
namespace {

const Fp8Format kFormats[] = {Fp8Format::kE4m3, Fp8Format::kE5m2};
const Fp8Copies kCopies[] = {Fp8Copies::kPlain, Fp8Copies::kTransposed, Fp8Copies::kBoth};

// "" when a and b hold the same scales and the same FP8 bytes in the copies both have.
std::string bit_diff(const Fp8PerTensor& a, const Fp8PerTensor& b) {
  if (a.format != b.format) return "formats differ";
  for (auto [x, y] : {std::pair{&a.scale, &b.scale}, std::pair{&a.scale_inv, &b.scale_inv}})
    if (!at::equal(x->to(at::kCPU), y->to(at::kCPU))) return "scales differ";
  for (auto [x, y] : {std::pair{&a.data, &b.data}, std::pair{&a.data_t, &b.data_t}}) {
    if (x->defined() != y->defined()) return "copies differ";
    if (!x->defined()) continue;
    if (x->sizes() != y->sizes()) return "shapes " + c10::str(x->sizes()) + " vs " + c10::str(y->sizes());
    const int64_t n = (x->view(at::kByte).to(at::kCPU) != y->view(at::kByte).to(at::kCPU)).sum().item<int64_t>();
    if (n > 0) return std::to_string(n) + " values differ";
  }
  return "";
}

std::vector<float> values(const at::Tensor& q) {
  const at::Tensor f = q.to(at::kFloat).contiguous();
  return std::vector<float>(f.data_ptr<float>(), f.data_ptr<float>() + f.numel());
}

TEST(Fp8QuantizeTranspose, ReferenceMatchesHandComputedE5m2Values) {
  // amax 4: scale 57344 / 4 = 14336 = 1.75·2¹³; every product is an e5m2 value.
  const at::Tensor x = at::tensor({1.f, -2.f, 0.5f, 4.f}).reshape({2, 2});
  const Fp8PerTensor q = quantize_per_tensor_fp8_reference(x, Fp8Format::kE5m2, Fp8Copies::kBoth);
  EXPECT_EQ(q.data.scalar_type(), at::kFloat8_e5m2);
  EXPECT_EQ(q.scale.item<float>(), 14336.f);
  EXPECT_EQ(q.scale_inv.item<float>(), 1.f / 14336.f);
  EXPECT_EQ(values(q.data), (std::vector<float>{14336.f, -28672.f, 7168.f, 57344.f}));
  EXPECT_EQ(values(q.data_t), (std::vector<float>{14336.f, 7168.f, -28672.f, 57344.f}));
}

TEST(Fp8QuantizeTranspose, E5m2RoundsToNearestEven) {
  // amax 57344 (scale 1): in [1, 2) e5m2 steps by 0.25; 1.125 ties between 1 and 1.25 → 1 (even
  // mantissa), 1.375 between 1.25 and 1.5 → 1.5; 1.3 → 1.25.
  const at::Tensor x = at::tensor({57344.f, 1.125f, 1.375f, 1.3f}).reshape({1, 4});
  const Fp8PerTensor q = quantize_per_tensor_fp8_reference(x, Fp8Format::kE5m2, Fp8Copies::kPlain);
  EXPECT_EQ(q.scale.item<float>(), 1.f);
  EXPECT_EQ(values(q.data), (std::vector<float>{57344.f, 1.f, 1.5f, 1.25f}));
}

TEST(Fp8QuantizeTranspose, ScaleRuleOfEachFormat) {
  for (float amax : {1e-3f, 0.37f, 1.f, 3.5f, 448.f, 1e5f}) {
    EXPECT_EQ(fp8_scale_from_amax(amax, Fp8Format::kE4m3), fp8_scale_from_amax(amax)) << amax;
    EXPECT_EQ(fp8_scale_from_amax(amax, Fp8Format::kE5m2), 57344.f / amax) << amax;
  }
  for (Fp8Format f : kFormats) {
    EXPECT_EQ(fp8_scale_from_amax(0.f, f), 1.f);
    EXPECT_EQ(fp8_scale_from_amax(INFINITY, f), 1.f);
    EXPECT_EQ(fp8_scale_from_amax(1e-38f, f), FLT_MAX);
  }
}

// For e4m3 the per-tensor path is quantize_fp8's kTensor scaling: the same scale and bytes.
TEST(Fp8QuantizeTranspose, E4m3IsQuantizeFp8PerTensor) {
  at::manual_seed(1);
  const at::Tensor x = fp8_test_input(72, 264, at::TensorOptions().dtype(at::kBFloat16));
  const Fp8PerTensor q = quantize_per_tensor_fp8_reference(x, Fp8Format::kE4m3, Fp8Copies::kPlain);
  const Fp8Tensor ref = quantize_fp8_reference(x, Fp8Granularity::kTensor);
  EXPECT_TRUE(at::equal(q.scale_inv, ref.scale_inv));
  EXPECT_TRUE(at::equal(q.data.view(at::kByte), ref.data.view(at::kByte)));
}

// The reference against LibTorch written out plainly: amax, max / amax, multiply, clamp, cast,
// then transpose and copy. Shapes of every remainder, including ones our kernels do not take.
TEST(Fp8QuantizeTranspose, ReferenceMatchesTorchQuantizeThenTranspose) {
  at::manual_seed(2);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{24, 40}, {200, 392}, {1, 8}, {13, 5}, {130, 264}})
    for (Fp8Format f : kFormats) {
      const at::Tensor x = fp8_test_input(rows, cols, at::TensorOptions().dtype(at::kBFloat16));
      const float max = f == Fp8Format::kE4m3 ? 448.f : 57344.f;
      const at::Tensor xf = x.to(at::kFloat);
      const at::Tensor scale = at::full({1, 1}, max) / xf.abs().max();
      const at::Tensor q = (xf * scale).clamp(-max, max).to(f == Fp8Format::kE4m3 ? at::kFloat8_e4m3fn : at::kFloat8_e5m2);
      const Fp8PerTensor ref = quantize_per_tensor_fp8_reference(x, f, Fp8Copies::kBoth);
      const std::string where = std::to_string(rows) + "x" + std::to_string(cols) + " " + fp8_format_name(f);
      EXPECT_TRUE(at::equal(ref.scale, scale)) << where;
      EXPECT_TRUE(at::equal(ref.data.view(at::kByte), q.view(at::kByte))) << where;
      EXPECT_TRUE(at::equal(ref.data_t.view(at::kByte), q.t().contiguous().view(at::kByte))) << where;
      EXPECT_EQ(bit_diff(quantize_per_tensor_fp8_torch(x, f, Fp8Copies::kBoth), ref), "") << "torch " << where;
      // CPU tensors take the reference.
      EXPECT_EQ(bit_diff(quantize_per_tensor_fp8(x, f, Fp8Copies::kBoth), ref), "") << "ours " << where;
    }
}

TEST(Fp8QuantizeTranspose, WritesTheCopiesAskedFor) {
  const at::Tensor x = at::randn({16, 24}).to(at::kBFloat16);
  for (Fp8Copies c : kCopies) {
    const Fp8PerTensor q = quantize_per_tensor_fp8_reference(x, Fp8Format::kE4m3, c);
    EXPECT_EQ(q.data.defined(), c != Fp8Copies::kTransposed);
    EXPECT_EQ(q.data_t.defined(), c != Fp8Copies::kPlain);
    if (q.data_t.defined()) {
      EXPECT_EQ(q.data_t.sizes(), (std::vector<int64_t>{24, 16}));
    }
  }
}

TEST(Fp8QuantizeTranspose, ZeroTensorStaysZeroWithUnitScale) {
  const Fp8PerTensor q = quantize_per_tensor_fp8_reference(at::zeros({8, 16}), Fp8Format::kE5m2, Fp8Copies::kBoth);
  EXPECT_EQ(q.scale.item<float>(), 1.f);
  EXPECT_EQ(q.data_t.to(at::kFloat).abs().sum().item<float>(), 0.f);
}

TEST(Fp8QuantizeTranspose, DequantizesToDataTimesScaleInv) {
  // amax 3.5: scale 57344 / 3.5 = 2¹⁴, so scale_inv is exact and so is every value here.
  const at::Tensor x = at::tensor({0.875f, -1.75f, 0.4375f, 3.5f}).reshape({2, 2});
  const Fp8PerTensor q = quantize_per_tensor_fp8_reference(x, Fp8Format::kE5m2, Fp8Copies::kPlain);
  const at::Tensor d = dequantize_per_tensor_fp8(q);
  EXPECT_EQ(d.scalar_type(), at::kDouble);
  EXPECT_EQ(q.scale.item<float>(), 16384.f);
  EXPECT_TRUE(at::equal(d, x.to(at::kDouble)));
}

TEST(Fp8QuantizeTranspose, RejectsBadInput) {
  EXPECT_THROW(quantize_per_tensor_fp8_reference(at::ones({4}), Fp8Format::kE4m3, Fp8Copies::kBoth),
               std::invalid_argument);
  Fp8PerTensor no_scale;
  EXPECT_THROW(quantize_transpose_fp8_reference(at::ones({4, 4}), no_scale, Fp8Copies::kBoth), std::invalid_argument);
  EXPECT_EQ(quantize_transpose_fp8_unsupported(at::ones({4, 12})), "");  // the CPU takes any shape
}

// Our kernels against the CPU reference, bit for bit: rows not a multiple of a block's 256 and
// columns not of its 64, a single 8 × 8 block, GPT-2 small's shapes (many partial maxima in the
// amax pass), every set of copies, and an all-zero tensor.
TEST(Fp8QuantizeTransposeGpu, KernelsMatchReference) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or built without CUDA kernels)";
  at::manual_seed(3);
  const auto opts = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{8, 8}, {24, 40}, {264, 200}, {1000, 1032},
                            {8192, 768}, {768, 3072}})
    for (Fp8Format f : kFormats)
      for (Fp8Copies c : kCopies) {
        const at::Tensor x = fp8_test_input(rows, cols, opts);
        const Fp8PerTensor q = quantize_per_tensor_fp8(x, f, c);
        EXPECT_TRUE(q.scale.is_cuda());
        EXPECT_EQ(bit_diff(q, quantize_per_tensor_fp8_reference(x, f, c)), "")
            << rows << "x" << cols << " " << fp8_format_name(f) << " copies " << static_cast<int>(c);
      }
  for (Fp8Format f : kFormats) {
    const at::Tensor zeros = at::zeros({256, 512}, opts);
    EXPECT_EQ(bit_diff(quantize_per_tensor_fp8(zeros, f, Fp8Copies::kBoth),
                       quantize_per_tensor_fp8_reference(zeros, f, Fp8Copies::kBoth)), "");
  }
}

// The cast takes the scale it is given (the scale of another tensor, as a recipe with delayed
// scaling would): values past the format's range saturate.
TEST(Fp8QuantizeTransposeGpu, CastUsesTheGivenScale) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or built without CUDA kernels)";
  const auto opts = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  const at::Tensor x = fp8_test_input(64, 128, opts);
  Fp8PerTensor q = fp8_tensor_scale(x, Fp8Format::kE4m3);
  q.scale = q.scale * 4;  // 4× the amax scale: the largest values saturate at 448
  Fp8PerTensor ref = q;
  quantize_transpose_fp8(x, q, Fp8Copies::kBoth);
  quantize_transpose_fp8_reference(x, ref, Fp8Copies::kBoth);
  EXPECT_EQ(bit_diff(q, ref), "");
  EXPECT_EQ(q.data.to(at::kFloat).abs().max().item<float>(), 448.f);
}

TEST(Fp8QuantizeTransposeGpu, RejectsWhatTheKernelsDoNotTake) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or built without CUDA kernels)";
  const auto opts = at::TensorOptions().device(at::kCUDA);
  EXPECT_THROW(quantize_per_tensor_fp8(at::ones({12, 16}, opts.dtype(at::kBFloat16)), Fp8Format::kE4m3,
                                       Fp8Copies::kBoth),
               std::invalid_argument);  // 12 rows: not a multiple of 8
  EXPECT_THROW(quantize_per_tensor_fp8(at::ones({8, 16}, opts.dtype(at::kFloat)), Fp8Format::kE4m3,
                                       Fp8Copies::kBoth),
               std::invalid_argument);  // fp32: the kernels take bf16
  // A strided view is made contiguous first.
  const at::Tensor x = fp8_test_input(64, 256, opts.dtype(at::kBFloat16)).narrow(1, 128, 128);
  EXPECT_EQ(bit_diff(quantize_per_tensor_fp8(x, Fp8Format::kE5m2, Fp8Copies::kBoth),
                     quantize_per_tensor_fp8_reference(x, Fp8Format::kE5m2, Fp8Copies::kBoth)), "");
}

}  // namespace
}  // namespace gptbench

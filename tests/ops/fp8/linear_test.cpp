// Tests of ops/fp8/linear.*: why an implementation cannot run (the CPU), argument errors, the
// float64 reference's rows; on a GPU with FP8 tensor cores (skipped elsewhere, with the reason)
// each implementation's forward and backward against the float64 layer on the values its GEMMs
// multiply, our quantized operands against LibTorch's composition bit for bit, e5m2 gradients,
// and that each call reads the scales of its own operands.
#include "ops/fp8/linear.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "fixtures/verify.h"
#include "ops/fp8/quantize.h"
#include "tests/ops/have_gpu.h"

namespace gptbench {
namespace {

const LinearImpl kImpls[] = {LinearImpl::kFp8, LinearImpl::kScaledMm, LinearImpl::kTorchBf16};

struct Layer {
  at::Tensor x, w, dy, y, dx, dw;
  Fp8LinearSaved saved;
};

Layer layer(int64_t m, int64_t n, int64_t k, c10::Device device) {
  const auto opts = at::TensorOptions().device(device).dtype(at::kBFloat16);
  const double nan = std::nan("");
  return {fp8_test_input(m, k, opts), fp8_test_input(n, k, opts), fp8_test_input(m, n, opts),
          at::full({m, n}, nan, opts),  at::full({m, k}, nan, opts),  at::full({n, k}, nan, opts), {}};
}

TEST(Fp8Linear, ImplNames) {
  EXPECT_STREQ(linear_impl_name(LinearImpl::kFp8), "fp8");
  EXPECT_STREQ(linear_impl_name(LinearImpl::kScaledMm), "scaled_mm");
  EXPECT_STREQ(linear_impl_name(LinearImpl::kTorchBf16), "torch");
  EXPECT_FALSE(linear_is_fp8(LinearImpl::kTorchBf16));
}

TEST(Fp8Linear, CannotRunOnTheCpu) {
  for (LinearImpl impl : kImpls) {
    EXPECT_NE(linear_unsupported(impl, at::kCPU), "") << linear_impl_name(impl);
    Layer l = layer(32, 16, 64, at::kCPU);
    EXPECT_THROW(linear_forward(impl, l.x, l.w, l.y, l.saved, true), std::invalid_argument);
  }
}

TEST(Fp8Linear, RejectsTensorsThatDoNotFit) {
  Layer l = layer(32, 16, 64, at::kCPU);
  at::Tensor wrong = at::empty({16, 32}, at::kBFloat16);
  EXPECT_THROW(linear_forward(LinearImpl::kFp8, l.x, l.w, wrong, l.saved, false), std::invalid_argument);
  at::Tensor f32 = at::empty({32, 16}, at::kFloat);
  EXPECT_THROW(linear_forward(LinearImpl::kFp8, l.x, l.w, f32, l.saved, false), std::invalid_argument);
  EXPECT_THROW(linear_backward(LinearImpl::kFp8, l.dy, l.x, l.w, l.saved, l.dw, l.dx), std::invalid_argument);
}

// The reference's rows are those rows (y, dx) and rows of N (dw) of the full float64 layer.
TEST(Fp8Linear, ReferenceRowsAreRowsOfTheLayer) {
  const at::Tensor x = at::randn({40, 24}, at::kDouble), w = at::randn({16, 24}, at::kDouble),
                   dy = at::randn({40, 16}, at::kDouble);
  const at::Tensor rows_m = at::tensor({0, 17, 39}, at::kLong), rows_n = at::tensor({0, 5, 15}, at::kLong);
  const LinearReference ref = linear_reference(x, w, dy, rows_m, rows_n);
  EXPECT_TRUE(at::allclose(ref.y, at::matmul(x, w.t()).index_select(0, rows_m), 1e-12, 1e-12));
  EXPECT_TRUE(at::allclose(ref.dx, at::matmul(dy, w).index_select(0, rows_m), 1e-12, 1e-12));
  EXPECT_TRUE(at::allclose(ref.dw, at::matmul(dy.t(), x).index_select(0, rows_n), 1e-12, 1e-12));
  EXPECT_FALSE(linear_reference(x, w, at::Tensor(), rows_m, rows_n).dx.defined());
}

class Fp8LinearGpu : public ::testing::TestWithParam<LinearImpl> {
 protected:
  void SetUp() override {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or built without CUDA kernels)";
    if (auto why = linear_unsupported(GetParam(), at::Device(at::kCUDA, 0)); !why.empty()) GTEST_SKIP() << why;
  }
};

// Forward and backward against the float64 layer on the operands the GEMMs multiply (the
// dequantized plain copies: a wrong transposed copy shows in dx and dw). 5e-3 as
// bench/linear_fp8.cpp for FP8, 1e-2 for bf16; every element must be written.
TEST_P(Fp8LinearGpu, MatchesFloat64Reference) {
  at::manual_seed(5);
  const LinearImpl impl = GetParam();
  const double tol = linear_is_fp8(impl) ? 5e-3 : 1e-2;
  struct Problem {
    int64_t m, n, k;
  };
  for (Problem p : {Problem{256, 384, 512}, Problem{128, 256, 768}, Problem{1040, 768, 3072},
                    Problem{2048, 2304, 768}})
    for (bool backward : {false, true}) {
      Layer l = layer(p.m, p.n, p.k, at::kCUDA);
      linear_forward(impl, l.x, l.w, l.y, l.saved, backward);
      if (backward) linear_backward(impl, l.dy, l.x, l.w, l.saved, l.dx, l.dw);
      at::Tensor x = l.x.to(at::kDouble), w = l.w.to(at::kDouble), dy = l.dy.to(at::kDouble);
      if (linear_is_fp8(impl)) {
        x = dequantize_per_tensor_fp8(l.saved.x);
        w = dequantize_per_tensor_fp8(l.saved.w);
        if (backward) dy = dequantize_per_tensor_fp8(l.saved.dy);
      }
      const auto idx = at::TensorOptions().device(at::kCUDA).dtype(at::kLong);
      const LinearReference ref = linear_reference(x, w, dy, at::arange(p.m, idx), at::arange(p.n, idx));
      const std::string where = std::string(linear_impl_name(impl)) + " " + std::to_string(p.m) + "x" +
                             std::to_string(p.n) + "x" + std::to_string(p.k) + (backward ? " fwd_bwd" : " fwd");
      EXPECT_EQ(check_close(l.y, ref.y, tol), "") << "y " << where;
      if (!backward) continue;
      EXPECT_EQ(check_close(l.dx, ref.dx, tol), "") << "dx " << where;
      EXPECT_EQ(check_close(l.dw, ref.dw, tol), "") << "dw " << where;
    }
}

// The FP8 operands: e4m3 forward, e5m2 gradient, transposed copies only when a backward
// follows, each equal bit for bit to LibTorch's composition (the scaled_mm peer's quantizer).
TEST_P(Fp8LinearGpu, QuantizesAsTheRecipeSays) {
  const LinearImpl impl = GetParam();
  if (!linear_is_fp8(impl)) GTEST_SKIP() << "the bf16 layer quantizes nothing";
  Layer l = layer(512, 768, 256, at::kCUDA);
  linear_forward(impl, l.x, l.w, l.y, l.saved, false);
  EXPECT_EQ(l.saved.x.data.scalar_type(), at::kFloat8_e4m3fn);
  EXPECT_FALSE(l.saved.x.data_t.defined());
  linear_forward(impl, l.x, l.w, l.y, l.saved, true);
  linear_backward(impl, l.dy, l.x, l.w, l.saved, l.dx, l.dw);
  EXPECT_EQ(l.saved.dy.data.scalar_type(), at::kFloat8_e5m2);
  struct Operand {
    const char* name;
    const Fp8PerTensor& q;
    const at::Tensor& x;
  };
  for (const Operand& o : {Operand{"x", l.saved.x, l.x}, Operand{"w", l.saved.w, l.w}, Operand{"dy", l.saved.dy, l.dy}}) {
    const Fp8PerTensor ref = quantize_per_tensor_fp8_torch(o.x, o.q.format, Fp8Copies::kBoth);
    EXPECT_TRUE(at::equal(o.q.scale_inv, ref.scale_inv)) << o.name;
    EXPECT_TRUE(at::equal(o.q.data.view(at::kByte), ref.data.view(at::kByte))) << o.name;
    EXPECT_TRUE(at::equal(o.q.data_t.view(at::kByte), ref.data_t.view(at::kByte))) << o.name;
  }
}

// Each call quantizes with the amax its tensors have now (current scaling) and the cached
// cuBLASLt plans read each call's scales: doubling dy doubles dx and dw (exact in FP8: the scale
// halves, the values stay; 1e-3 allows another algorithm's rounding, a stale scale is off by 2×).
TEST_P(Fp8LinearGpu, EachCallScalesItsOwnTensors) {
  const LinearImpl impl = GetParam();
  Layer l = layer(256, 256, 512, at::kCUDA);
  linear_forward(impl, l.x, l.w, l.y, l.saved, true);
  linear_backward(impl, l.dy, l.x, l.w, l.saved, l.dx, l.dw);
  Layer twice = l;
  twice.dx = at::empty_like(l.dx);
  twice.dw = at::empty_like(l.dw);
  linear_backward(impl, l.dy * 2, l.x, l.w, twice.saved, twice.dx, twice.dw);
  EXPECT_EQ(check_close(twice.dx, l.dx * 2, 1e-3), "") << linear_impl_name(impl);
  EXPECT_EQ(check_close(twice.dw, l.dw * 2, 1e-3), "") << linear_impl_name(impl);
}

// Delayed scaling (Fp8LinearScales): on the same inputs cast after cast its scales are current
// scaling's, so y, dX and dW equal the current-scaling layer's bit for bit (the same FP8 bytes
// into the same GEMMs); an input grown 4× since the history was recorded is cast with the old
// scale, saturating at ±448, and the cast after takes the new amax from the history.
TEST(Fp8LinearDelayedGpu, SteadyInputsMatchCurrentScalingAndGrowthSaturatesOnce) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or built without CUDA kernels)";
  if (auto why = linear_unsupported(LinearImpl::kFp8, at::kCUDA); !why.empty()) GTEST_SKIP() << why;
  at::manual_seed(7);
  Layer cur = layer(512, 768, 256, at::kCUDA);
  Layer del = cur;
  del.y = at::empty_like(cur.y);
  del.dx = at::empty_like(cur.dx);
  del.dw = at::empty_like(cur.dw);
  Fp8LinearScales scales;
  EXPECT_THROW(linear_forward(LinearImpl::kScaledMm, cur.x, cur.w, cur.y, cur.saved, true, &scales),
               std::invalid_argument);
  linear_forward(LinearImpl::kFp8, cur.x, cur.w, cur.y, cur.saved, true);
  linear_backward(LinearImpl::kFp8, cur.dy, cur.x, cur.w, cur.saved, cur.dx, cur.dw);
  for (int call = 0; call < 3; ++call) {
    linear_forward(LinearImpl::kFp8, del.x, del.w, del.y, del.saved, true, &scales);
    linear_backward(LinearImpl::kFp8, del.dy, del.x, del.w, del.saved, del.dx, del.dw, &scales.dy);
    EXPECT_TRUE(at::equal(del.y, cur.y)) << "call " << call;
    EXPECT_TRUE(at::equal(del.dx, cur.dx)) << "call " << call;
    EXPECT_TRUE(at::equal(del.dw, cur.dw)) << "call " << call;
    EXPECT_TRUE(at::equal(del.saved.x.scale_inv, cur.saved.x.scale_inv)) << "call " << call;
  }
  EXPECT_EQ(scales.x.casts, 3);
  EXPECT_EQ(scales.dy.casts, 3);

  const at::Tensor grown = cur.x * 4;  // exact in bf16
  linear_forward(LinearImpl::kFp8, grown, del.w, del.y, del.saved, true, &scales);
  EXPECT_TRUE(at::equal(del.saved.x.scale_inv, cur.saved.x.scale_inv));  // the old scale
  const at::Tensor cast = dequantize_per_tensor_fp8(del.saved.x);
  EXPECT_DOUBLE_EQ(cast.abs().max().item<double>(), 448.0 * cur.saved.x.scale_inv.item<double>());  // saturated
  linear_forward(LinearImpl::kFp8, grown, del.w, del.y, del.saved, true, &scales);
  const Fp8PerTensor now = quantize_per_tensor_fp8_torch(grown, Fp8Format::kE4m3, Fp8Copies::kPlain);
  EXPECT_TRUE(at::equal(del.saved.x.scale_inv, now.scale_inv));  // the history's new largest amax
}

INSTANTIATE_TEST_SUITE_P(Impls, Fp8LinearGpu,
                         ::testing::Values(LinearImpl::kFp8, LinearImpl::kScaledMm, LinearImpl::kTorchBf16),
                         [](const ::testing::TestParamInfo<LinearImpl>& info) {
                           return std::string(linear_impl_name(info.param));
                         });

}  // namespace
}  // namespace gptbench

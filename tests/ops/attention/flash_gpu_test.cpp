// ops/attention/flash.*'s kernels on a GPU (skipped without a GPU or a CUDA build): o, lse, dQ,
// dK, dV for bf16 and fp16, every head dim, causal and not, L in {1, 17, 130, 1000, 4097}, the
// portable and the Hopper kernels, against float64 on the CPU (L <= 256) or
// at::scaled_dot_product_attention's math backend in fp32 on the GPU (larger L); outputs
// poisoned with NaN before each call; the kernel kAuto picks; strided and misaligned inputs; the
// autograd function in a GPT-2-shaped attention layer.
// Sanitizer run (small shapes only):
//   compute-sanitizer --tool memcheck  build/gptbench_tests --gtest_filter='*FlashAttentionGpu*_L17_*:*FlashAttentionGpu*_L130_*'
//   compute-sanitizer --tool racecheck build/gptbench_tests --gtest_filter='*FlashAttentionGpu*_L17_*:*FlashAttentionGpu*_L130_*'
#include "ops/attention/flash.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <functional>
#include <limits>
#include <string>
#include <tuple>

#include "fixtures/verify.h"
#include "ops/tf32_guard.h"
#include "tests/ops/attention/flash_test_util.h"

namespace gptbench {

// How the test names print a kernel choice (found by gtest in FlashKernel's namespace).
void PrintTo(FlashKernel k, std::ostream* os) {
  *os << (k == FlashKernel::kSm90 ? "sm90" : k == FlashKernel::kPortable ? "portable" : "auto");
}

namespace {

using namespace testing_flash;

// dtype, d, L, causal, kernel (forward and backward).
using GpuParam = std::tuple<std::string, int, int, bool, FlashKernel>;

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

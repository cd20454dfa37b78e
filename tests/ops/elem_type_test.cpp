// Tests of ops/device/elem_type*.h: the element types' names and sizes, the at::ScalarType
// mapping the LibTorch wrappers use, and that every launcher rejects an element type it has no
// kernel for (std::invalid_argument naming the launcher) before it touches a device.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

#include "ops/device/elem_type.h"
#include "ops/device/elem_type_torch.h"
#include "tests/ops/have_gpu.h"

#ifdef GPTBENCH_WITH_CUDA
#include "ops/attention/flash_kernels.h"
#include "ops/cross_entropy_kernels.h"
#include "ops/layernorm_kernels.h"
#include "ops/optim/adafactor_kernels.h"
#include "ops/optim/adam8bit_kernels.h"
#include "ops/optim/adamw_kernels.h"
#include "ops/optim/lion_kernels.h"
#include "ops/softmax_kernels.h"
#endif

namespace gptbench {
namespace {

constexpr ElemType kF32 = ElemType::kF32, kBF16 = ElemType::kBF16, kF16 = ElemType::kF16;

// The values the optimizers' launch tables and keys store.
static_assert(static_cast<int32_t>(kF32) == 0 && static_cast<int32_t>(kBF16) == 1);
static_assert(sizeof(ElemType) == sizeof(int32_t));

TEST(ElemType, NamesAndSizes) {
  EXPECT_STREQ(elem_type_name(kF32), "fp32");
  EXPECT_STREQ(elem_type_name(kBF16), "bf16");
  EXPECT_STREQ(elem_type_name(kF16), "fp16");
  EXPECT_STREQ(elem_type_name(static_cast<ElemType>(7)), "an unknown type");
  EXPECT_EQ(elem_bytes(kF32), 4);
  EXPECT_EQ(elem_bytes(kBF16), 2);
  EXPECT_EQ(elem_bytes(kF16), 2);
}

TEST(ElemType, FromScalarTypeWithinSupported) {
  EXPECT_EQ(elem_type_in(at::kFloat, {kF32, kBF16}), kF32);
  EXPECT_EQ(elem_type_in(at::kBFloat16, {kF32, kBF16}), kBF16);
  EXPECT_EQ(elem_type_in(at::kHalf, {kBF16, kF16}), kF16);
  EXPECT_EQ(elem_type_in(at::kHalf, {kF32, kBF16}), std::nullopt);
  EXPECT_EQ(elem_type_in(at::kFloat, {kBF16, kF16}), std::nullopt);
  EXPECT_EQ(elem_type_in(at::kDouble, {kF32, kBF16, kF16}), std::nullopt);
  EXPECT_EQ(elem_type_in(at::kLong, {kF32, kBF16, kF16}), std::nullopt);
  EXPECT_EQ(elem_type_in(at::kFloat, {}), std::nullopt);
}

// Passes when f throws std::invalid_argument with a message that starts with `prefix`.
::testing::AssertionResult throws_starting(const std::string& prefix,
                                           const std::function<void()>& f) {
  try {
    f();
    return ::testing::AssertionFailure() << "no std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    if (std::string(e.what()).rfind(prefix, 0) == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "got \"" << e.what() << "\"";
  }
}

TEST(ElemType, CheckNamesTheSupportedTypes) {
  EXPECT_EQ(check_elem_type(at::kBFloat16, {kF32, kBF16}, "softmax_fused"), kBF16);
  EXPECT_TRUE(throws_starting("softmax_fused: fp32 or bf16 only, got Half", [] {
    check_elem_type(at::kHalf, {kF32, kBF16}, "softmax_fused");
  }));
  EXPECT_TRUE(throws_starting("gemm: fp32, bf16 or fp16 only, got Double", [] {
    check_elem_type(at::kDouble, {kF32, kBF16, kF16}, "gemm");
  }));
  EXPECT_TRUE(throws_starting("w: bf16 only, got Float", [] {
    check_elem_type(at::kFloat, {kBF16}, "w");
  }));
}

#ifdef GPTBENCH_WITH_CUDA
// Passes when f throws the std::invalid_argument of `launcher` finding no kernel for the type.
::testing::AssertionResult rejected_by(const char* launcher, const std::function<void()>& f) {
  return throws_starting(std::string(launcher) + ": no kernel for ", f);
}

// Launchers that check the type before any CUDA call: this runs without a GPU.
TEST(ElemType, LaunchersRejectTypesWithoutKernels) {
  EXPECT_TRUE(rejected_by("softmax", [] {
    launch_softmax_forward(nullptr, nullptr, 2, 64, kF16, nullptr);
  }));
  EXPECT_TRUE(rejected_by("softmax", [] {
    launch_softmax_backward(nullptr, nullptr, nullptr, 2, 64, kF16, nullptr);
  }));
  EXPECT_TRUE(rejected_by("cross_entropy", [] {
    launch_cross_entropy_forward(nullptr, 8, nullptr, nullptr, nullptr, 2, 8, -100,
                                 static_cast<ElemType>(7), nullptr);
  }));
  EXPECT_TRUE(rejected_by("cross_entropy", [] {
    launch_cross_entropy_backward(nullptr, 8, nullptr, nullptr, nullptr, nullptr, 2, 8, -100,
                                  static_cast<ElemType>(7), nullptr);
  }));
  FlashFwdParams fwd{};
  fwd.B = fwd.H = fwd.L = 1;
  fwd.d = 64;
  fwd.q_st = fwd.k_st = fwd.v_st = {64, 64, 64};
  fwd.dtype = kF32;
  EXPECT_TRUE(rejected_by("flash attention", [&] { launch_flash_forward(fwd, nullptr); }));
  FlashBwdParams bwd{};
  bwd.B = bwd.H = bwd.L = 1;
  bwd.d = 64;
  bwd.q_st = bwd.k_st = bwd.v_st = bwd.o_st = bwd.do_st = {64, 64, 64};
  bwd.dtype = kF32;
  EXPECT_TRUE(rejected_by("flash attention", [&] { launch_flash_backward(bwd, nullptr); }));
  const optim::AdamScalars adam{};
  EXPECT_TRUE(rejected_by("optimizer", [&] {
    optim::adamw_step_cuda(nullptr, nullptr, 1, kF16, adam, nullptr);
  }));
  EXPECT_TRUE(rejected_by("optimizer", [&] {
    optim::adam8bit_step_cuda(nullptr, nullptr, 1, kF16, adam, nullptr, nullptr);
  }));
  EXPECT_TRUE(rejected_by("optimizer", [] {
    optim::lion_step_cuda(nullptr, nullptr, 1, kF16, optim::LionScalars{}, nullptr);
  }));
  EXPECT_TRUE(rejected_by("optimizer", [] {
    optim::adafactor_step_cuda(nullptr, 1, nullptr, 1, kF16, optim::AdafactorScalars{}, nullptr);
  }));
}

// The LayerNorm launchers size their grid from the device first: GPU only.
TEST(ElemType, LayerNormRejectsFp16) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU";
  LnForward f;
  f.rows = 1;
  f.columns = 64;
  f.y_dtype = kF16;
  EXPECT_TRUE(rejected_by("layernorm", [&] { launch_layernorm_forward(f, nullptr); }));
  LnBackward b;
  b.rows = 1;
  b.columns = 64;
  b.dy_dtype = kF16;
  EXPECT_TRUE(rejected_by("layernorm", [&] { launch_layernorm_backward(b, nullptr); }));
}
#endif

}  // namespace
}  // namespace gptbench

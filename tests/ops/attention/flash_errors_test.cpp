// ops/attention/flash.*'s error paths, on the CPU: CPU tensors, unsupported head dims and
// dtypes, bad shapes, each a clear c10::Error naming the function.
#include "ops/attention/flash.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <string>

namespace gptbench {
namespace {

// The c10::Error message of f(), or "" when it does not throw one.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "";
}

TEST(FlashAttention, CpuTensorsGiveClearError) {
  auto q = at::randn({1, 2, 8, 64}).to(at::kBFloat16);
  const std::string fwd = error_of([&] { flash_attention_forward(q, q, q, true); });
  EXPECT_NE(fwd.find("flash_attention_forward: needs CUDA tensors"), std::string::npos) << fwd;
  const std::string ag = error_of([&] { flash_attention(q, q, q, false); });
  EXPECT_NE(ag.find("needs CUDA tensors"), std::string::npos) << ag;
  auto lse = at::zeros({1, 2, 8});
  const std::string bwd = error_of([&] { flash_attention_backward(q, q, q, q, lse, q, true); });
  EXPECT_NE(bwd.find("flash_attention_backward: needs CUDA tensors"), std::string::npos) << bwd;
  // Forcing the Hopper kernels, or asking whether they can run, checks the input first too.
  const std::string sm90 =
      error_of([&] { flash_attention_forward(q, q, q, true, FlashKernel::kSm90); });
  EXPECT_NE(sm90.find("needs CUDA tensors"), std::string::npos) << sm90;
  const std::string ask = error_of([&] { flash_sm90_unsupported(q, q, q); });
  EXPECT_NE(ask.find("flash_sm90_unsupported: needs CUDA tensors"), std::string::npos) << ask;
  const std::string shape =
      error_of([&] { flash_sm90_unsupported(q, q, q.narrow(2, 0, 4)); });
  EXPECT_NE(shape.find("same shape"), std::string::npos) << shape;
}

TEST(FlashAttention, UnsupportedShapesAndDtypesGiveClearErrors) {
  auto bf = at::TensorOptions().dtype(at::kBFloat16);
  auto d80 = at::randn({1, 2, 8, 80}, bf);
  std::string e = error_of([&] { flash_attention_forward(d80, d80, d80, true); });
  EXPECT_NE(e.find("head dim 80 unsupported (supported: 16, 32, 64, 128)"), std::string::npos) << e;
  e = error_of([&] { flash_attention(d80, d80, d80, true); });
  EXPECT_NE(e.find("head dim 80 unsupported"), std::string::npos) << e;

  auto f32 = at::randn({1, 2, 8, 64});
  e = error_of([&] { flash_attention_forward(f32, f32, f32, false); });
  EXPECT_NE(e.find("bf16 or fp16 inputs only"), std::string::npos) << e;

  auto q = at::randn({1, 2, 8, 64}, bf), k = at::randn({1, 2, 9, 64}, bf);
  e = error_of([&] { flash_attention_forward(q, k, q, false); });
  EXPECT_NE(e.find("same shape"), std::string::npos) << e;

  auto q3 = at::randn({2, 8, 64}, bf);
  e = error_of([&] { flash_attention_forward(q3, q3, q3, false); });
  EXPECT_NE(e.find("must be 4-D"), std::string::npos) << e;

  auto h = at::randn({1, 2, 8, 64}).to(at::kHalf);
  e = error_of([&] { flash_attention_forward(q, h, q, false); });
  EXPECT_NE(e.find("share a dtype"), std::string::npos) << e;
}

TEST(FlashAttention, HeadDimSupport) {
  for (int64_t d : {16, 32, 64, 128}) EXPECT_TRUE(flash_attention_supports_head_dim(d));
  for (int64_t d : {0, 8, 48, 80, 96, 256}) EXPECT_FALSE(flash_attention_supports_head_dim(d));
}

}  // namespace
}  // namespace gptbench

// Delayed scaling (ops/fp8/quantize_transpose.h Fp8DelayedScale): the first cast is current
// scaling and starts the history; later casts take the multiplier of the history's largest amax
// and record their own; an amax leaves after `history` casts. On the CPU, the reference against
// hand-computed histories and the current-scaling reference; on a GPU, our kernels against the
// reference over a sequence of casts, bit for bit (the same correctly rounded fp32 operations).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "ops/fp8/gelu_fp8.h"
#include "ops/fp8/quantize.h"
#include "ops/fp8/quantize_transpose.h"
#include "tests/ops/have_gpu.h"

namespace gptbench {
namespace {

// "" when a and b hold the same scales, the same copies and the same FP8 bytes in them, wherever
// they are.
std::string differ(const Fp8PerTensor& a, const Fp8PerTensor& b) {
  if (!at::equal(a.scale.cpu(), b.scale.cpu())) return "scale";
  if (!at::equal(a.scale_inv.cpu(), b.scale_inv.cpu())) return "scale_inv";
  for (auto [x, y, what] : {std::tuple{&a.data, &b.data, "data"}, std::tuple{&a.data_t, &b.data_t, "data_t"}}) {
    if (x->defined() != y->defined()) return std::string(what) + ": one copy is missing";
    if (x->defined() && !at::equal(x->view(at::kByte).cpu(), y->view(at::kByte).cpu())) return what;
  }
  return "";
}

float scale_of(float amax, Fp8Format f) { return fp8_scale_from_amax(amax, f); }

TEST(Fp8DelayedScale, FirstCastIsCurrentScalingAndStartsTheHistory) {
  at::manual_seed(1);
  for (Fp8Format f : {Fp8Format::kE4m3, Fp8Format::kE5m2}) {
    const at::Tensor x = fp8_test_input(16, 24, at::TensorOptions().dtype(at::kBFloat16));
    Fp8DelayedScale d(f, 4);
    const Fp8PerTensor q = quantize_per_tensor_fp8(x, d.format, Fp8Copies::kBoth, &d);
    EXPECT_EQ(differ(q, quantize_per_tensor_fp8_reference(x, f, Fp8Copies::kBoth)), "") << fp8_format_name(f);
    const float amax = x.to(at::kFloat).abs().max().item<float>();
    const std::vector<float> want = {scale_of(amax, f), amax, 0, 0, 0};
    EXPECT_TRUE(at::equal(d.state, at::tensor(want))) << d.state;
    EXPECT_EQ(d.casts, 1);
  }
}

// Casts of tensors whose amax is 1, 8, 2, 0.5, 0.25 (history 3): each takes the multiplier of
// the largest amax among the previous three casts (the first: its own). The 8 is cast with 1's
// multiplier (saturating), and the three casts after it keep 8's multiplier until 8 leaves.
TEST(Fp8DelayedScale, LaterCastsTakeTheLargestAmaxOfTheHistory) {
  const Fp8Format f = Fp8Format::kE4m3;
  Fp8DelayedScale d(f, 3);
  const float amaxes[] = {1, 8, 2, 0.5f, 0.25f};
  const float used[] = {scale_of(1, f), scale_of(1, f), scale_of(8, f), scale_of(8, f), scale_of(8, f)};
  at::manual_seed(2);
  for (int i = 0; i < 5; ++i) {
    at::Tensor x = at::rand({8, 16}) * amaxes[i] * 0.9;
    x[3][5] = -amaxes[i];  // the amax, exactly (a power of two)
    x = x.to(at::kBFloat16);
    const Fp8PerTensor q = quantize_per_tensor_fp8(x, d.format, Fp8Copies::kBoth, &d);
    EXPECT_EQ(q.scale.item<float>(), used[i]) << "cast " << i;
    EXPECT_EQ(q.scale_inv.item<float>(), 1.f / used[i]) << "cast " << i;
    // The bytes are the reference cast at that multiplier (saturated where the tensor outgrew it).
    Fp8PerTensor r;
    r.format = f;
    r.scale = q.scale.clone();
    r.scale_inv = q.scale_inv.clone();
    quantize_transpose_fp8_reference(x, r, Fp8Copies::kBoth);
    EXPECT_EQ(differ(q, r), "") << "cast " << i;
    EXPECT_EQ(d.state[1].item<float>(), amaxes[i]) << "cast " << i;  // newest first
  }
  // After the five casts: the history is 0.25, 0.5, 2 (8 has left), the next multiplier 2's.
  const std::vector<float> want = {scale_of(2, f), 0.25f, 0.5f, 2};
  EXPECT_TRUE(at::equal(d.state, at::tensor(want))) << d.state;
  EXPECT_EQ(d.casts, 5);
}

// A tensor grown past the history's range saturates at ±max instead of overflowing.
TEST(Fp8DelayedScale, GrowthSaturates) {
  Fp8DelayedScale d(Fp8Format::kE4m3, 2);
  const auto bf16 = at::TensorOptions().dtype(at::kBFloat16);
  quantize_per_tensor_fp8(at::full({8, 8}, 1.0, bf16), d.format, Fp8Copies::kPlain, &d);
  const Fp8PerTensor q = quantize_per_tensor_fp8(at::full({8, 8}, 4.0, bf16), d.format, Fp8Copies::kPlain, &d);
  EXPECT_EQ(q.scale.item<float>(), 448.f);
  EXPECT_TRUE(at::all(q.data.to(at::kFloat) == 448).item<bool>());
  EXPECT_EQ(d.state[0].item<float>(), 112.f);  // 448 / 4 for the next cast
}

// Each set of copies is written as asked, the missing one undefined.
TEST(Fp8DelayedScale, WritesTheCopiesAskedFor) {
  const at::Tensor x = fp8_test_input(16, 24, at::TensorOptions().dtype(at::kBFloat16));
  for (Fp8Copies c : {Fp8Copies::kPlain, Fp8Copies::kTransposed, Fp8Copies::kBoth}) {
    Fp8DelayedScale d(Fp8Format::kE4m3);
    const Fp8PerTensor q = quantize_per_tensor_fp8(x, d.format, c, &d);
    EXPECT_EQ(differ(q, quantize_per_tensor_fp8_reference(x, Fp8Format::kE4m3, c)), "") << static_cast<int>(c);
    EXPECT_EQ(q.data.defined(), fp8_writes_plain(c));
    EXPECT_EQ(q.data_t.defined(), fp8_writes_transposed(c));
  }
}

TEST(Fp8DelayedScale, RejectsBadUse) {
  EXPECT_THROW(Fp8DelayedScale(Fp8Format::kE4m3, 0), std::invalid_argument);
  EXPECT_THROW(Fp8DelayedScale(Fp8Format::kE4m3, kFp8MaxAmaxHistory + 1), std::invalid_argument);
  Fp8DelayedScale d(Fp8Format::kE4m3);
  EXPECT_THROW(quantize_per_tensor_fp8(at::zeros({8}), d.format, Fp8Copies::kBoth, &d), std::invalid_argument);
  const at::Tensor x = at::ones({8, 8}).to(at::kBFloat16);
  // A scale of another format than the cast's.
  EXPECT_THROW(quantize_per_tensor_fp8(x, Fp8Format::kE5m2, Fp8Copies::kBoth, &d), std::invalid_argument);
  EXPECT_THROW(quantize_per_tensor_gelu_fp8(x, at::Tensor(), Fp8Format::kE5m2, Fp8Copies::kBoth, &d),
               std::invalid_argument);
  EXPECT_EQ(d.casts, 0);
  if (have_gpu()) {  // one scale per tensor and device
    quantize_per_tensor_fp8(x, d.format, Fp8Copies::kBoth, &d);
    EXPECT_THROW(quantize_per_tensor_fp8(x.cuda(), d.format, Fp8Copies::kBoth, &d), std::invalid_argument);
  }
}

// GELU's output (the MLP's c_proj input) on the CPU: the plain delayed reference of LibTorch's
// bf16 GELU, state included.
TEST(Fp8DelayedScale, GeluInputIsTheCompositionOnTheCpu) {
  at::manual_seed(4);
  const at::Tensor u = (at::randn({16, 32}) * 3).to(at::kBFloat16), bias = at::randn({32}).to(at::kBFloat16);
  Fp8DelayedScale a(Fp8Format::kE4m3), b(Fp8Format::kE4m3);
  for (int i = 0; i < 3; ++i) {
    const at::Tensor ui = u * (i + 1);
    EXPECT_EQ(differ(quantize_per_tensor_gelu_fp8(ui, bias, a.format, Fp8Copies::kBoth, &a),
                     quantize_per_tensor_fp8(gelu_bf16_torch(ui, bias), b.format, Fp8Copies::kBoth, &b)), "");
  }
  EXPECT_TRUE(at::equal(a.state, b.state));
}

// ------------------------------------------------------------------ GPU

// Our kernels against the reference over a sequence of casts whose amax rises and falls (the
// 1×128 blocks of fp8_test_input differ up to 16× in magnitude), at shapes with partial tiles,
// both formats and every set of copies: scales, bytes and the state, bit for bit.
TEST(Fp8DelayedScaleGpu, KernelsMatchTheReferenceCastAfterCast) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or built without CUDA kernels)";
  at::manual_seed(5);
  const auto opts = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  const float growth[] = {1, 3, 0.5f, 0.25f, 2, 0.1f};
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{8, 8}, {264, 200}, {1000, 1032}, {8192, 768}})
    for (Fp8Format f : {Fp8Format::kE4m3, Fp8Format::kE5m2})
      for (Fp8Copies c : {Fp8Copies::kPlain, Fp8Copies::kTransposed, Fp8Copies::kBoth}) {
        Fp8DelayedScale ours(f, 4), ref(f, 4);
        for (float g : growth) {
          const at::Tensor x = (fp8_test_input(rows, cols, opts) * g).to(at::kBFloat16);
          const Fp8PerTensor q = quantize_per_tensor_fp8(x, ours.format, c, &ours);
          EXPECT_TRUE(q.scale.is_cuda());
          const Fp8PerTensor r = quantize_per_tensor_fp8(x.cpu(), ref.format, c, &ref);
          ASSERT_EQ(differ(q, r), "") << rows << "x" << cols << " " << fp8_format_name(f) << " growth " << g;
          ASSERT_TRUE(at::equal(ours.state.cpu(), ref.state)) << ours.state << ref.state;
        }
      }
}

// GELU's output quantized where it is computed, delayed: the first cast is the current-scaling
// quantizer's (the same kernels' GELU), bit for bit; the next records the amax of the GELU it
// casts, which the current quantizer's scale stands for.
TEST(Fp8DelayedScaleGpu, GeluInputCastsAndRecordsItsAmax) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU (or built without CUDA kernels)";
  at::manual_seed(6);
  const auto bf = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  const at::Tensor u = at::randn({512, 768}, bf) * 3, bias = at::randn({768}, bf);
  Fp8DelayedScale d(Fp8Format::kE4m3);
  const Fp8PerTensor first = quantize_per_tensor_gelu_fp8(u, bias, d.format, Fp8Copies::kBoth, &d);
  EXPECT_EQ(differ(first, quantize_per_tensor_gelu_fp8(u, bias, Fp8Format::kE4m3, Fp8Copies::kBoth)), "");
  const at::Tensor u2 = u * 2;
  const Fp8PerTensor second = quantize_per_tensor_gelu_fp8(u2, bias, d.format, Fp8Copies::kBoth, &d);
  EXPECT_TRUE(at::equal(second.scale.cpu(), first.scale.cpu()));  // the first cast's multiplier
  const Fp8PerTensor now = quantize_per_tensor_gelu_fp8(u2, bias, Fp8Format::kE4m3, Fp8Copies::kBoth);
  EXPECT_EQ(d.state[0].item<float>(), now.scale.item<float>());  // u2's GELU is the larger
}

}  // namespace
}  // namespace gptbench

// ops/linear_lt (cuBLASLt epilogues) and model/fused_linear (their autograd functions) against
// fp32 LibTorch references on fresh random data; the CPU tests cover the fallback path.
#include "model/fused_linear.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "train/step.h"
#include "ops/linear_lt.h"

namespace gptbench {
namespace {

// ------------------------------------------------------------------ helpers

// "" when every |out − ref| ≤ rel·|ref| + abs_frac·rms(ref) (NaN never passes), otherwise the
// worst element. Compared in float64 on the CPU.
std::string close_elementwise(const at::Tensor& out, const at::Tensor& ref, double rel,
                              double abs_frac) {
  if (!out.defined()) return "output undefined";
  if (out.sizes() != ref.sizes())
    return "shape " + c10::str(out.sizes()) + " differs from the reference " + c10::str(ref.sizes());
  auto o = out.detach().to(at::kCPU, at::kDouble).flatten();
  auto r = ref.detach().to(at::kCPU, at::kDouble).flatten();
  const double rms = r.square().mean().sqrt().item<double>();
  auto excess = (o - r).abs() - rel * r.abs() - abs_frac * rms;
  excess = at::where(at::isnan(excess), at::full_like(excess, INFINITY), excess);
  const int64_t i = excess.argmax().item<int64_t>();
  if (excess[i].item<double>() <= 0) return "";
  char buf[200];
  std::snprintf(buf, sizeof(buf), "element %lld: %.6g vs reference %.6g (rms %.4g, rel %.3g + %.3g·rms)",
                static_cast<long long>(i), o[i].item<double>(), r[i].item<double>(), rms, rel,
                abs_frac);
  return buf;
}

// Fresh N(0, std²) values that bf16 represents exactly, in `dtype` on `device`.
at::Tensor bf16_exact(std::vector<int64_t> shape, double std, at::ScalarType dtype,
                      c10::Device device) {
  return (at::randn(shape, at::TensorOptions().device(device)) * std)
      .to(at::kBFloat16)
      .to(dtype);
}

// Fills freed memory with NaN so that outputs the kernels fail to write show up: the CUDA
// caching allocator hands these blocks (large and small pool) to the next allocations.
void poison_allocator(c10::Device device) {
  std::vector<at::Tensor> blocks;
  for (int64_t bytes : {int64_t{256} << 20, int64_t{4} << 20, int64_t{1} << 20, int64_t{1} << 20})
    blocks.push_back(at::full({bytes / 4}, NAN, at::TensorOptions().device(device)));
}

// Our tolerances (applied element-wise, see close_elementwise):
// Single GEMMs (LinearLtGpu): inputs exact in bf16, so each output is the fp32 result rounded
// once: kRel plus 2^-10 of the rms for the epilogue's approximate GELU / tanh.
// Layers (FusedLinearGpu):
// - kRel = 2^-7: every fused output is rounded once to bf16 (unit roundoff 2^-8); the other
//   2^-8 covers the epilogue's own GELU / tanh evaluation.
// - kRms = 2^-5 of the reference's rms: the fused path rounds its intermediates (the GELU
//   output h, d_pre, the GELU input aux) to bf16 before the next GEMM, as the unfused bf16
//   composition does (and both sum the bf16 d_pre for c_fc's bias gradient), while the
//   reference keeps them in fp32. Each rounding is a random-sign
//   relative error ≤ 2^-8 per term, so a K-term dot product is off by ≈ 2^-8/√3·‖terms‖ ≈
//   2^-9·rms(result); the maximum over ~10^6 outputs stays within ~5σ ≈ 2^-6.7·rms. fp32
//   accumulation over K ≤ 3072 adds < K·2^-24 ≈ 2^-12 relative (worst case). GELU' of the
//   rounded aux differs by ≤ max|x·gelu''(x)|·2^-8 ≈ 0.35·2^-8 of |dy·w|. 2^-5 is 3x that.
constexpr double kRel = 1.0 / 128;
constexpr double kRms = 1.0 / 32;
// lt_wgrad's fp32 output: 2^-12, twice the worst fp32 summation error (see its test).
constexpr double kWgradTol = 1.0 / 4096;

bool have_cuda() { return torch::cuda::is_available(); }

// ------------------------------------------------------------------ ops/linear_lt

struct LtShape {
  int64_t n, in, out;
};
// GPT-2 small's MLP (N = 2·1024 rows) and an odd row count with the smallest features allowed.
const LtShape kLtShapes[] = {{2048, 768, 3072}, {37, 64, 256}};

TEST(LinearLtGpu, EpiloguesMatchFp32Reference) {
  if (!have_cuda()) GTEST_SKIP() << "no CUDA GPU";
  const c10::Device cuda(c10::kCUDA, 0);
  std::vector<at::ScalarType> bias_types = {at::kBFloat16};
  if (lt_fp32_bias_supported()) bias_types.push_back(at::kFloat);
  std::printf("cuBLASLt fp32 bias vectors with bf16 matrices: %s\n",
              lt_fp32_bias_supported() ? "supported" : "not supported");
  for (const auto& s : kLtShapes) {
    for (auto bt : bias_types) {
      SCOPED_TRACE("N=" + std::to_string(s.n) + " in=" + std::to_string(s.in) + " out=" +
                   std::to_string(s.out) + " bias " + at::toString(bt));
      at::manual_seed(s.n + s.in);
      const double wstd = 1.0 / std::sqrt(static_cast<double>(s.in));
      auto x = bf16_exact({s.n, s.in}, 1.0, at::kBFloat16, cuda);
      auto w = bf16_exact({s.out, s.in}, wstd, at::kBFloat16, cuda);
      auto b = bf16_exact({s.out}, 0.5, bt, cuda);
      auto dy = bf16_exact({s.n, s.out}, 1.0, at::kBFloat16, cuda);
      auto pre_in = bf16_exact({s.n, s.in}, 1.5, at::kBFloat16, cuda);  // a GELU input
      auto xf = x.to(at::kFloat), wf = w.to(at::kFloat), dyf = dy.to(at::kFloat);
      auto pre_ref = at::addmm(b.to(at::kFloat), xf, wf.t());

      poison_allocator(cuda);
      auto y = lt_linear(x, w, b);
      EXPECT_EQ(close_elementwise(y, pre_ref, kRel, 1.0 / 1024), "") << "BIAS";

      poison_allocator(cuda);
      auto [h, pre] = lt_linear_gelu(x, w, b);
      EXPECT_EQ(close_elementwise(pre, pre_ref, kRel, 1.0 / 1024), "") << "GELU_AUX_BIAS aux";
      EXPECT_EQ(close_elementwise(h, at::gelu(pre_ref, "tanh"), kRel, 1.0 / 1024), "")
          << "GELU_AUX_BIAS output";

      poison_allocator(cuda);
      auto d_pre = lt_dgelu(dy, w, pre_in);
      auto d_pre_ref = at::gelu_backward(at::mm(dyf, wf), pre_in.to(at::kFloat), "tanh");
      EXPECT_EQ(close_elementwise(d_pre, d_pre_ref, kRel, 1.0 / 1024), "") << "DGELU";

      // d_pre and the bias gradient before the GELU, both ways: d_pre as the DGELU check above;
      // the bias gradient is the fp32 sum of the d_pre returned (n·2^-24 of Σ|d_pre| at most).
      for (DgeluPath path : {DgeluPath::kEpilogue, DgeluPath::kSeparate, DgeluPath::kFastest}) {
        SCOPED_TRACE(path == DgeluPath::kEpilogue ? "epilogue" : path == DgeluPath::kSeparate ? "separate" : "fastest");
        poison_allocator(cuda);
        auto [dp, db_pre] = lt_dgelu_bgrad(dy, w, pre_in, path);
        EXPECT_EQ(close_elementwise(dp, d_pre_ref, kRel, 1.0 / 1024), "") << "d_pre";
        const auto dpd = dp.to(at::kDouble);
        const double bound = static_cast<double>(s.n) * 0x1p-24;
        EXPECT_EQ(db_pre.scalar_type(), at::kFloat);
        EXPECT_TRUE(((db_pre.to(at::kDouble) - dpd.sum(0)).abs() <= dpd.abs().sum(0) * bound).all().item<bool>())
            << "bias gradient";
      }

      // The weight gradient stays fp32: exact bf16 products summed in fp32 over N ≤ 2048 rows,
      // off by < N·2^-24 ≈ 2^-13 of the terms' magnitude (the reference's own order differs).
      auto wgrad_ref = at::mm(dyf.t().to(at::kDouble), xf.to(at::kDouble));
      auto dw = at::full({s.out, s.in}, NAN, x.options().dtype(at::kFloat));  // overwritten
      lt_wgrad(dy, x, dw, /*accumulate=*/false);
      EXPECT_EQ(close_elementwise(dw, wgrad_ref, kWgradTol, kWgradTol), "") << "weight gradient";
      auto acc = at::randn({s.out, s.in}, x.options().dtype(at::kFloat));
      auto expect = acc.to(at::kDouble) + wgrad_ref;
      lt_wgrad(dy, x, acc, /*accumulate=*/true);
      EXPECT_EQ(close_elementwise(acc, expect, kWgradTol, kWgradTol), "") << "weight gradient added";
    }
  }
}

// cuBLASLt's GELU epilogue is the tanh approximation (as PyTorch's _addmm_activation assumes):
// on x ∈ [-3.4, -2.4] the tanh form exceeds the erf form by 2.4e-4 .. 4.7e-4 (4-20% of the
// value), far above bf16 rounding there (~2^-9 relative), so the mean signed difference of the
// epilogue's output from each form tells them apart; element-wise it must match the tanh form.
TEST(LinearLtGpu, GeluEpilogueIsTanhApproximation) {
  if (!have_cuda()) GTEST_SKIP() << "no CUDA GPU";
  const c10::Device cuda(c10::kCUDA, 0);
  at::manual_seed(5);
  const int64_t n = 4096, c = 64;
  auto x = (at::rand({n, c}, at::TensorOptions().device(cuda)) * 8 - 4).to(at::kBFloat16);
  auto w = at::eye(c, at::TensorOptions().device(cuda).dtype(at::kBFloat16));  // pre = x + b
  auto b = bf16_exact({c}, 0.25, at::kBFloat16, cuda);
  auto [h, pre] = lt_linear_gelu(x, w, b);
  auto p = x.to(at::kFloat) + b.to(at::kFloat);
  auto g_tanh = at::gelu(p, "tanh"), g_erf = at::gelu(p);
  EXPECT_EQ(close_elementwise(h, g_tanh, kRel, 1.0 / 1024), "");
  auto band = (p >= -3.4) & (p <= -2.4);
  ASSERT_GT(band.sum().item<int64_t>(), 1000);
  auto hf = h.to(at::kFloat);
  const double vs_tanh = (hf - g_tanh).masked_select(band).mean().item<double>();
  const double vs_erf = (hf - g_erf).masked_select(band).mean().item<double>();
  std::printf("GELU epilogue on [-3.4, -2.4]: mean(h - gelu_tanh) %.3g, mean(h - gelu_erf) %.3g\n",
              vs_tanh, vs_erf);
  EXPECT_LT(std::abs(vs_tanh), 0.25 * std::abs(vs_erf));
}

TEST(LinearLtGpu, RejectsOperandsItCannotTake) {
  if (!have_cuda()) GTEST_SKIP() << "no CUDA GPU";
  const auto o = at::TensorOptions().device(c10::kCUDA).dtype(at::kBFloat16);
  auto x = at::randn({16, 64}, o), w = at::randn({32, 64}, o), b = at::randn({32}, o);
  EXPECT_THROW(lt_linear(x.narrow(1, 0, 60).contiguous(), w.narrow(1, 0, 60).contiguous(), b),
               std::invalid_argument);                                    // in % 8 != 0
  EXPECT_THROW(lt_linear(x.to(at::kFloat), w, b), std::invalid_argument);  // fp32 matrix
  EXPECT_THROW(lt_linear(x, w.t().contiguous(), b), std::invalid_argument);  // (in, out)
  EXPECT_THROW(lt_linear(x, w, b.narrow(0, 0, 16)), std::invalid_argument);
  auto shifted = at::randn({16 * 64 + 1}, o).narrow(0, 1, 16 * 64).view({16, 64});  // 2-byte offset
  EXPECT_THROW(lt_linear(shifted, w, b), std::invalid_argument);
  auto dw = at::empty({64, 64}, o.dtype(at::kFloat));
  EXPECT_NO_THROW(lt_wgrad(x, x, dw, false));
  EXPECT_THROW(lt_wgrad(x, x, dw.to(at::kBFloat16), false), std::invalid_argument);  // bf16 dw
  EXPECT_THROW(lt_wgrad(x, x, dw.t(), false), std::invalid_argument);               // not contiguous
  EXPECT_THROW(lt_wgrad(x, x, at::empty({32, 64}, dw.options()), true), std::invalid_argument);
  // One plan per (shape, epilogue, ...): a second call reuses it.
  lt_linear(x, w, b);
  const int64_t plans = lt_plan_cache_size();
  lt_linear(at::randn({16, 64}, o), w, b);
  EXPECT_EQ(lt_plan_cache_size(), plans);
}

#ifdef GPTBENCH_WITH_CUDA
// A shape first seen inside a CUDA-graph capture takes the heuristic's first choice (timing the
// candidates would synchronise the capturing stream); the replay computes the same product.
TEST(LinearLtGpu, FirstCallInsideGraphCapture) {
  if (!have_cuda()) GTEST_SKIP() << "no CUDA GPU";
  if (std::getenv("PYTORCH_NO_CUDA_MEMORY_CACHING"))  // as compute-sanitizer runs set it
    GTEST_SKIP() << "graph capture allocates from the caching allocator, which is off";
  const c10::Device cuda(c10::kCUDA, 0);
  auto x = bf16_exact({40, 72}, 1.0, at::kBFloat16, cuda);  // a shape no other test uses
  auto w = bf16_exact({88, 72}, 0.125, at::kBFloat16, cuda);
  auto b = bf16_exact({88}, 0.5, at::kBFloat16, cuda);
  const int64_t plans = lt_plan_cache_size();
  at::Tensor y;
  at::cuda::CUDAGraph graph;
  auto side = c10::cuda::getStreamFromPool(false, 0);
  {
    c10::cuda::CUDAStreamGuard guard(side);
    graph.capture_begin();
    y = lt_linear(x, w, b);
    graph.capture_end();
  }
  EXPECT_EQ(lt_plan_cache_size(), plans + 1);
  graph.replay();
  torch::cuda::synchronize();
  auto ref = at::addmm(b.to(at::kFloat), x.to(at::kFloat), w.to(at::kFloat).t());
  EXPECT_EQ(close_elementwise(y, ref, kRel, 1.0 / 1024), "");
}
#endif

#ifndef GPTBENCH_WITH_CUDA
TEST(LinearLt, NeedsCudaBuild) {
  auto x = at::randn({4, 8});
  EXPECT_THROW(lt_linear(x, at::randn({8, 8}), at::randn({8})), std::runtime_error);
  EXPECT_FALSE(lt_fp32_bias_supported());
}
#endif

// ------------------------------------------------------------------ model/fused_linear

struct Layer {
  at::Tensor w, b;
};

// A Linear's parameters as leaves: w ~ N(0, 1/in), b ~ N(0, 1/4), values bf16 represents.
Layer make_layer(int64_t in, int64_t out, at::ScalarType dtype, c10::Device device) {
  return {bf16_exact({out, in}, 1.0 / std::sqrt(static_cast<double>(in)), dtype, device)
              .requires_grad_(),
          bf16_exact({out}, 0.5, dtype, device).requires_grad_()};
}

// fp32 copies (new leaves) of tensors: the reference's inputs.
std::vector<at::Tensor> fp32_leaves(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  for (const auto& t : ts) out.push_back(t.detach().to(at::kFloat).requires_grad_());
  return out;
}

// Runs f on the inputs (leaves) and backpropagates dy, `passes` times (the gradients add up, as
// in gradient accumulation); returns {output, grads of the inputs}.
using Fn = std::function<at::Tensor(const std::vector<at::Tensor>&)>;
std::pair<at::Tensor, std::vector<at::Tensor>> run(const Fn& f, const std::vector<at::Tensor>& in,
                                                   const at::Tensor& dy, int passes = 1) {
  at::Tensor y;
  for (int i = 0; i < passes; ++i) {
    y = f(in);
    y.backward(dy.to(y.scalar_type()));
  }
  std::vector<at::Tensor> grads;
  for (const auto& t : in) grads.push_back(t.grad());
  return {y.detach(), grads};
}

Fn linear_with(WeightGrad mode) {
  return [mode](const std::vector<at::Tensor>& t) { return linear_fused(t[0], t[1], t[2], mode); };
}
Fn mlp_with(WeightGrad mode) {
  return [mode](const std::vector<at::Tensor>& t) {
    return mlp_gelu_fused(t[0], t[1], t[2], t[3], t[4], mode);
  };
}
const Fn kLinear = linear_with(WeightGrad::kReturn);
const Fn kLinearRef = [](const std::vector<at::Tensor>& t) { return at::linear(t[0], t[1], t[2]); };
const Fn kMlp = mlp_with(WeightGrad::kReturn);
const Fn kMlpRef = [](const std::vector<at::Tensor>& t) {
  return at::linear(at::gelu(at::linear(t[0], t[1], t[2]), "tanh"), t[3], t[4]);
};

const char* kInputNames[] = {"x", "w", "b", "w_proj", "b_proj"};

TEST(FusedLinear, CpuFallbackMatchesComposition) {
  at::manual_seed(3);
  const c10::Device cpu(c10::kCPU);
  auto x = at::randn({2, 5, 16}).requires_grad_();
  auto fc = make_layer(16, 64, at::kFloat, cpu), proj = make_layer(64, 16, at::kFloat, cpu);
  EXPECT_FALSE(fused_linear_available(x));
  auto dy = at::randn({2, 5, 16});
  for (bool mlp : {false, true}) {
    SCOPED_TRACE(mlp ? "mlp_gelu_fused" : "linear_fused");
    std::vector<at::Tensor> in = {x, fc.w, fc.b};
    if (mlp) in = {x, fc.w, fc.b, proj.w, proj.b};
    auto d = mlp ? dy : at::randn({2, 5, 64});
    auto [y, g] = run(mlp ? kMlp : kLinear, fp32_leaves(in), d);
    auto [y_ref, g_ref] = run(mlp ? kMlpRef : kLinearRef, fp32_leaves(in), d);
    // The same LibTorch ops on the same values: equal up to fp32 summation order (none here).
    EXPECT_EQ(close_elementwise(y, y_ref, 1e-6, 1e-6), "");
    for (size_t i = 0; i < g.size(); ++i)
      EXPECT_EQ(close_elementwise(g[i], g_ref[i], 1e-6, 1e-6), "") << kInputNames[i];
  }
}

TEST(FusedLinear, RejectsShapesThatDoNotFit) {
  auto x = at::randn({4, 16});
  auto fc = make_layer(16, 64, at::kFloat, c10::kCPU), proj = make_layer(64, 16, at::kFloat, c10::kCPU);
  EXPECT_THROW(linear_fused(at::randn({16}), fc.w, fc.b), std::invalid_argument);
  EXPECT_THROW(linear_fused(at::randn({1, 2, 4, 16}), fc.w, fc.b), std::invalid_argument);
  EXPECT_THROW(linear_fused(at::randn({4, 15}), fc.w, fc.b), std::invalid_argument);
  EXPECT_THROW(linear_fused(x, fc.w, proj.b), std::invalid_argument);
  EXPECT_THROW(linear_fused(x, fc.w.t(), fc.b), std::invalid_argument);
  EXPECT_THROW(mlp_gelu_fused(x, fc.w, fc.b, fc.w, proj.b), std::invalid_argument);
  EXPECT_THROW(mlp_gelu_fused(x, fc.w, fc.b, proj.w, fc.b), std::invalid_argument);
  EXPECT_THROW(mlp_gelu_fused(x, fc.w, proj.b, proj.w, proj.b), std::invalid_argument);
}

struct GpuCase {
  std::vector<int64_t> x_shape;  // (B, T, C) or (N, C)
  int64_t hidden;                // the linear's out features; the MLP's 4C
  at::ScalarType x_dtype;        // fp32: a LayerNorm output under autocast; bf16: attention's
};

// Under bf16 autocast with fp32 parameters, as GPT2Impl trains: outputs and every gradient
// against the fp32 composition of the same (bf16-representable) values. GPT-2 small's c_attn
// (768 -> 2304) and MLP (768 -> 3072 -> 768) on 2·1024 rows; an odd row count (37) with 64
// features; 60 features (not a multiple of 8) take the fallback and must match too. `passes`
// forward/backward passes accumulate the gradients; with WeightGrad::kAccumulate the first
// pass's GEMM writes each weight's .grad and the second adds to it.
void check_against_fp32(bool mlp, const GpuCase& gc, WeightGrad mode = WeightGrad::kReturn,
                        int passes = 1) {
  const c10::Device cuda(c10::kCUDA, 0);
  const int64_t c = gc.x_shape.back();
  SCOPED_TRACE(std::string(mlp ? "mlp" : "linear") + " x " + c10::str(gc.x_shape) + " " +
               at::toString(gc.x_dtype) + " hidden " + std::to_string(gc.hidden) +
               (mode == WeightGrad::kAccumulate ? " into .grad" : "") + " passes " +
               std::to_string(passes));
  at::manual_seed(c + gc.hidden);
  auto x = bf16_exact(gc.x_shape, 1.0, gc.x_dtype, cuda).requires_grad_();
  auto fc = make_layer(c, gc.hidden, at::kFloat, cuda), proj = make_layer(gc.hidden, c, at::kFloat, cuda);
  std::vector<at::Tensor> in = {x, fc.w, fc.b};
  if (mlp) in = {x, fc.w, fc.b, proj.w, proj.b};
  auto out_shape = gc.x_shape;
  out_shape.back() = mlp ? c : gc.hidden;
  auto dy = bf16_exact(out_shape, 1.0, at::kBFloat16, cuda);

  std::pair<at::Tensor, std::vector<at::Tensor>> got;
  {
    PrecisionScope bf16(Precision::kBf16, cuda, /*cache=*/true);
    EXPECT_TRUE(fused_linear_available(x));
    poison_allocator(cuda);
    got = run(mlp ? mlp_with(mode) : linear_with(mode), in, dy, passes);
  }
  auto [y_ref, g_ref] = run(mlp ? kMlpRef : kLinearRef, fp32_leaves(in), dy, passes);
  EXPECT_EQ(got.first.scalar_type(), at::kBFloat16);
  EXPECT_EQ(close_elementwise(got.first, y_ref, kRel, kRms), "") << "output";
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_TRUE(got.second[i].defined()) << kInputNames[i];
    EXPECT_EQ(got.second[i].scalar_type(), in[i].scalar_type()) << kInputNames[i];
    EXPECT_EQ(close_elementwise(got.second[i], g_ref[i], kRel, kRms), "") << kInputNames[i];
  }
}

TEST(FusedLinearGpu, LinearMatchesFp32Reference) {
  if (!have_cuda()) GTEST_SKIP() << "no CUDA GPU";
  check_against_fp32(false, {{2, 1024, 768}, 2304, at::kFloat});
  check_against_fp32(false, {{2, 1024, 768}, 768, at::kBFloat16});
  check_against_fp32(false, {{37, 64}, 192, at::kBFloat16});
  check_against_fp32(false, {{37, 60}, 180, at::kFloat});
  check_against_fp32(false, {{2, 1024, 768}, 2304, at::kFloat}, WeightGrad::kAccumulate, 2);
  check_against_fp32(false, {{37, 64}, 192, at::kBFloat16}, WeightGrad::kReturn, 2);
}

TEST(FusedLinearGpu, MlpMatchesFp32Reference) {
  if (!have_cuda()) GTEST_SKIP() << "no CUDA GPU";
  check_against_fp32(true, {{2, 1024, 768}, 3072, at::kFloat});
  check_against_fp32(true, {{37, 64}, 256, at::kBFloat16});
  check_against_fp32(true, {{37, 60}, 240, at::kFloat});
  check_against_fp32(true, {{2, 1024, 768}, 3072, at::kFloat}, WeightGrad::kAccumulate, 2);
  check_against_fp32(true, {{37, 64}, 256, at::kBFloat16}, WeightGrad::kAccumulate, 1);
}

// With WeightGrad::kAccumulate the GEMM writes the weights' .grad: autograd hands the weight's
// hook no gradient (an undefined one; why the data-parallel steps, whose buckets are hooks, use
// kReturn), while the bias's hook sees its gradient.
TEST(FusedLinearGpu, AccumulatedWeightGradientsBypassHooks) {
  if (!have_cuda()) GTEST_SKIP() << "no CUDA GPU";
  const c10::Device cuda(c10::kCUDA, 0);
  auto fc = make_layer(64, 128, at::kFloat, cuda);
  auto x = bf16_exact({32, 64}, 1.0, at::kBFloat16, cuda);
  for (WeightGrad mode : {WeightGrad::kReturn, WeightGrad::kAccumulate}) {
    fc.w.mutable_grad().reset();
    fc.b.mutable_grad().reset();
    int w_hooks = 0, b_hooks = 0;
    const auto hw = fc.w.register_hook([&](const at::Tensor& g) { w_hooks += g.defined(); return g; });
    const auto hb = fc.b.register_hook([&](const at::Tensor& g) { b_hooks += g.defined(); return g; });
    {
      PrecisionScope bf16(Precision::kBf16, cuda, /*cache=*/false);
      linear_fused(x, fc.w, fc.b, mode).sum().backward();
    }
    fc.w.remove_hook(hw);
    fc.b.remove_hook(hb);
    EXPECT_TRUE(fc.w.grad().defined());
    EXPECT_EQ(fc.w.grad().scalar_type(), at::kFloat);
    EXPECT_EQ(w_hooks, mode == WeightGrad::kReturn ? 1 : 0);
    EXPECT_EQ(b_hooks, 1);
  }
}

// fp32 / TF32 training (autocast off, fp32 input) takes the composition.
TEST(FusedLinearGpu, NotAvailableWithoutBf16) {
  if (!have_cuda()) GTEST_SKIP() << "no CUDA GPU";
  auto x = at::randn({4, 16}, at::TensorOptions().device(c10::kCUDA));
  EXPECT_FALSE(fused_linear_available(x));
#ifdef GPTBENCH_WITH_CUDA
  EXPECT_TRUE(fused_linear_available(x.to(at::kBFloat16)));
#endif
}

}  // namespace
}  // namespace gptbench

// Quantization fused into its producer: GPT-2's LayerNorm output to e4m3, per row or per 1×128
// block (ops/fp8/layernorm_fp8.h; docs/fp8.md), the input of the QKV and MLP-up GEMMs of an FP8
// recipe with those scales.
//   impls:   layernorm_fused (ours, one pass: the row in registers is normalised, rounded to
//            bf16 and cast), layernorm_then_fused (our LayerNorm writing bf16, then our
//            quantizer: two passes, CUDA only), layernorm_torch (at::layer_norm, the bf16 cast,
//            LibTorch's eager quantization).
//   shapes:  <model>.ln_out: tokens × d_model of each selected model at B×T; fp32 residual
//            stream x (rows 2^±2 apart in scale), gamma 1 + N(0, 0.1²), beta N(0, 0.1²).
//   checked: e4m3 values and scales bit for bit against the quantizer's reference applied to the
//            row's own bf16 output (ours writes it from the same registers for the check), and
//            that bf16 output against at::layer_norm's within one bf16 rounding (relative error
//            ≤ 4e-3: both round fp32 values that agree to ~1e-6).
//   cost:    bytes = 4·rows·C (x read) + rows·C (e4m3 written) + 4 per scale.
//   names:   quantize/<impl>/e4m3/<model>.ln_out/scale:<row|block1x128>/rows:R/cols:C
// With --gptbench_fp8=true and bf16 among --gptbench_dtypes; on the CPU the layernorm_torch rows
// run (small shapes) and ours are skipped with the reason.
#include <ATen/ATen.h>

#include <memory>

#include "fixtures/bench_name.h"
#include "fixtures/case_runner.h"
#include "fixtures/dtype.h"
#include "fixtures/family.h"
#include "fixtures/verify.h"
#include "ops/fp8/layernorm_fp8.h"

namespace gptbench {
namespace {

constexpr double kEps = 1e-5;

enum class Impl { kFused, kThenFused, kTorch };
constexpr const char* impl_name(Impl i) {
  return i == Impl::kFused ? "layernorm_fused" : i == Impl::kThenFused ? "layernorm_then_fused" : "layernorm_torch";
}

LayerNormFp8 run_impl(Impl impl, const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta,
                      Fp8Granularity g, bool keep_y) {
  switch (impl) {
    case Impl::kFused: return layernorm_fp8(x, gamma, beta, kEps, g, keep_y);
    case Impl::kThenFused: return layernorm_fp8_composed(x, gamma, beta, kEps, g);
    case Impl::kTorch: return layernorm_fp8_torch(x, gamma, beta, kEps, g);
  }
  throw std::invalid_argument("unknown impl");
}

Case make_case(Impl impl, Fp8Granularity g, int64_t rows, int64_t cols, c10::Device device) {
  const auto f32 = at::TensorOptions().device(device).dtype(at::kFloat);
  const at::Tensor x = at::randn({rows, cols}, f32) * at::exp2(at::rand({rows, 1}, f32) * 4 - 2);
  const at::Tensor gamma = 1 + 0.1 * at::randn({cols}, f32), beta = 0.1 * at::randn({cols}, f32);
  if (impl != Impl::kTorch)
    if (auto why = layernorm_fp8_unsupported(x, gamma, g); !why.empty()) throw SkipCase("skipped: " + why);
  Case c;
  c.run = [=] { (void)run_impl(impl, x, gamma, beta, g, /*keep_y=*/false); };
  c.verify = [=]() -> std::string {
    const LayerNormFp8 out = run_impl(impl, x, gamma, beta, g, /*keep_y=*/true);
    if (auto wrong = fp8_bitwise_difference(out.q, quantize_fp8_reference(out.y, g)); !wrong.empty()) return wrong;
    const at::Tensor ref = at::layer_norm(x, {cols}, gamma, beta, kEps).to(at::kBFloat16);
    return check_close(out.y.to(at::kFloat), ref.to(at::kFloat), 4e-3);
  };
  const Fp8ScaleShape s = fp8_scale_shape(g, rows, cols);
  c.cost = {0, 5.0 * static_cast<double>(rows * cols) + 4.0 * static_cast<double>(s.dim0 * s.dim1), PeakKind::kCopy};
  return c;
}

}  // namespace

GPTBENCH_FAMILY(quantize_layernorm, const SuiteInputs& in) {
  if (!in.fp8 || !in.has_dtype("bf16")) return;  // opt-in: --gptbench_fp8=true
  const std::string dtype = e4m3_dtype().name;
  for (const GPT2Config& m : in.models)
    for (Fp8Granularity g : {Fp8Granularity::kRow, Fp8Granularity::kBlock1x128})
      for (Impl impl : {Impl::kTorch, Impl::kThenFused, Impl::kFused}) {
        const int64_t rows = in.tokens(), cols = m.d_model;
        CaseSpec spec;
        spec.name = BenchName("quantize", {impl_name(impl), dtype, m.name + ".ln_out"})
                        .axis("scale", fp8_granularity_name(g))
                        .axis("rows", rows).axis("cols", cols);
        spec.needs_cuda_kernels = impl != Impl::kTorch;
        spec.make = [impl, g, rows, cols, device = in.device] { return make_case(impl, g, rows, cols, device); };
        register_case(std::move(spec));
      }
}

}  // namespace gptbench

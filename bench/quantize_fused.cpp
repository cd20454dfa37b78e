// Quantization fused into its producer (docs/fp8.md): the bf16 activation an FP8 GEMM reads is
// cast to e4m3, per row or per 1×128 block, in the pass that computes it, never written in bf16
// and read back. Two producers:
//   layernorm  GPT-2's LayerNorm output (ops/fp8/layernorm_fp8.h), the QKV and MLP-up input:
//              <model>.ln_out, tokens × d_model; fp32 residual stream x (rows 2^±2 apart in
//              scale), gamma 1 + N(0, 0.1²), beta N(0, 0.1²).
//   gelu       GELU's output (ops/fp8/gelu_fp8.h), the MLP-down input, from the MLP-up GEMM's
//              bf16 output u before its bias: <model>.mlp_act, tokens × d_ff; u N(0, 1) with
//              rows 2^±2 apart in scale, bias N(0, 0.1²) in bf16.
//   impls:   <producer>_fused (ours, one pass: the value in registers is computed, rounded to
//            bf16 and cast), <producer>_then_fused (the producer writing bf16 — our LayerNorm,
//            LibTorch's GELU — then our quantizer: two passes, CUDA only), <producer>_torch
//            (LibTorch's producer, the bf16 cast, LibTorch's eager quantization).
//   checked: e4m3 values and scales bit for bit against the quantizer's reference applied to the
//            producer's own bf16 output (ours writes it from the same registers for the check),
//            and that bf16 output against LibTorch's within one bf16 rounding (relative error
//            ≤ 4e-3: both round fp32 values that agree to ~1e-6).
//   cost:    bytes = the input read (4 per element of x, 2 of u) + 1 per e4m3 element written +
//            4 per scale.
//   names:   quantize/<impl>/e4m3/<model>.<ln_out|mlp_act>/scale:<row|block1x128>/rows:R/cols:C
// With --gptbench_fp8=true and bf16 among --gptbench_dtypes; on the CPU the <producer>_torch
// rows run (small shapes) and ours are skipped with the reason.
#include <ATen/ATen.h>

#include <memory>
#include <string>

#include "fixtures/bench_name.h"
#include "fixtures/case_runner.h"
#include "fixtures/dtype.h"
#include "fixtures/family.h"
#include "fixtures/verify.h"
#include "ops/fp8/gelu_fp8.h"
#include "ops/fp8/layernorm_fp8.h"

namespace gptbench {
namespace {

constexpr double kEps = 1e-5;

enum class Producer { kLayerNorm, kGelu };
enum class Impl { kFused, kThenFused, kTorch };

std::string impl_name(Producer p, Impl i) {
  return std::string(p == Producer::kLayerNorm ? "layernorm" : "gelu") +
         (i == Impl::kFused ? "_fused" : i == Impl::kThenFused ? "_then_fused" : "_torch");
}

// The producer's inputs, and what it computes from them.
struct Inputs {
  Producer producer;
  at::Tensor x, gamma, beta;  // layernorm
  at::Tensor u, bias;         // gelu

  Fp8Produced run(Impl impl, Fp8Granularity g, bool keep_y) const {
    if (producer == Producer::kLayerNorm) {
      if (impl == Impl::kFused) return layernorm_fp8(x, gamma, beta, kEps, g, keep_y);
      return impl == Impl::kThenFused ? layernorm_fp8_composed(x, gamma, beta, kEps, g)
                                      : layernorm_fp8_torch(x, gamma, beta, kEps, g);
    }
    if (impl == Impl::kFused) return gelu_fp8(u, bias, g, keep_y);
    return impl == Impl::kThenFused ? gelu_fp8_composed(u, bias, g) : gelu_fp8_torch(u, bias, g);
  }
  // LibTorch's bf16 output of the producer.
  at::Tensor reference_y() const {
    return producer == Producer::kLayerNorm ? layernorm_bf16_torch(x, gamma, beta, kEps) : gelu_bf16_torch(u, bias);
  }
  std::string unsupported(Fp8Granularity g) const {
    return producer == Producer::kLayerNorm ? layernorm_fp8_unsupported(x, gamma, g) : gelu_fp8_unsupported(u, bias, g);
  }
  double input_bytes_per_element() const { return producer == Producer::kLayerNorm ? 4.0 : 2.0; }
};

Inputs make_inputs(Producer p, int64_t rows, int64_t cols, c10::Device device) {
  const auto f32 = at::TensorOptions().device(device).dtype(at::kFloat);
  const at::Tensor v = at::randn({rows, cols}, f32) * at::exp2(at::rand({rows, 1}, f32) * 4 - 2);
  Inputs in{p, {}, {}, {}, {}, {}};
  if (p == Producer::kLayerNorm) {
    in.x = v;
    in.gamma = 1 + 0.1 * at::randn({cols}, f32);
    in.beta = 0.1 * at::randn({cols}, f32);
  } else {
    in.u = v.to(at::kBFloat16);
    in.bias = (0.1 * at::randn({cols}, f32)).to(at::kBFloat16);
  }
  return in;
}

Case make_case(Producer p, Impl impl, Fp8Granularity g, int64_t rows, int64_t cols, c10::Device device) {
  const auto in = std::make_shared<const Inputs>(make_inputs(p, rows, cols, device));
  if (impl != Impl::kTorch)
    if (auto why = in->unsupported(g); !why.empty()) throw SkipCase("skipped: " + why);
  Case c;
  c.run = [in, impl, g] { (void)in->run(impl, g, /*keep_y=*/false); };
  c.verify = [in, impl, g]() -> std::string {
    const Fp8Produced out = in->run(impl, g, /*keep_y=*/true);
    if (auto wrong = fp8_bitwise_difference(out.q, quantize_fp8_reference(out.y, g)); !wrong.empty()) return wrong;
    return check_close(out.y.to(at::kFloat), in->reference_y().to(at::kFloat), 4e-3);
  };
  const Fp8ScaleShape s = fp8_scale_shape(g, rows, cols);
  c.cost = {0, (in->input_bytes_per_element() + 1.0) * static_cast<double>(rows * cols) + 4.0 * static_cast<double>(s.dim0 * s.dim1),
            PeakKind::kCopy};
  return c;
}

}  // namespace

GPTBENCH_FAMILY(quantize_fused, const SuiteInputs& in) {
  if (!in.fp8 || !in.has_dtype("bf16")) return;  // opt-in: --gptbench_fp8=true
  const std::string dtype = e4m3_dtype().name;
  for (Producer p : {Producer::kLayerNorm, Producer::kGelu})
    for (const GPT2Config& m : in.models)
      for (Fp8Granularity g : {Fp8Granularity::kRow, Fp8Granularity::kBlock1x128})
        for (Impl impl : {Impl::kTorch, Impl::kThenFused, Impl::kFused}) {
          const int64_t rows = in.tokens(), cols = p == Producer::kLayerNorm ? m.d_model : m.d_ff;
          CaseSpec spec;
          spec.name = BenchName("quantize", {impl_name(p, impl), dtype,
                                             m.name + (p == Producer::kLayerNorm ? ".ln_out" : ".mlp_act")})
                          .axis("scale", fp8_granularity_name(g))
                          .axis("rows", rows).axis("cols", cols);
          spec.needs_cuda_kernels = impl != Impl::kTorch;
          spec.make = [p, impl, g, rows, cols, device = in.device] { return make_case(p, impl, g, rows, cols, device); };
          register_case(std::move(spec));
        }
}

}  // namespace gptbench

// Quantize family: bf16 → FP8 e4m3 with amax scaling (ops/fp8/quantize.h; docs/fp8.md), the step
// an FP8 training recipe runs before each FP8 GEMM, for the tensors of a GPT-2 step.
//   impls:   torch (the eager LibTorch composition: abs, amax, 448 / amax, multiply, clamp,
//            to(Float8_e4m3fn), a kernel each), fused (ours: one pass per row / block, two for a
//            whole tensor; CUDA only).
//   scaling: tensor, row, block1x128 (activations in the DeepSeek-V3 recipe), block128x128
//            (its weights).
//   shapes:  per selected model at B×T tokens: <model>.act (tokens × d_model, a Linear's input),
//            <model>.mlp_act (tokens × d_ff), <model>.w_lm_head (padded vocabulary × d_model),
//            <model>.dlogits (tokens × padded vocabulary, the LM head's output gradient).
//   inputs:  fp8_test_input (normal values, 1×128 blocks 2^±2 apart), fresh per case.
//   checked: against the CPU reference of the same math (quantize_fp8_reference), scales and
//            e4m3 values bit for bit: every step is a correctly rounded fp32 operation done in
//            the same order (scale = 448 / amax, x · scale, round to nearest even), so any
//            difference is a bug, not rounding.
//   cost:    bytes = 2·rows·cols (bf16 read) + rows·cols (e4m3 written) + 4 per scale;
//            %peak of the measured device-to-device copy bandwidth.
//   names:   quantize/<impl>/e4m3/<model>.<tensor>/scale:<granularity>/rows:R/cols:C
// Registered where bf16 is among --gptbench_dtypes; on the CPU the torch rows run (small
// shapes), ours are skipped with the reason.
#include <ATen/ATen.h>

#include <memory>

#include "fixtures/bench_name.h"
#include "fixtures/case_runner.h"
#include "fixtures/dtype.h"
#include "fixtures/family.h"
#include "ops/fp8/quantize.h"

namespace gptbench {
namespace {

const Fp8Granularity kGranularities[] = {Fp8Granularity::kTensor, Fp8Granularity::kRow,
                                         Fp8Granularity::kBlock1x128, Fp8Granularity::kBlock128x128};

Case make_quantize_case(const std::string& impl, Fp8Granularity g, int64_t rows, int64_t cols,
                        c10::Device device) {
  const at::Tensor x = fp8_test_input(rows, cols, at::TensorOptions().device(device).dtype(at::kBFloat16));
  if (impl == "fused")
    if (auto why = quantize_fp8_unsupported(x); !why.empty()) throw SkipCase("unsupported: " + why);
  auto out = std::make_shared<Fp8Tensor>();
  Case c;
  if (impl == "torch")
    c.run = [x, g, out] { *out = quantize_fp8_torch(x, g); };
  else
    c.run = [x, g, out] { *out = quantize_fp8(x, g); };
  c.verify = [x, g, out, run = c.run] {
    run();
    return fp8_bitwise_difference(*out, quantize_fp8_reference(x, g));
  };
  c.cost = {0, fp8_quantize_bytes(rows, cols, g), PeakKind::kCopy};
  return c;
}

}  // namespace

GPTBENCH_FAMILY(quantize, const SuiteInputs& in) {
  if (!in.fp8 || !in.has_dtype("bf16")) return;  // opt-in: --gptbench_fp8=true
  struct Shape {
    std::string label;
    int64_t rows, cols;
  };
  std::vector<Shape> shapes;
  for (const GPT2Config& m : in.models) {
    const int64_t t = in.tokens(), v = m.padded_vocab();
    shapes.push_back({m.name + ".act", t, m.d_model});
    shapes.push_back({m.name + ".mlp_act", t, m.d_ff});
    shapes.push_back({m.name + ".w_lm_head", v, m.d_model});
    shapes.push_back({m.name + ".dlogits", t, v});
  }
  const std::string dtype = e4m3_dtype().name;
  for (const Shape& s : shapes)
    for (Fp8Granularity g : kGranularities)
      for (const char* impl : {"torch", "fused"}) {
        CaseSpec spec;
        spec.name = BenchName("quantize", {impl, dtype, s.label})
                        .axis("scale", fp8_granularity_name(g))
                        .axis("rows", s.rows).axis("cols", s.cols);
        spec.needs_cuda_kernels = std::string(impl) == "fused";
        spec.make = [impl = std::string(impl), g, s, device = in.device] {
          return make_quantize_case(impl, g, s.rows, s.cols, device);
        };
        register_case(std::move(spec));
      }
}

}  // namespace gptbench

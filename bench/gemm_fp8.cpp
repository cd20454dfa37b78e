// GEMM family, FP8 rows: C(M, N) bf16 = Â·B̂ᵀ on e4m3 tensor cores for every GEMM of a GPT-2
// training step (the shapes of bench/gemm.cpp: QKV, attention projection, MLP up/down, LM head;
// fwd, dgrad and wgrad at B×T tokens for each selected model) and the same square sweep.
//   impls:   cublaslt (ours, ops/fp8/gemm.h: one cuBLASLt call, the heuristic's algorithm, as
//            at::_scaled_mm takes it), cublaslt_search (with --gptbench_gemm_search=true: the
//            same call with the fastest of the heuristic's first 8 algorithms, timed once per
//            shape), torch (at::_scaled_mm). Fast accumulation off in all.
//   scaling: tensor (one scale per operand), row (per row of A, per output channel of B), block
//            (1×128 blocks of A × 128×128 blocks of B, as DeepSeek-V3 trains); docs/fp8.md.
//   inputs:  random bf16 A (M, K) and B (N, K), 1×128 blocks of different magnitudes
//            (fp8_test_input), quantized once by our quantizer outside the timed region, K-major
//            as the FP8 tensor cores need: a recipe hands dgrad and wgrad their operands
//            transposed from its quantizer, so only M, N, K of a shape matter here.
//   paired:  ours also times at::_scaled_mm on the same tensors beside each of its timed regions
//            and reports speedup_vs_scaled_mm (fixtures/case_runner.h Case::peer_run): a
//            ratio that the clock of a power-capped GPU does not move, unlike the ratio of the
//            two rows' times, taken seconds apart.
//   cost:    2·M·N·K FLOPs; %peak of the FP8 GEMM rate measured at start-up (at::_scaled_mm,
//            8192³, per-tensor scales); mfu_datasheet_pct over the GPU's datasheet dense FP8
//            peak (fixtures/datasheet_peaks.inc; absent when unknown).
//   names:   gemm/<impl>/e4m3/<model>.<layer>.<pass>/scale:<tensor|row|block>/M:../N:../K:..
//            gemm/<impl>/e4m3/square/scale:<...>/M:n/N:n/K:n
//   skipped: with the reason on the CPU, without CUDA, on GPUs of compute capability < 8.9,
//            and for row (cublaslt) and block scaling off compute capability 9.0. Registered
//            where bf16 is among --gptbench_dtypes.
#include <ATen/ATen.h>

#include <algorithm>
#include <limits>
#include <memory>

#include "fixtures/bench_name.h"
#include "fixtures/case_runner.h"
#include "fixtures/device_info.h"
#include "fixtures/dtype.h"
#include "fixtures/family.h"
#include "fixtures/gemm_shapes.h"
#include "fixtures/verify.h"
#include "model/shapes.h"
#include "ops/fp8/gemm.h"
#include "ops/fp8/quantize.h"

namespace gptbench {
namespace {

// Relative Frobenius error allowed against the float64 GEMM of the dequantized operands (the
// values the tensor cores multiply, so quantization error does not count). Left: the rounding
// of C to bf16 (≤ 2⁻⁹ relative per element, ≈ 1.1e-3 RMS) and fp32 accumulation (cuBLASLt and
// LibTorch promote the FP8 MMA's partial sums to fp32 with fast accumulation off: ≤ 1e-4 at
// K = 50,304). 5e-3 leaves 4× headroom; a scale applied to the wrong row or block is off by up
// to 16× there (fp8_test_input) and a wrong layout gives errors near 1.
constexpr double kTolerance = 5e-3;
constexpr int64_t kCheckedRows = 65;  // evenly spaced rows of C, first and last included

const Fp8GemmScaling kScalings[] = {Fp8GemmScaling::kTensor, Fp8GemmScaling::kRow,
                                    Fp8GemmScaling::kBlock};

Case make_fp8_gemm_case(const std::string& impl, Fp8GemmScaling scaling, const GemmShape& s,
                        c10::Device device) {
  if (auto why = gemm_fp8_unsupported(impl, scaling, device); !why.empty())
    throw SkipCase("skipped: " + why);
  const auto bf16 = at::TensorOptions().device(device).dtype(at::kBFloat16);
  struct State {
    Fp8Tensor a, b;
    Fp8ScaledMmArgs torch_args;
    at::Tensor c;  // (M, N) bf16
  };
  auto st = std::make_shared<State>();
  st->a = quantize_fp8(fp8_test_input(s.m, s.k, bf16), fp8_a_granularity(scaling));
  st->b = quantize_fp8(fp8_test_input(s.n, s.k, bf16), fp8_b_granularity(scaling));
  st->c = at::empty({s.m, s.n}, bf16);
  Case c;
  if (impl == "torch") {
    st->torch_args = scaled_mm_args(st->a, st->b, scaling);
    c.run = [st] { gemm_fp8_torch(st->torch_args, st->c); };
  } else {
    const LtAlgoChoice choice = impl == "cublaslt_search" ? LtAlgoChoice::kSearch : LtAlgoChoice::kHeuristic;
    c.run = [st, scaling, choice] { gemm_fp8_cublaslt(st->a, st->b, scaling, st->c, {}, choice); };
    if (gemm_fp8_unsupported("torch", scaling, device).empty()) {  // the peer timed in pairs with ours
      st->torch_args = scaled_mm_args(st->a, st->b, scaling);
      c.peer_name = "scaled_mm";
      c.peer_run = [st] { gemm_fp8_torch(st->torch_args, st->c); };
    }
  }
  c.verify = [st, run = c.run, m = s.m] {
    st->c.fill_(std::numeric_limits<float>::quiet_NaN());  // every element must be written
    run();
    if (st->c.isnan().any().item<bool>()) return std::string("output has NaN: not every element written");
    const at::Tensor rows = at::linspace(0, static_cast<double>(m - 1), std::min(m, kCheckedRows),
                                         st->c.options().dtype(at::kDouble))
                                .round()
                                .to(at::kLong);
    const std::string wrong = check_close(st->c.index_select(0, rows),
                                          gemm_fp8_reference(st->a, st->b, rows), kTolerance);
    return wrong.empty() ? wrong : "sampled rows: " + wrong;
  };
  c.cost = {gemm_flops(s.m, s.n, s.k), 0, PeakKind::kGemmE4m3};
  if (const double datasheet = global_peaks().datasheet_e4m3; datasheet > 0)
    c.rate_counters = [flops = c.cost.flops, datasheet](double seconds, std::map<std::string, double>& k) {
      k["mfu_datasheet_pct"] = 100.0 * flops / seconds / datasheet;
    };
  return c;
}

}  // namespace

GPTBENCH_FAMILY(gemm_fp8, const SuiteInputs& in) {
  if (!in.fp8 || !in.has_dtype("bf16")) return;  // opt-in: --gptbench_fp8=true
  const auto shapes = suite_gemm_shapes(in);  // as bench/gemm.cpp

  const std::string dtype = e4m3_dtype().name;
  for (const auto& [label, shape] : shapes)
    for (Fp8GemmScaling scaling : kScalings)
      for (const char* impl : {"torch", "cublaslt", "cublaslt_search"}) {
        if (std::string(impl) == "torch" && scaling == Fp8GemmScaling::kBlock) continue;  // ops/fp8/gemm.h
        if (std::string(impl) == "cublaslt_search" && !in.gemm_search) continue;          // a sweep: opt-in
        CaseSpec spec;
        spec.name = BenchName("gemm", {impl, dtype, label})
                        .axis("scale", fp8_gemm_scaling_name(scaling))
                        .axis("M", shape.m).axis("N", shape.n).axis("K", shape.k);
        spec.needs_cuda_kernels = true;  // FP8 tensor cores: the CPU rows are skipped, listed
        spec.make = [impl = std::string(impl), scaling, shape = shape, device = in.device] {
          return make_fp8_gemm_case(impl, scaling, shape, device);
        };
        register_case(std::move(spec));
      }
}

}  // namespace gptbench

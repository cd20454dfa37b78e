// GEMM family: C(M,N) = op(A)·op(B) for every GEMM of a GPT-2 training step (QKV, attention
// projection, MLP up/down, LM head; forward, input-gradient and weight-gradient forms) at B×T
// tokens for each selected model size, plus a square sweep.
//   impls:  torch (torch::matmul), cublaslt (our cuBLASLt call, heuristic algorithm),
//           cublaslt_search (fastest of the top 8 candidates, timed once per shape; the
//           heuristic's first unless another is more than 1% faster), and those
//           registered at kGemm (fixtures/extension.h).
//   dtypes: fp32 (TF32 off), tf32, bf16, fp16.   cost: 2·M·N·K FLOPs; %peak of the measured
//           GEMM rate of the same dtype.
//   names:  gemm/<impl>/<dtype>/<model>.<layer>.<pass>/M:../N:../K:..
//           gemm/<impl>/<dtype>/square/M:n/N:n/K:n
#include <ATen/ATen.h>

#include <functional>
#include <limits>

#include "fixtures/bench_name.h"
#include "fixtures/case_runner.h"
#include "fixtures/dtype.h"
#include "fixtures/extension.h"
#include "fixtures/family.h"
#include "fixtures/gemm_shapes.h"
#include "fixtures/family_impls.h"
#include "fixtures/verify.h"
#include "model/shapes.h"
#include "ops/gemm.h"

namespace gptbench {
namespace {

// Tolerance on ‖C − C_ref‖/‖C‖ against an fp64 (or fp32 without TF32) reference on the same
// inputs. fp32: accumulation error of random sums stays near 1e-6. tf32: operands are rounded
// to 10 mantissa bits (unit error 2⁻¹¹ ≈ 5e-4), so the product error is ~3e-4. bf16/fp16:
// operands are exact, the output is rounded to 8 (bf16, ≤ 2⁻⁹ ≈ 2e-3) or 11 mantissa bits
// (fp16, ≤ 2⁻¹² ≈ 2.4e-4), plus fp32 accumulation.
double gemm_tolerance(const std::string& dtype) {
  if (dtype == "fp32") return 2e-5;
  if (dtype == "tf32") return 2e-3;
  if (dtype == "bf16") return 1e-2;
  return 4e-3;  // fp16
}

PeakKind gemm_peak(const std::string& dtype) {
  if (dtype == "fp32") return PeakKind::kGemmFp32;
  if (dtype == "tf32") return PeakKind::kGemmTf32;
  if (dtype == "bf16") return PeakKind::kGemmBf16;
  return PeakKind::kGemmFp16;
}

Case make_gemm_case(const std::function<GemmFn>& fn, const DtypeSpec& spec, const GemmShape& s,
                    c10::Device device) {
  const std::string& dtype = spec.name;
  auto opts = at::TensorOptions().device(device).dtype(spec.type);
  auto a = s.trans_a ? at::randn({s.k, s.m}, opts) : at::randn({s.m, s.k}, opts);
  auto b = s.trans_b ? at::randn({s.n, s.k}, opts) : at::randn({s.k, s.n}, opts);
  auto c = at::empty({s.m, s.n}, opts);
  const GemmArgs args{s.trans_a, s.trans_b, spec.tf32};
  Case cs;
  cs.run = [=]() mutable { fn(a, b, c, args); };
  cs.verify = [=, run = cs.run]() mutable {
    c.fill_(std::numeric_limits<float>::quiet_NaN());  // poison: every element must be written
    run();
    return check_close(c, gemm_reference(a, b, args), gemm_tolerance(dtype));
  };
  cs.cost = {gemm_flops(s.m, s.n, s.k), 0, gemm_peak(dtype)};
  return cs;
}

}  // namespace

GPTBENCH_FAMILY(gemm, const SuiteInputs& in) {
  const auto shapes = suite_gemm_shapes(in);

  auto cublaslt = [](bool search) {
    return [search](const at::Tensor& a, const at::Tensor& b, at::Tensor& c, const GemmArgs& args) {
      gemm_cublaslt(a, b, c, args, search);
    };
  };
  const auto impls = family_impls(kGemm, {{"torch", gemm_torch},
                                          {"cublaslt", cublaslt(false), {}, true},
                                          {"cublaslt_search", cublaslt(true), {}, true}});
  for (const DtypeSpec& dtype : in.dtypes)
    for (const auto& [label, shape] : shapes)
      for (const auto& impl : impls) {
        if (!impl_takes(impl, dtype.name) || (impl.name == "cublaslt_search" && !in.gemm_search))
          continue;
        CaseSpec spec;
        spec.name = BenchName("gemm", {impl.name, dtype.name, label})
                        .axis("M", shape.m).axis("N", shape.n).axis("K", shape.k);
        spec.make = [fn = impl.fn, dtype, shape = shape, device = in.device] {
          return make_gemm_case(fn, dtype, shape, device);
        };
        register_impl_case(impl, std::move(spec), in.device);
      }
}

}  // namespace gptbench

// Linear family, FP8 rows: y = x·Wᵀ for the linear layers of a GPT-2 block, forward and forward
// + backward, in FP8 with per-tensor current or delayed scaling (ops/fp8/linear.h; docs/fp8.md,
// "Linear layer") beside the bf16 layer.
//   impls:   fp8 (ours: our quantizers, which write the transposed copies the backward's GEMMs
//            need in the same pass, and cuBLASLt), scaled_mm (LibTorch's eager quantization and
//            at::_scaled_mm), torch (bf16: at::linear, then dX = dy·W and dW = dyᵀ·x by at::mm).
//   passes:  fwd: quantize x and W (e4m3, amax + cast), one GEMM. fwd_bwd: the forward with X̂ᵀ
//            and Ŵᵀ written too, then dy quantized to e5m2 with dŶᵀ, and the dX and dW GEMMs.
//            The quantization is inside the timed region: it is what FP8 costs beside bf16.
//   shapes:  qkv, attn_proj, mlp_up, mlp_down of each selected model at B×T tokens: the forward
//            GEMMs of fixtures/gemm_shapes.h (M = B·T, N = out features, K = in features).
//   inputs:  random bf16 x (M, K), W (N, K), dy (M, N) with 1×128 blocks of different magnitudes
//            (fp8_test_input), fresh per case.
//   checked: y, dX and dW (65 evenly spaced rows of each) against the float64 layer on the
//            values the GEMMs multiply (the dequantized X̂, Ŵ, dŶ for the FP8 rows, x, W, dy for
//            bf16); ours also its quantized tensors against LibTorch's composition, bit for bit.
//   cost:    2·M·N·K FLOPs (fwd), 6·M·N·K (fwd_bwd); %peak of the FP8 GEMM rate measured at
//            start-up for the FP8 rows (mfu_datasheet_pct over the datasheet FP8 peak), of the
//            bf16 rate for the bf16 rows.
//   scaling: current (every impl) or delayed (ours: x, W and dy each keep an amax history; the
//            same inputs every call, so its scales equal current scaling's and the check below
//            holds bit for bit, while the timed region has one read per tensor instead of two).
//   names:   linear/<fp8|scaled_mm>/e4m3/<fwd|fwd_bwd>/<model>.<layer>/scale:tensor/M:../N:../K:..
//            linear/fp8/e4m3/<fwd|fwd_bwd>/<model>.<layer>/scale:tensor/scaling:delayed/M:../N:../K:..
//            linear/torch/bf16/<fwd|fwd_bwd>/<model>.<layer>/M:../N:../K:..
//   skipped: every row on the CPU (the family compares FP8 with bf16 on one GPU), the FP8 rows
//            on GPUs without FP8 tensor cores (compute capability < 8.9), each with the reason.
//            Registered with --gptbench_fp8=true where bf16 is among --gptbench_dtypes.
#include <ATen/ATen.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fixtures/bench_name.h"
#include "fixtures/case_runner.h"
#include "fixtures/device_info.h"
#include "fixtures/dtype.h"
#include "fixtures/family.h"
#include "fixtures/gemm_shapes.h"
#include "fixtures/verify.h"
#include "model/shapes.h"
#include "ops/fp8/linear.h"
#include "ops/fp8/quantize.h"

namespace gptbench {
namespace {

// Relative Frobenius error allowed against the float64 layer. FP8 rows: the reference multiplies
// the dequantized operands, so quantization error does not count; what is left is each output's
// rounding to bf16 (≈ 1.1e-3 RMS) and fp32 accumulation with fast accumulation off (≤ 1e-4 at a
// reduction of 8,192 tokens for dW): 5e-3, bench/gemm_fp8.cpp's bound. A scale of the wrong
// tensor, an e5m2 value read as e4m3 or a wrong transposed copy gives errors of order 1. bf16
// rows: exact operands, the output's rounding, and at::mm's split-K partial sums, which cuBLAS
// may reduce in bf16: 1e-2, bench/gemm.cpp's bf16 bound.
constexpr double kFp8Tolerance = 5e-3;
constexpr double kBf16Tolerance = 1e-2;
constexpr int64_t kCheckedRows = 65;  // evenly spaced rows of each output, first and last included

const char* const kLayers[] = {"qkv", "attn_proj", "mlp_up", "mlp_down"};
const LinearImpl kImpls[] = {LinearImpl::kTorchBf16, LinearImpl::kScaledMm, LinearImpl::kFp8};

at::Tensor checked_rows(int64_t n, c10::Device device) {
  return at::linspace(0, static_cast<double>(n - 1), std::min(n, kCheckedRows),
                      at::TensorOptions().device(device).dtype(at::kDouble))
      .round()
      .to(at::kLong);
}

struct LinearState {
  at::Tensor x, w, dy;   // inputs (dy with the backward)
  at::Tensor y, dx, dw;  // outputs
  Fp8LinearSaved saved;  // the quantized operands of the last call (FP8 rows)
  std::unique_ptr<Fp8LinearScales> delayed;  // delayed scaling's histories, or null: current
};

// "" when `ours` holds the scale and the FP8 bytes of each copy that LibTorch's composition
// gives for `x`, else what differs.
std::string compare_quantized(const char* what, const at::Tensor& x, const Fp8PerTensor& ours, Fp8Copies copies) {
  const Fp8PerTensor ref = quantize_per_tensor_fp8_torch(x, ours.format, copies);
  if (!at::equal(ours.scale_inv, ref.scale_inv))
    return std::string(what) + ": scale differs from LibTorch's composition";
  for (auto [a, b] : {std::pair{&ours.data, &ref.data}, std::pair{&ours.data_t, &ref.data_t}}) {
    if (a->defined() != b->defined()) return std::string(what) + ": a copy is missing";
    if (!a->defined()) continue;
    if (const int64_t n = (a->view(at::kByte) != b->view(at::kByte)).sum().item<int64_t>(); n > 0)
      return std::string(what) + ": " + std::to_string(n) + " of " + std::to_string(a->numel()) + " " +
             fp8_format_name(ours.format) + " values differ from LibTorch's composition";
  }
  return "";
}

// Our quantization of x, W (and dy) against the composition: a wrong amax would otherwise go
// unseen, since the GEMM check multiplies the values as quantized.
std::string compare_quantized(const LinearState& st, bool backward) {
  const Fp8Copies copies = backward ? Fp8Copies::kBoth : Fp8Copies::kPlain;
  std::string wrong = compare_quantized("x", st.x, st.saved.x, copies);
  if (wrong.empty()) wrong = compare_quantized("W", st.w, st.saved.w, copies);
  if (wrong.empty() && backward) wrong = compare_quantized("dy", st.dy, st.saved.dy, Fp8Copies::kBoth);
  return wrong;
}

Case make_linear_case(LinearImpl impl, bool backward, bool delayed, const GemmShape& s, c10::Device device) {
  if (auto why = linear_unsupported(impl, device); !why.empty()) throw SkipCase("skipped: " + why);
  const auto bf16 = at::TensorOptions().device(device).dtype(at::kBFloat16);
  auto st = std::make_shared<LinearState>();
  if (delayed) st->delayed = std::make_unique<Fp8LinearScales>();
  st->x = fp8_test_input(s.m, s.k, bf16);
  st->w = fp8_test_input(s.n, s.k, bf16);
  st->y = at::empty({s.m, s.n}, bf16);
  if (backward) {
    st->dy = fp8_test_input(s.m, s.n, bf16);
    st->dx = at::empty({s.m, s.k}, bf16);
    st->dw = at::empty({s.n, s.k}, bf16);
  }
  Case c;
  c.run = [st, impl, backward] {
    Fp8LinearScales* d = st->delayed.get();
    linear_forward(impl, st->x, st->w, st->y, st->saved, backward, d);
    if (backward) linear_backward(impl, st->dy, st->x, st->w, st->saved, st->dx, st->dw, d ? &d->dy : nullptr);
  };
  c.verify = [st, impl, backward, run = c.run, m = s.m, n = s.n]() -> std::string {
    std::vector<std::pair<const char*, at::Tensor*>> outputs{{"y", &st->y}};
    if (backward) outputs.insert(outputs.end(), {{"dX", &st->dx}, {"dW", &st->dw}});
    for (const auto& [name, t] : outputs) t->fill_(std::numeric_limits<float>::quiet_NaN());
    run();  // every element must be written
    for (const auto& [name, t] : outputs)
      if (t->isnan().any().item<bool>()) return std::string(name) + " has NaN: not every element written";
    if (impl == LinearImpl::kFp8)
      if (auto wrong = compare_quantized(*st, backward); !wrong.empty()) return wrong;
    // The values the GEMMs multiply, in float64.
    at::Tensor x, w, dy;
    if (linear_is_fp8(impl)) {
      x = dequantize_per_tensor_fp8(st->saved.x);
      w = dequantize_per_tensor_fp8(st->saved.w);
      if (backward) dy = dequantize_per_tensor_fp8(st->saved.dy);
    } else {
      x = st->x.to(at::kDouble);
      w = st->w.to(at::kDouble);
      if (backward) dy = st->dy.to(at::kDouble);
    }
    const at::Tensor rows_m = checked_rows(m, st->y.device()), rows_n = checked_rows(n, st->y.device());
    const LinearReference ref = linear_reference(x, w, dy, rows_m, rows_n);
    const double tol = linear_is_fp8(impl) ? kFp8Tolerance : kBf16Tolerance;
    if (auto wrong = check_close(st->y.index_select(0, rows_m), ref.y, tol); !wrong.empty())
      return "y, sampled rows: " + wrong;
    if (!backward) return "";
    if (auto wrong = check_close(st->dx.index_select(0, rows_m), ref.dx, tol); !wrong.empty())
      return "dX, sampled rows: " + wrong;
    if (auto wrong = check_close(st->dw.index_select(0, rows_n), ref.dw, tol); !wrong.empty())
      return "dW, sampled rows: " + wrong;
    return "";
  };
  c.cost = {(backward ? 3.0 : 1.0) * gemm_flops(s.m, s.n, s.k), 0,
            linear_is_fp8(impl) ? PeakKind::kGemmE4m3 : PeakKind::kGemmBf16};
  if (const double datasheet = global_peaks().datasheet_e4m3; datasheet > 0 && linear_is_fp8(impl))
    c.rate_counters = [flops = c.cost.flops, datasheet](double seconds, std::map<std::string, double>& k) {
      k["mfu_datasheet_pct"] = 100.0 * flops / seconds / datasheet;
    };
  return c;
}

}  // namespace

GPTBENCH_FAMILY(linear_fp8, const SuiteInputs& in) {
  if (!in.fp8 || !in.has_dtype("bf16")) return;  // opt-in: --gptbench_fp8=true
  for (const auto& [label, shape] : suite_gemm_shapes(in))
    for (const char* layer : kLayers) {
      const std::string pass = std::string(".") + layer + ".fwd";  // y = x·Wᵀ: M tokens, N out, K in
      if (label.size() <= pass.size() || label.compare(label.size() - pass.size(), pass.size(), pass) != 0)
        continue;
      const std::string model_layer = label.substr(0, label.size() - 4);  // "<model>.<layer>"
      for (bool backward : {false, true})
        for (LinearImpl impl : kImpls)
          for (bool delayed : {false, true}) {
            if (delayed && impl != LinearImpl::kFp8) continue;  // delayed scaling is ours alone
            BenchName name("linear", {linear_impl_name(impl), linear_is_fp8(impl) ? e4m3_dtype().name : "bf16",
                                      backward ? "fwd_bwd" : "fwd", model_layer});
            if (linear_is_fp8(impl)) name.axis("scale", fp8_gemm_scaling_name(Fp8GemmScaling::kTensor));
            if (delayed) name.axis("scaling", "delayed");
            CaseSpec spec;
            spec.name = name.axis("M", shape.m).axis("N", shape.n).axis("K", shape.k);
            spec.needs_cuda_kernels = true;  // the CPU rows are listed and skipped with the reason
            spec.make = [impl, backward, delayed, shape = shape, device = in.device] {
              return make_linear_case(impl, backward, delayed, shape, device);
            };
            register_case(std::move(spec));
          }
    }
}

}  // namespace gptbench

// Attention family: softmax(q·kᵀ/√d [+ causal mask])·v over an L × d grid, forward and
// forward+backward, for every way LibTorch can compute it, and our FP8 forward.
//   impls:  naive (matmul → mask → softmax → matmul, the L×L scores materialised: memory grows
//           as L² and runs out at long contexts — an expected, reported result), sdpa_math,
//           sdpa_efficient, sdpa_flash, sdpa_cudnn (at::scaled_dot_product_attention with the
//           backend forced through the global context and restored after; no row for a dtype a
//           backend never takes — flash and cuDNN in fp32 on a GPU, attn_backend_takes — and a
//           point it rejects otherwise is skipped with LibTorch's reason), flash — our
//           FlashAttention-2 kernel (ops/attention/; bf16/fp16 on CUDA, no fp32 rows),
//           flash_sm90 — our Hopper forward (TMA + wgmma, d = 64 and 128 on compute capability
//           9.0; elsewhere skipped with the reason) and its Hopper backward — and flash_sm90_fp8
//           — our Hopper forward on e4m3 tensor cores (ops/attention/flash_fp8.h; dtype segment
//           e4m3), forward only, beside every bf16 forward point at d = 128: random bf16 q, k, v
//           quantized once (a scale per 128-row block) outside the timed region, as an FP8
//           producer would hand them over, so the timed region is the FP8 attention alone;
//           verified against the naive attention of the dequantized inputs; counters
//           err_vs_bf16_rel and err_vs_bf16_max_abs compare its output with flash_sm90's on the
//           unquantized bf16 inputs (what FP8 costs in accuracy); skipped with the reason where
//           it cannot run (no GPU of compute capability 9.0, no CUDA kernels); and those
//           registered at kAttention (fixtures/extension.h; forward_only ones have no fwd_bwd
//           rows), checked and skipped as the LibTorch backends are.
//   dtypes: fp32 (TF32 off), bf16 (of those selected with --gptbench_dtypes); e4m3 (flash_sm90_fp8)
//           where bf16 is selected.
//   grid:   B = --gptbench_batch (8 on a GPU), H = heads of each selected model (small: 12).
//           GPU default: L ∈ {1024, 4096} × d ∈ {64, 128}, causal; --gptbench_full=true:
//           L ∈ {128, ..., 16384} × d ∈ {16, 32, 64, 128}, causal and non-causal.
//           CPU: L ∈ {32, 64} (≤ --gptbench_seq) × d ∈ {16, 32} (so no FP8 points).
//   cost:   4·B·H·L²·d FLOPs forward (½ causal), backward 2.5× forward; %peak of the measured
//           GEMM rate of the dtype (bf16, or fp32 without TF32), none for e4m3 (see
//           make_attention_fp8_case); peak_mem_bytes of the timed region.
//   names:  attention/<impl>/<dtype>/<causal|noncausal>/<fwd|fwd_bwd>/B:b/H:h/L:l/d:d
//           attention/flash_sm90_fp8/e4m3/<causal|noncausal>/fwd/B:b/H:h/L:l/d:128
//           fwd_bwd names end in launch:<graph|eager> (graph: replays of a CUDA graph of the
//           call, device time; eager: as launched, autograd on the host between the passes)
#include <ATen/ATen.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "fixtures/bench_name.h"
#include "fixtures/case_runner.h"
#include "fixtures/dtype.h"
#include "fixtures/extension.h"
#include "fixtures/family.h"
#include "fixtures/family_impls.h"
#include "fixtures/verify.h"
#include "model/config.h"
#include "ops/attention/flash.h"
#include "ops/attention/flash_fp8.h"
#include "ops/attention_ref.h"
#include "ops/tf32_guard.h"

namespace gptbench {
namespace {

struct AttnPoint {
  std::string impl;
  std::function<AttentionFn> fn;
  DtypeSpec dtype;
  bool causal, backward;
  int64_t b, h, l, d;
};

// Relative Frobenius error allowed against the naive attention in float64 (CPU) or fp32 with
// TF32 off (GPU), on the first batch element's first two heads.
//   fp32: the backends differ by summation order and blocking (~1e-6); 1e-4.
//   bf16: inputs are exact, but P = softmax(...) is rounded to bf16 before P·V in the fused
//     kernels and the output to 8 significant bits (unit 3.9e-3): ~5e-3 in norm; 2e-2.
//     Gradients go through two more bf16 products and dS = P∘(dP − D), which cancels: 5e-2.
double attention_tolerance(const std::string& dtype, bool grad) {
  if (dtype == "fp32") return 1e-4;
  return grad ? 5e-2 : 2e-2;
}

Case make_attention_case(const AttnPoint& p, c10::Device device) {
  const DtypeSpec& spec = p.dtype;
  auto opts = at::TensorOptions().device(device).dtype(spec.type);
  struct State {
    at::Tensor q, k, v, dout, out;  // (B, H, L, d)
  };
  auto st = std::make_shared<State>();
  st->q = at::randn({p.b, p.h, p.l, p.d}, opts);
  st->k = at::randn({p.b, p.h, p.l, p.d}, opts);
  st->v = at::randn({p.b, p.h, p.l, p.d}, opts);
  if (p.backward) {
    for (auto* t : {&st->q, &st->k, &st->v}) t->requires_grad_(true);
    st->dout = at::randn({p.b, p.h, p.l, p.d}, opts);
  }
  const bool causal = p.causal, backward = p.backward, tf32 = spec.tf32;
  auto run = [st, fn = p.fn, causal, backward, tf32] {
    Tf32Guard tf32_guard(tf32);
    if (!backward) {
      st->out = fn(st->q, st->k, st->v, causal);
      return;
    }
    for (auto* t : {&st->q, &st->k, &st->v}) t->mutable_grad().reset();  // no accumulation
    auto out = fn(st->q, st->k, st->v, causal);
    out.backward(st->dout);
    st->out = out.detach();
  };
  // A backend that cannot run this point throws at its first call: say which, with LibTorch's
  // reason, and what runs it instead.
  if (auto why = attention_unsupported_reason(run); !why.empty())
    throw SkipCase("unsupported: " + p.impl + " does not run " + spec.name + " d=" +
                   std::to_string(p.d) + " on this device (" + why +
                   "); naive and sdpa_math run every point");

  Case c;
  c.run = run;
  c.outputs = [st] {
    return std::vector<at::Tensor>{st->out, st->q.grad(), st->k.grad(), st->v.grad()};
  };
  c.verify = [st, run, causal, backward, dtype = p.dtype.name, h = p.h, device] {
    run();
    const int64_t heads = std::min<int64_t>(h, 2);
    auto slice = [heads](const at::Tensor& t) {  // (1, heads, L, d): heads are independent
      return t.detach().narrow(0, 0, 1).narrow(1, 0, heads);
    };
    const auto ref_type = device.is_cuda() ? at::kFloat : at::kDouble;
    auto ref_in = [&](const at::Tensor& t) {
      return slice(t).to(ref_type).clone().requires_grad_(backward);
    };
    Tf32Guard no_tf32(false);
    auto q = ref_in(st->q), k = ref_in(st->k), v = ref_in(st->v);
    auto ref = attention_forward(q, k, v, causal, AttnBackend::kNaive);
    std::string wrong = check_close(slice(st->out), ref, attention_tolerance(dtype, false));
    if (!wrong.empty() || !backward) return wrong.empty() ? wrong : "output: " + wrong;
    ref.backward(slice(st->dout).to(ref_type));
    const char* names[] = {"dq", "dk", "dv"};
    const at::Tensor* mine[] = {&st->q, &st->k, &st->v};
    const at::Tensor* theirs[] = {&q, &k, &v};
    for (int i = 0; i < 3; ++i) {
      wrong = check_close(slice(mine[i]->grad()), theirs[i]->grad(),
                          attention_tolerance(dtype, true));
      if (!wrong.empty()) return std::string(names[i]) + ": " + wrong;
    }
    return std::string();
  };
  c.cost.flops = attention_flops(p.b, p.h, p.l, p.d, p.causal, false) +
                 (p.backward ? attention_flops(p.b, p.h, p.l, p.d, p.causal, true) : 0.0);
  c.cost.peak = p.dtype.name == "bf16" ? PeakKind::kGemmBf16 : PeakKind::kGemmFp32;
  return c;
}

// ---- FP8 forward (flash_sm90_fp8/e4m3) -------------------------------------------------------

// Relative Frobenius error allowed against the naive attention in fp32 (TF32 off) of the
// dequantized inputs — the values the kernel multiplies, so only its own roundings count. P =
// exp(S − m) is rounded to e4m3 before P·V (3 mantissa bits: ≤ 2^-4 relative per entry, RMS
// ≤ 2^-4/√3 ≈ 3.6e-2), and o, a P-weighted sum of random values, keeps about that RMS relative
// error; then o is rounded to bf16 (2^-9). A float64 emulation of these roundings on randn inputs
// gives 1.2–2.7e-2 for L = 17 … 4,097; allowed 4e-2 (tests/ops/attention/flash_fp8_test.cpp
// derives the same bound). A wrong key order in V gives 0.8–1.0, a wrong block scale errors of
// the order of the scales' differences.
constexpr double kFp8Tolerance = 4e-2;

// The quantized operands of the first batch element's first `heads` heads, each contiguous (all
// six are (B, H, ...)).
FlashFp8Inputs first_heads(const FlashFp8Inputs& in, int64_t heads) {
  auto part = [heads](const at::Tensor& t) {
    return t.narrow(0, 0, 1).narrow(1, 0, heads).contiguous();
  };
  return {part(in.q), part(in.k), part(in.vt), part(in.q_scale), part(in.k_scale),
          part(in.v_scale)};
}

// attention/flash_sm90_fp8/e4m3/...: the FP8 forward over random bf16 inputs quantized once.
Case make_attention_fp8_case(int64_t b, int64_t h, int64_t l, bool causal, c10::Device device) {
  if (!device.is_cuda()) throw SkipCase("skipped: flash_sm90_fp8 runs on CUDA only");
  constexpr int64_t d = 128;
  const auto opts = at::TensorOptions().device(device).dtype(at::kBFloat16);
  const at::Tensor q = at::randn({b, h, l, d}, opts), k = at::randn({b, h, l, d}, opts),
                   v = at::randn({b, h, l, d}, opts);
  if (auto why = flash_fp8_unsupported(q, k, v); !why.empty())
    throw SkipCase("unsupported: " + why);
  struct State {
    FlashFp8Inputs in;
    at::Tensor o;  // (B, H, L, 128) bf16
  };
  auto st = std::make_shared<State>();
  // Outside the timed region: the inputs arrive quantized, as from an FP8 producer.
  st->in = flash_attention_quantize_fp8(q, k, v);
  auto run = [st, causal] { st->o = flash_attention_forward_fp8(st->in, causal).o; };

  Case c;
  c.run = run;
  c.verify = [st, run, causal, h] {
    run();
    const int64_t heads = std::min<int64_t>(h, 2);
    const FlashFp8Dequantized x = flash_attention_dequantize_fp8(first_heads(st->in, heads));
    Tf32Guard no_tf32(false);
    const auto ref = attention_forward(x.q, x.k, x.v, causal, AttnBackend::kNaive);
    const std::string wrong =
        check_close(st->o.narrow(0, 0, 1).narrow(1, 0, heads), ref, kFp8Tolerance);
    return wrong.empty() ? wrong : "output: " + wrong;
  };
  // What FP8 costs in accuracy, once, before timing: against our bf16 Hopper kernel on the same
  // unquantized inputs (flash_fp8_unsupported passing means it runs here too).
  run();
  const at::Tensor bf16 = flash_attention_forward(q, k, v, causal, FlashKernel::kSm90).o;
  c.counters["err_vs_bf16_rel"] = relative_error(st->o, bf16);
  c.counters["err_vs_bf16_max_abs"] = max_abs_error(st->o, bf16);
  c.cost.flops = attention_flops(b, h, l, d, causal, false);
  // No %peak: e4m3 tensor cores run at twice the bf16 rate on Hopper, so a share of the measured
  // bf16 GEMM rate would read up to 200%, and no FP8 GEMM peak is measured (fixtures/cost.h).
  c.cost.peak = PeakKind::kNone;
  return c;
}

// LibTorch's ways and our kernels (ops/attention_ref.h), each in the dtypes it takes on this
// device (every one takes bf16, so none has an empty list, which would mean all).
std::vector<Impl<AttentionFn>> own_attention_impls(bool gpu) {
  std::vector<Impl<AttentionFn>> own;
  for (const std::string& name : attn_backend_names()) {
    const AttnBackend backend = parse_attn_backend(name);
    Impl<AttentionFn> impl{name, [backend](const at::Tensor& q, const at::Tensor& k,
                                           const at::Tensor& v, bool causal) {
                             return attention_forward(q, k, v, causal, backend);
                           }};
    for (const char* dtype : {"fp32", "bf16"})
      if (attn_backend_takes(backend, dtype_spec(dtype).type, gpu)) impl.options.dtypes.push_back(dtype);
    // our kernels (ops/attention/)
    impl.needs_cuda_kernels = backend == AttnBackend::kFlash || backend == AttnBackend::kFlashSm90;
    impl.options.cuda_only = impl.needs_cuda_kernels || backend == AttnBackend::kSdpaEfficient ||
                             backend == AttnBackend::kSdpaCudnn;
    own.push_back(std::move(impl));
  }
  return own;
}

}  // namespace

GPTBENCH_FAMILY(attention, const SuiteInputs& in) {
  const bool gpu = in.on_cuda();
  std::vector<int64_t> ls, ds;
  std::vector<bool> masks = {true};
  if (gpu && in.full) {
    ls = {128, 256, 512, 1024, 2048, 4096, 8192, 16384};
    ds = {16, 32, 64, 128};
    masks = {true, false};
  } else if (gpu) {
    ls = {1024, 4096};
    ds = {64, 128};
  } else {
    for (int64_t l : {16, 32, 64, 128})
      if ((in.full || l >= 32) && l <= in.seq) ls.push_back(l);
    ds = {16, 32};
    if (in.full) masks = {true, false};
  }
  std::set<int64_t> heads;
  for (const GPT2Config& m : in.models) heads.insert(m.n_head);
  const auto dtypes = in.dtypes_among({"fp32", "bf16"});
  const auto impls = family_impls(kAttention, own_attention_impls(gpu));

  for (int64_t h : heads)
    for (const auto& dtype : dtypes)
      for (bool causal : masks)
        for (bool backward : {false, true})
          for (int64_t l : ls)
            for (int64_t d : ds) {
              for (const auto& impl : impls) {
                if (!impl_takes(impl, dtype.name, backward)) continue;
                AttnPoint p{impl.name, impl.fn, dtype, causal, backward, in.batch, h, l, d};
                CaseSpec spec;
                spec.name = BenchName("attention", {impl.name, dtype.name, causal ? "causal" : "noncausal",
                                                    backward ? "fwd_bwd" : "fwd"})
                                .axis("B", in.batch).axis("H", h).axis("L", l).axis("d", d);
                spec.graph_form = backward;  // autograd's host work between the two passes
                spec.make = [p, device = in.device] {
                  return make_attention_case(p, device);
                };
                register_impl_case(impl, std::move(spec), in.device);
              }
              // The FP8 forward beside each bf16 forward point at d = 128.
              if (dtype.name != "bf16" || backward || d != 128) continue;
              CaseSpec spec;
              spec.needs_cuda_kernels = true;
              spec.name = BenchName("attention", {"flash_sm90_fp8", "e4m3",
                                                  causal ? "causal" : "noncausal", "fwd"})
                              .axis("B", in.batch).axis("H", h).axis("L", l).axis("d", d);
              spec.make = [b = in.batch, h, l, causal, device = in.device] {
                return make_attention_fp8_case(b, h, l, causal, device);
              };
              register_case(std::move(spec));
            }
}

}  // namespace gptbench

// Backward family: forward alone and forward+backward of each part of a GPT-2 training step, and
// of the whole model, in three precisions — how much the backward pass costs next to the forward.
//   components (at B = --gptbench_batch, T = --gptbench_seq, for each selected model):
//           linear.<qkv|attn_proj|mlp_up|mlp_down|lm_head> (x·Wᵀ + b at the GPT-2 shapes; the LM
//           head uses the padded vocabulary), layernorm, gelu (tanh), attention.naive and
//           attention.sdpa (causal, (B, H, T, d_head)), mlp, block (one transformer block);
//           model: the whole GPT-2 (shared model, loss = cross-entropy) for each context
//           T ∈ {128, 256, 512, 1024} up to --gptbench_seq (CPU: 32, 64).
//   precision: fp32 (TF32 off), tf32 (fp32 storage, TF32 matmuls), bf16 (fp32 parameters under
//           LibTorch's bf16 autocast, as mixed-precision training runs), in the name; of those
//           selected with --gptbench_dtypes.
//   passes: fwd (a training forward: autograd records the graph) and fwd_bwd (forward, then
//           backward from a fixed random output gradient, or from the loss for the model;
//           gradients are reset to none before each call, so nothing accumulates).
//   cost:   matmul FLOPs (2·M·N·K per linear, attention 4·B·H·T²·d ×½ causal; backward 2× the
//           linears and 2.5× attention; the model 6·N + 6·L·T·d per token for fwd+bwd, a third
//           of it for fwd) with %peak of the GEMM rate of the precision; layernorm and gelu count
//           bytes (fwd: read x, write y; bwd adds read dy, x and write dx) against copy bandwidth.
//   counter "bwd/fwd" (fwd_bwd only): at case build, after a warm-up, the forward alone and the
//           forward+backward are each timed three times (fastest kept) and the counter is
//           t(fwd+bwd)/t(fwd) − 1, the backward's cost in forwards (the seed studies found ≈ 2).
//           "fwd_ms" is that forward time.
//   verify: the same code on one sequence (B = 1) against float64 (on the GPU for GPU runs) with
//           the same inputs and parameters: the output and two gradients.
//   names:  backward/<component>/<precision>/<fwd|fwd_bwd>/<model>/B:b/T:t/launch:<graph|eager>
//           (graph: replays of the call captured in a CUDA graph, device time; eager: as launched)
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/module.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fixtures/bench_name.h"
#include "fixtures/family.h"
#include "fixtures/model_cache.h"
#include "fixtures/case_runner.h"
#include "fixtures/timer.h"
#include "train/step.h"
#include "fixtures/verify.h"
#include "model/config.h"
#include "model/gpt2.h"
#include "ops/tf32_guard.h"

namespace gptbench {
namespace {

// One problem: leaves that require grad (inputs, then parameters) and a forward over them.
struct Problem {
  std::vector<at::Tensor> leaves;
  std::function<at::Tensor()> forward;
  at::Tensor dout;                   // output gradient; undefined for a scalar loss
  at::Tensor out;                    // the last call's output (detached: no graph kept alive)
  std::shared_ptr<void> keep;        // modules and data the forward refers to
  Cost fwd_cost, bwd_cost;
  // Drops the gradients (the shared model's would otherwise outlive the case).
  ~Problem() {
    for (auto& t : leaves)
      if (t.defined()) t.mutable_grad().reset();
  }
};

struct Setup {
  std::string component;
  GPT2Config model;
  int64_t batch, seq;
};

constexpr uint64_t kDataSeed = 77;

// Seeded CPU randn, moved: the same values on every device and in every dtype.
at::Tensor seeded_randn(at::IntArrayRef shape, uint64_t seed, c10::Device device,
                        at::ScalarType dtype, double scale = 1.0) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return (at::randn(shape, gen, at::TensorOptions().dtype(at::kFloat)) * scale)
      .to(device, dtype)
      .requires_grad_(true);
}

std::vector<at::Tensor> module_leaves(const at::Tensor& x, const torch::nn::Module& m) {
  std::vector<at::Tensor> v = {x};
  for (const auto& p : m.parameters()) v.push_back(p);
  return v;
}

// Copies the parameters of `from` into `to` (same architecture), then moves `to`.
void copy_parameters(torch::nn::Module& to, const torch::nn::Module& from, c10::Device device,
                     at::ScalarType dtype) {
  at::NoGradGuard no_grad;
  auto src = from.named_parameters();
  for (auto& p : to.named_parameters()) p.value().copy_(src[p.key()]);
  to.to(device, dtype);
}

struct LinearShape {
  int64_t in, out;
  bool bias;
};
LinearShape linear_shape(const std::string& name, const GPT2Config& cfg) {
  const int64_t C = cfg.d_model;
  if (name == "linear.qkv") return {C, 3 * C, true};
  if (name == "linear.attn_proj") return {C, C, true};
  if (name == "linear.mlp_up") return {C, cfg.d_ff, true};
  if (name == "linear.mlp_down") return {cfg.d_ff, C, true};
  return {C, cfg.padded_vocab(), false};  // linear.lm_head (tied, no bias)
}

const std::vector<std::string>& components() {
  static const std::vector<std::string> kNames = {
      "linear.qkv", "linear.attn_proj", "linear.mlp_up", "linear.mlp_down", "linear.lm_head",
      "layernorm",  "gelu",             "attention.naive", "attention.sdpa", "mlp",
      "block",      "model"};
  return kNames;
}

// Builds the problem of `s` on device in dtype (fp32 for timing, fp64 for the reference).
std::shared_ptr<Problem> build(const Setup& s, c10::Device device, at::ScalarType dtype) {
  const GPT2Config& cfg = s.model;
  const int64_t B = s.batch, T = s.seq, C = cfg.d_model, M = B * T;
  auto p = std::make_shared<Problem>();
  const std::string& c = s.component;
  if (c.rfind("linear.", 0) == 0) {
    const LinearShape sh = linear_shape(c, cfg);
    auto x = seeded_randn({M, sh.in}, kDataSeed, device, dtype);                // (B·T, in)
    auto w = seeded_randn({sh.out, sh.in}, kDataSeed + 1, device, dtype, 0.02);  // (out, in)
    at::Tensor b;
    if (sh.bias) b = seeded_randn({sh.out}, kDataSeed + 2, device, dtype, 0.02);
    p->leaves = {x, w};
    if (sh.bias) p->leaves.push_back(b);
    p->forward = [x, w, b] { return at::linear(x, w, b); };
    p->dout = seeded_randn({M, sh.out}, kDataSeed + 3, device, dtype).detach();
    p->fwd_cost.flops = gemm_flops(M, sh.out, sh.in);
    p->bwd_cost.flops = 2 * gemm_flops(M, sh.out, sh.in);
  } else if (c == "layernorm") {
    auto x = seeded_randn({B, T, C}, kDataSeed, device, dtype);                  // (B, T, C)
    auto w = (seeded_randn({C}, kDataSeed + 1, device, dtype, 0.1) + 1).detach().requires_grad_();
    auto b = seeded_randn({C}, kDataSeed + 2, device, dtype, 0.1);
    p->leaves = {x, w, b};
    p->forward = [x, w, b, C] { return at::layer_norm(x, {C}, w, b, 1e-5); };
    p->dout = seeded_randn({B, T, C}, kDataSeed + 3, device, dtype).detach();
    p->fwd_cost.bytes = 2.0 * M * C * 4;  // read x, write y (fp32; autocast keeps it fp32)
    p->bwd_cost.bytes = 3.0 * M * C * 4;  // read dy and x, write dx
  } else if (c == "gelu") {
    auto x = seeded_randn({B, T, cfg.d_ff}, kDataSeed, device, dtype);          // (B, T, 4C)
    p->leaves = {x};
    p->forward = [x] { return at::gelu(x, "tanh"); };
    p->dout = seeded_randn({B, T, cfg.d_ff}, kDataSeed + 3, device, dtype).detach();
    p->fwd_cost.bytes = 2.0 * M * cfg.d_ff * 4;
    p->bwd_cost.bytes = 3.0 * M * cfg.d_ff * 4;
  } else if (c == "attention.naive" || c == "attention.sdpa") {
    const int64_t H = cfg.n_head, hd = cfg.head_dim();
    auto q = seeded_randn({B, H, T, hd}, kDataSeed, device, dtype);             // (B, H, T, hd)
    auto k = seeded_randn({B, H, T, hd}, kDataSeed + 1, device, dtype);
    auto v = seeded_randn({B, H, T, hd}, kDataSeed + 2, device, dtype);
    const AttnImpl impl = c == "attention.naive" ? AttnImpl::kNaive : AttnImpl::kSdpa;
    p->leaves = {q, k, v};
    p->forward = [q, k, v, impl] { return causal_attention(q, k, v, impl); };
    p->dout = seeded_randn({B, H, T, hd}, kDataSeed + 3, device, dtype).detach();
    p->fwd_cost.flops = attention_flops(B, H, T, hd, true, false);
    p->bwd_cost.flops = attention_flops(B, H, T, hd, true, true);
  } else if (c == "mlp" || c == "block") {
    at::manual_seed(kDataSeed);  // parameters are initialised on the CPU: same on any device
    auto x = seeded_randn({B, T, C}, kDataSeed, device, dtype);                  // (B, T, C)
    const double linear_flops = gemm_flops(M, cfg.d_ff, C) * 2 +
                                (c == "block" ? gemm_flops(M, 4 * C, C) : 0.0);  // +QKV, proj
    if (c == "mlp") {
      MLP m(cfg);
      m->to(device, dtype);
      p->leaves = module_leaves(x, *m);
      p->forward = [m, x]() mutable { return m->forward(x); };
      p->keep = m.ptr();
    } else {
      Block m(cfg, AttnImpl::kSdpa);
      m->to(device, dtype);
      p->leaves = module_leaves(x, *m);
      p->forward = [m, x]() mutable { return m->forward(x); };
      p->keep = m.ptr();
    }
    const double attn = c == "block" ? attention_flops(B, cfg.n_head, T, cfg.head_dim(), true, false) : 0.0;
    p->dout = seeded_randn({B, T, C}, kDataSeed + 3, device, dtype).detach();
    p->fwd_cost.flops = linear_flops + attn;
    p->bwd_cost.flops = 2 * linear_flops + 2.5 * attn;
  } else {  // model: the shared model for timing; a float64 copy of it for the reference
    GPT2 shared = shared_model(s.model, at::kFloat, device);
    GPT2 m = shared;
    if (dtype != at::kFloat) {
      m = GPT2(cfg);
      copy_parameters(*m, *shared, device, dtype);
    }
    auto batch = synthetic_batch(cfg, B, T, device, kDataSeed);
    for (const auto& prm : m->parameters()) p->leaves.push_back(prm);
    p->forward = [m, batch]() mutable { return m->loss(batch.idx, batch.targets); };
    p->keep = m.ptr();
    const double per_token = model_flops_per_token(param_count(cfg), cfg.n_layer, T, C);
    p->fwd_cost.flops = per_token * M / 3;
    p->bwd_cost.flops = per_token * M * 2 / 3;
  }
  return p;
}

// One call: forward, and backward when asked, in the given precision.
void run_problem(Problem& p, bool backward, Precision precision, c10::Device device) {
  PrecisionScope scope(precision, device);
  if (backward)
    for (auto& t : p.leaves) t.mutable_grad().reset();
  at::Tensor out = p.forward();
  p.out = out.detach();
  if (!backward) return;
  if (!p.dout.defined()) {
    out.backward();
  } else {
    if (p.dout.scalar_type() != out.scalar_type()) p.dout = p.dout.to(out.scalar_type());
    out.backward(p.dout);
  }
}

// Relative Frobenius error allowed against float64.
//   fp32: rounding and reassociation, ~1e-6 through a whole model; 1e-4.
//   tf32: matmul operands rounded to 11 significant bits (unit 4.9e-4), a few GEMMs deep: 2e-2.
//   bf16 autocast: operands rounded to 8 bits (unit 3.9e-3) in every GEMM: outputs 3e-2,
//   gradients (two more GEMMs and, in attention, a cancelling softmax backward) 8e-2.
double backward_tolerance(const std::string& precision, bool grad) {
  if (precision == "fp32") return 1e-4;
  if (precision == "tf32") return 2e-2;
  return grad ? 8e-2 : 3e-2;
}

std::string verify_problem(const Setup& s, const std::string& precision, bool backward,
                           c10::Device device) {
  Setup one = s;
  one.batch = 1;
  auto mine = build(one, device, at::kFloat);
  auto ref = build(one, device, at::kDouble);
  at::Tensor out, ref_out;
  {
    PrecisionScope scope(parse_precision(precision), device);
    for (auto& t : mine->leaves) t.mutable_grad().reset();
    out = mine->forward();
    if (backward) out.backward(mine->dout.defined() ? mine->dout.to(out.scalar_type()) : at::Tensor());
  }
  {
    Tf32Guard no_tf32(false);
    ref_out = ref->forward();
    if (backward) ref_out.backward(ref->dout.defined() ? ref->dout : at::Tensor());
  }
  std::string wrong = check_close(out, ref_out, backward_tolerance(precision, false));
  if (!wrong.empty()) return "output: " + wrong;
  if (backward) {
    for (size_t i : {size_t{0}, mine->leaves.size() - 1}) {
      wrong = check_close(mine->leaves[i].grad(), ref->leaves[i].grad(),
                          backward_tolerance(precision, true));
      if (!wrong.empty()) return "gradient of leaf " + std::to_string(i) + ": " + wrong;
    }
  }
  for (auto& t : mine->leaves) t.mutable_grad().reset();  // frees the shared model's gradients
  return "";
}

Case make_backward_case(const Setup& s, const std::string& precision, bool backward,
                        c10::Device device) {
  auto p = build(s, device, at::kFloat);
  const Precision prec = parse_precision(precision);
  Case c;
  c.run = [p, backward, prec, device] { run_problem(*p, backward, prec, device); };
  // Replay against eager: the GEMMs may take another algorithm inside a capture, which rounds
  // bf16 (unit 2^-8) or TF32 (2^-11) sums otherwise; fp32 keeps the dtype's 1e-5.
  c.graph_tolerance = precision == "bf16" ? 3.9e-3 : precision == "tf32" ? 2e-3 : 0;
  c.outputs = [p] {
    std::vector<at::Tensor> v = {p->out};
    for (const auto& t : p->leaves) v.push_back(t.grad());
    return v;
  };
  c.verify = [s, precision, backward, device] {
    return verify_problem(s, precision, backward, device);
  };
  c.cost = p->fwd_cost;
  if (backward) {
    c.cost.flops += p->bwd_cost.flops;
    c.cost.bytes += p->bwd_cost.bytes;
  }
  const bool by_bytes = c.cost.flops == 0;
  c.cost.peak = by_bytes              ? PeakKind::kCopy
                : precision == "bf16" ? PeakKind::kGemmBf16
                : precision == "tf32" ? PeakKind::kGemmTf32
                                      : PeakKind::kGemmFp32;
  if (backward) {  // bwd/fwd: both timed here, fastest of three after a warm-up
    RegionTimer timer(device);
    auto fastest = [&](bool with_backward) {
      auto fn = [&] { run_problem(*p, with_backward, prec, device); };
      timer.time(fn, 1);
      double best = timer.time(fn, 1);
      for (int i = 0; i < 2; ++i) best = std::min(best, timer.time(fn, 1));
      return best;
    };
    const double fwd = fastest(false), fwd_bwd = fastest(true);
    c.counters["bwd/fwd"] = fwd_bwd / fwd - 1.0;
    c.counters["fwd_ms"] = fwd * 1e3;
  }
  return c;
}

}  // namespace

GPTBENCH_FAMILY(backward, const SuiteInputs& in) {
  const auto precisions = in.dtypes_among({"fp32", "tf32", "bf16"});
  const std::vector<int64_t> contexts = in.on_cuda() ? std::vector<int64_t>{128, 256, 512, 1024}
                                                     : std::vector<int64_t>{32, 64};
  for (const GPT2Config& model : in.models) {
    std::vector<Setup> setups;
    for (const auto& comp : components()) {
      if (comp != "model") {
        setups.push_back({comp, model, in.batch, in.seq});
        continue;
      }
      for (int64_t t : contexts)
        if (t <= in.seq && t <= model.n_ctx) setups.push_back({comp, model, in.batch, t});
    }
    for (const DtypeSpec& dtype : precisions)
      for (const auto& s : setups)
        for (bool backward : {false, true}) {
          const std::string& precision = dtype.name;
          CaseSpec spec;
          spec.name = BenchName("backward", {s.component, precision, backward ? "fwd_bwd" : "fwd",
                                             s.model.name})
                          .axis("B", s.batch).axis("T", s.seq);
          spec.unit = s.component == "model" ? benchmark::kMillisecond : benchmark::kMicrosecond;
          spec.graph_form = true;  // autograd records (and runs) on the host between kernels
          spec.make = [s, precision, backward, device = in.device] {
            return make_backward_case(s, precision, backward, device);
          };
          register_case(std::move(spec));
        }
  }
}

}  // namespace gptbench

// LayerNorm family: the pre-LN step of a GPT-2 block, h = x + branch, y = LayerNorm(h), over
// B·T rows of d_model columns, forward and forward+backward (upstream gradients for h and y).
//   impls:  torch (at::add, at::layer_norm, the cast to the output dtype: what LibTorch runs under
//           autocast, and the blocks:torch training step), fused (ops/layernorm.h, the
//           blocks:fused step; needs a GPU), and those registered at kLayerNorm
//           (fixtures/extension.h; forward_only ones have no fwd_bwd rows)
//   dtypes: bf16 (x, h fp32; branch, y and y's gradient bf16: the step under bf16 autocast),
//           fp32 (all fp32)
//   shapes: rows = --gptbench_batch × --gptbench_seq, cols = each selected model's d_model
//   cost:   the bytes the fused path must move (b = the dtype's size): forward reads x (4) and
//           the branch (b), writes h (4) and y (b): rows·C·(8 + 2b); forward+backward adds
//           reading dy (b), h (4) and h's gradient (4), writing dx (4) and the branch's
//           gradient (b): rows·C·(20 + 4b) in all. %peak of the measured copy bandwidth.
//   names:  layernorm/<impl>/<dtype>/<fwd|fwd_bwd>/rows:R/cols:C, and fwd_bwd's with a last
//           launch:<graph|eager> (graph: replays of a CUDA graph of the call, device time)
#include <ATen/ATen.h>
#include <torch/autograd.h>

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
#include "ops/layernorm.h"
#include "train/step.h"

namespace gptbench {
namespace {

constexpr double kEps = 1e-5;

struct State {
  at::Tensor x, branch, gamma, beta, gh, gy;
  AddLayerNorm out;
  std::function<LayerNormFn> fn;
  bool bf16 = false, backward = false;
  // One call; with the backward, the previous call's gradients are dropped first, so each call
  // writes fresh ones as in training, and this call's stay readable after it.
  void run() {
    // bf16 autocast where the step has it (CUDA); on the CPU the composition runs as it is.
    PrecisionScope scope(bf16 && x.is_cuda() ? Precision::kBf16 : Precision::kFp32, x.device());
    if (backward) clear_grads();
    out = fn(x, branch, gamma, beta, kEps);
    if (!backward) return;
    torch::autograd::backward({out.h, out.y}, {gh, gy});
    // Detached, so no autograd graph outlives the call: the leaves' gradient accumulators are
    // made afresh by each call's forward, on the stream it runs on (a capture's side stream).
    out.h = out.h.detach();
    out.y = out.y.detach();
  }
  // What one call leaves written: h and y, and with the backward the four gradients.
  std::vector<at::Tensor> outputs() const {
    return {out.h, out.y, x.grad(), branch.grad(), gamma.grad(), beta.grad()};
  }
  void clear_grads() {
    for (auto* t : {&x, &branch, &gamma, &beta}) t->mutable_grad() = at::Tensor();
  }
};

// Placements a fwd_bwd graph row averages (Case::graph_copies).
constexpr int kPlacements = 8;

// y (and with `backward`, x's gradient) of 64 evenly spaced rows against float64 autograd of
// the same rows: rows are independent in both. Allowed relative error (Frobenius): fp32
// arithmetic ~1e-6 → 1e-4; bf16 outputs are rounded to 8 significant bits → 1e-2.
std::string verify_sample(State& st, bool backward) {
  st.backward = backward;
  st.run();
  const auto xg = backward ? st.x.grad().detach() : at::Tensor();
  st.clear_grads();
  const int64_t rows = st.x.size(0), n = std::min<int64_t>(rows, 64);
  auto idx = at::linspace(0, static_cast<double>(rows - 1), n, at::kDouble).round().to(at::kLong)
                 .to(st.x.device());
  auto pick = [&](const at::Tensor& t) {
    return t.detach().index_select(0, idx).to(at::kCPU, at::kDouble);
  };
  auto x = pick(st.x).requires_grad_(true), b = pick(st.branch);
  auto g = st.gamma.detach().to(at::kCPU, at::kDouble), be = st.beta.detach().to(at::kCPU, at::kDouble);
  auto h = x + b;
  auto y = at::layer_norm(h, {x.size(1)}, g, be, kEps);
  torch::autograd::backward({h, y}, {pick(st.gh), pick(st.gy)});
  const double tol = st.bf16 ? 1e-2 : 1e-4;
  auto why = check_close(st.out.y.detach().index_select(0, idx), y, tol);
  if (why.empty() && backward) why = check_close(xg.index_select(0, idx), x.grad(), 1e-4);
  return why;
}

// check_grads: the check runs the backward too (every row of an implementation that has one).
Case make_case(const std::function<LayerNormFn>& fn, bool check_grads, const std::string& dtype,
               bool backward, int64_t rows, int64_t cols, c10::Device device) {
  auto st = std::make_shared<State>();
  st->fn = fn;
  st->bf16 = dtype == "bf16";
  const auto opts = at::TensorOptions().device(device);
  const auto low = st->bf16 ? at::kBFloat16 : at::kFloat;
  // A residual stream with an offset (so the mean matters), a branch of unit spread, GPT-2's
  // initial gamma/beta perturbed, unit upstream gradients.
  st->x = (3 + 2 * at::randn({rows, cols}, opts)).requires_grad_(true);
  st->branch = at::randn({rows, cols}, opts).to(low).requires_grad_(true);
  st->gamma = (1 + 0.2 * at::randn({cols}, opts)).requires_grad_(true);
  st->beta = (0.2 * at::randn({cols}, opts)).requires_grad_(true);
  st->gh = at::randn({rows, cols}, opts);
  st->gy = at::randn({rows, cols}, opts).to(low);
  Case c;
  c.verify = [st, check_grads] { return verify_sample(*st, check_grads); };
  c.run = [st, backward] {
    st->backward = backward;
    st->run();
  };
  c.outputs = [st] { return st->outputs(); };
  c.graph_tolerance = st->bf16 ? 3.9e-3 : 0;  // fp32 gradients through bf16 operands
  // The fused fwd+bwd's speed depends on where its tensors sit in memory: one placement's
  // replays agree within 0.12% while processes differed by 0.85-1.55% (H200, 2026-11-28). Its
  // graph row's timed regions take kPlacements copies in turn (fixtures/graph_form.h), so a
  // process's median is over that many placements rather than one.
  if (backward) c.graph_copies = kPlacements;
  const double b = static_cast<double>(at::elementSize(low));
  const double n = static_cast<double>(rows) * static_cast<double>(cols);
  c.cost.bytes = n * (backward ? 20 + 4 * b : 8 + 2 * b);
  c.cost.peak = PeakKind::kCopy;
  return c;
}

}  // namespace

GPTBENCH_FAMILY(layernorm, const SuiteInputs& in) {
  const auto impls = family_impls(kLayerNorm, {{"torch", torch_add_layernorm},
                                               {"fused", fused_add_layernorm, {}, true}});
  std::set<int64_t> widths;
  for (const GPT2Config& model : in.models) widths.insert(model.d_model);
  for (const DtypeSpec& d : in.dtypes_among({"bf16", "fp32"}))
    for (bool backward : {false, true})
      for (int64_t cols : widths)
        for (const auto& impl : impls) {
          if (!impl_takes(impl, d.name, backward)) continue;
          const std::string& dtype = d.name;
          CaseSpec spec;
          spec.name = BenchName("layernorm", {impl.name, dtype, backward ? "fwd_bwd" : "fwd"})
                          .axis("rows", in.tokens()).axis("cols", cols);
          spec.graph_form = backward;  // autograd's host work between the two passes
          spec.make = [fn = impl.fn, grads = !impl.options.forward_only, dtype, backward,
                       rows = in.tokens(), cols, device = in.device] {
            return make_case(fn, grads, dtype, backward, rows, cols, device);
          };
          register_impl_case(impl, std::move(spec), in.device);
        }
}

}  // namespace gptbench

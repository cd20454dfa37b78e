// Optimizer family: one optimizer step over the real parameter shapes of each selected GPT-2
// size (taken from the shared model; the benchmark owns fp32 copies of the parameters and
// random gradients, fp32 or bf16, so the shared model is never touched).
//   impls:  adamw, adam8bit, adafactor, lion — ours: the fused CUDA kernels on a GPU, the
//           LibTorch reference path on the CPU (the CPU numbers time the reference, not a kernel);
//           torch_adamw (torch::optim::AdamW, a per-tensor loop of LibTorch ops) and
//           torch_fused_adamw (at::_fused_adamw_, PyTorch's fused=True kernel; the state_steps
//           tensors are incremented inside the timed step, as PyTorch's Python optimizer does);
//           adafactor_ref (GPU only): our reference path, the algorithm of torch.optim.Adafactor
//           in LibTorch ops, one tensor at a time; and those registered at kAdamW, kLion,
//           kAdam8bit or kAdafactor (fixtures/extension.h): checked against that algorithm's
//           reference, its cost, no state_bytes.
//   grads:  fp32, and bf16grad (bf16 gradients, fp32 parameters and state) for ours.
//   cost:   the bytes the step must move (ops/optim/optim_cost.h): AdamW 28 B/param (read p, g,
//           m, v; write p, m, v), Lion 20, 8-bit Adam 16.06 (codes and per-block absmax),
//           Adafactor 24 on matrices (three passes), 32 on vectors; bf16 gradients save 2 B per
//           gradient read. %peak divides by the measured copy bandwidth.
//   counters: bytes/param, state_bytes, params.
//   names:  optim/<impl>/<fp32|bf16grad>/model:<size>; torch_adamw and torch_fused_adamw add a
//           last launch:<graph|eager> (graph: the step captured in a CUDA graph and replayed,
//           device time; torch_adamw's host step count is the captured one in every replay)
// Verification: one step against our reference path on a copy of the parameters (check_close
// per tensor), before anything is timed.
#include <ATen/ATen.h>
#include <torch/optim/adamw.h>

#include <functional>
#include <memory>

#include "fixtures/bench_name.h"
#include "fixtures/case_runner.h"
#include "fixtures/extension.h"
#include "fixtures/family.h"
#include "fixtures/family_impls.h"
#include "fixtures/model_cache.h"
#include "fixtures/verify.h"
#include "ops/optim/adafactor.h"
#include "ops/optim/adam8bit.h"
#include "ops/optim/adamw.h"
#include "ops/optim/lion.h"
#include "ops/optim/optim_cost.h"

namespace gptbench {
namespace {

struct Problem {
  std::vector<at::Tensor> params;  // fp32 copies of the model's shapes, N(0, 0.02)
  std::vector<at::Tensor> grads;   // N(0, 1e-3), fp32 or bf16
  std::vector<std::vector<int64_t>> shapes;
  int64_t numel = 0;
};

Problem make_problem(const GPT2Config& model, c10::Device device, at::ScalarType grad_type) {
  Problem pr;
  for (const auto& p : shared_model(model, at::kFloat, device)->parameters())
    pr.shapes.push_back(p.sizes().vec());
  at::manual_seed(99);
  const auto f32 = at::TensorOptions().device(device).dtype(at::kFloat);
  for (const auto& s : pr.shapes) {
    pr.params.push_back(at::randn(s, f32).mul_(0.02));
    pr.grads.push_back(at::randn(s, f32).mul_(1e-3).to(grad_type));
    pr.numel += pr.params.back().numel();
  }
  return pr;
}

std::vector<at::Tensor> clone_all(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  for (const auto& t : ts) out.push_back(t.detach().clone());
  return out;
}

std::string compare_all(const std::vector<at::Tensor>& out, const std::vector<at::Tensor>& ref,
                        double tol) {
  for (size_t i = 0; i < out.size(); ++i) {
    std::string wrong = check_close(out[i], ref[i], tol);
    if (!wrong.empty()) return "tensor " + std::to_string(i) + ": " + wrong;
  }
  return "";
}

std::unique_ptr<FusedOptimizer> make_ours(const std::string& impl, std::vector<at::Tensor> ps,
                                          OptimBackend backend) {
  if (impl == "adamw") return std::make_unique<AdamW>(std::move(ps), AdamWOptions{}, backend);
  if (impl == "adam8bit")
    return std::make_unique<Adam8bit>(std::move(ps), Adam8bitOptions{}, backend);
  if (impl == "lion") return std::make_unique<Lion>(std::move(ps), LionOptions{}, backend);
  return std::make_unique<Adafactor>(std::move(ps), AdafactorOptions{}, backend);
}

double step_bytes(const std::string& impl, const Problem& pr, int64_t gb) {
  if (impl == "adam8bit") {
    std::vector<int64_t> sizes;
    for (const auto& p : pr.params) sizes.push_back(p.numel());
    return optim::adam8bit_step_bytes(sizes, gb);
  }
  if (impl == "lion") return optim::lion_step_bytes(pr.numel, gb);
  if (impl.rfind("adafactor", 0) == 0) return optim::adafactor_step_bytes(pr.shapes, gb);
  return optim::adamw_step_bytes(pr.numel, gb);  // adamw, torch_adamw, torch_fused_adamw
}

// Tolerance of one step against the reference (relative Frobenius error per tensor): the fused
// kernels differ from LibTorch ops by FMA contraction and reduction order (≈1e-7 of the update;
// the parameters move by ~lr per step, so ≪ 1e-6); Adafactor's sums are reordered by atomics
// (1e-5); at::_fused_adamw_ computes the denominator in another order (1e-5).
double step_tolerance(const std::string& impl) {
  if (impl == "adafactor" || impl == "torch_fused_adamw") return 1e-5;
  return 1e-6;
}

// ext: a registered implementation of `algorithm` (adamw, adam8bit, adafactor, lion), costed and
// checked as that algorithm; unset for the suite's own, where `algorithm` is the impl's name.
Case make_optim_case(const std::string& impl, const std::string& grads, const GPT2Config& model,
                     c10::Device device, const std::string& algorithm,
                     const std::function<OptimizerFn>& ext) {
  const bool bf16 = grads == "bf16grad";
  auto pr = std::make_shared<Problem>(make_problem(model, device, bf16 ? at::kBFloat16 : at::kFloat));
  Case cs;
  const int64_t gb = bf16 ? 2 : 4;
  cs.cost = {0, step_bytes(algorithm, *pr, gb), PeakKind::kCopy};
  const double n = static_cast<double>(pr->numel);
  cs.counters["params"] = n;
  const std::string base = algorithm == "adafactor_ref" ? "adafactor" : algorithm;

  if (ext) {
    auto step = std::make_shared<OptimizerStep>(ext(pr->params));
    if (!*step) throw std::invalid_argument(impl + ": the registered optimizer returned no step");
    cs.run = [step, pr] { (*step)(pr->grads); };
  } else if (impl == "torch_adamw") {
    for (auto& p : pr->params) p.set_requires_grad(true);
    for (size_t i = 0; i < pr->params.size(); ++i) pr->params[i].mutable_grad() = pr->grads[i];
    auto opt = std::make_shared<torch::optim::AdamW>(pr->params, torch::optim::AdamWOptions(1e-3));
    cs.run = [opt] { opt->step(); };
    cs.counters["state_bytes"] = 8 * n;
    // The graph form: the moments are state; the step count lives on the host, per parameter.
    cs.state = [pr, opt] {
      std::vector<at::Tensor> v = pr->params;
      for (const auto& [key, st] : opt->state()) {
        auto& s = static_cast<torch::optim::AdamWParamState&>(*st);
        v.push_back(s.exp_avg());
        v.push_back(s.exp_avg_sq());
      }
      return v;
    };
    cs.rewind = [opt] {
      for (const auto& [key, st] : opt->state()) {
        auto& s = static_cast<torch::optim::AdamWParamState&>(*st);
        s.step(s.step() - 1);
      }
    };
  } else if (impl == "torch_fused_adamw") {
    auto m = std::make_shared<std::vector<at::Tensor>>(), v = std::make_shared<std::vector<at::Tensor>>();
    auto steps = std::make_shared<std::vector<at::Tensor>>();
    for (const auto& p : pr->params) {
      m->push_back(at::zeros_like(p));
      v->push_back(at::zeros_like(p));
      steps->push_back(at::zeros({}, p.options()));
    }
    const AdamWOptions o;
    cs.run = [pr, m, v, steps, o] {
      at::_foreach_add_(*steps, 1.0);
      at::_fused_adamw_(pr->params, pr->grads, *m, *v, {}, *steps, o.lr, o.beta1, o.beta2,
                        o.weight_decay, o.eps, /*amsgrad=*/false, /*maximize=*/false);
    };
    cs.counters["state_bytes"] = 8 * n;
    cs.state = [pr, m, v, steps] {  // the step counts are device tensors: all state is here
      std::vector<at::Tensor> all = pr->params;
      for (const auto* list : {m.get(), v.get(), steps.get()}) all.insert(all.end(), list->begin(), list->end());
      return all;
    };
  } else {
    const OptimBackend backend = impl == "adafactor_ref" ? OptimBackend::kReference : OptimBackend::kAuto;
    std::shared_ptr<FusedOptimizer> opt = make_ours(base, pr->params, backend);
    cs.run = [opt, pr] { opt->step(pr->grads); };
    cs.counters["state_bytes"] = static_cast<double>(opt->state_bytes());
  }
  cs.counters["bytes/param"] = cs.cost.bytes / n;
  if (cs.state) cs.outputs = [pr] { return pr->params; };
  else cs.no_graph_reason = "the step count and moments live inside the optimizer";

  // One step from the initial state, compared with our reference path stepped on a copy.
  cs.verify = [pr, run = cs.run, base, algorithm] {
    auto ref_params = clone_all(pr->params);
    {
      at::NoGradGuard no_grad;
      auto ref = make_ours(base == "torch_adamw" || base == "torch_fused_adamw" ? "adamw" : base,
                           ref_params, OptimBackend::kReference);
      ref->step(pr->grads);
    }
    run();
    std::vector<at::Tensor> out;
    for (const auto& p : pr->params) out.push_back(p.detach());
    return compare_all(out, ref_params, step_tolerance(algorithm));
  };
  return cs;
}

// The implementations registered at the four algorithms' points, with their algorithm; their
// names share optim/<impl>/..., so they are checked against each other and the suite's own.
std::vector<std::pair<std::string, Impl<OptimizerFn>>> registered_optimizers() {
  const std::pair<std::string, ImplPoint<OptimizerFn>> points[] = {
      {"adamw", kAdamW}, {"adam8bit", kAdam8bit}, {"adafactor", kAdafactor}, {"lion", kLion}};
  std::vector<std::pair<std::string, Impl<OptimizerFn>>> all;
  std::vector<std::string> names;
  for (const auto& [algorithm, point] : points)
    for (auto& impl : registered_impls(point)) {
      names.push_back(impl.name);
      all.emplace_back(algorithm, std::move(impl));
    }
  check_impl_names("optim", {"adamw", "adam8bit", "adafactor", "lion", "torch_adamw",
                             "torch_fused_adamw", "adafactor_ref"}, names);
  return all;
}

}  // namespace

GPTBENCH_FAMILY(optimizers, const SuiteInputs& in) {
  const bool gpu = in.on_cuda();
  const std::vector<std::string> ours = {"adamw", "adam8bit", "adafactor", "lion"};
  const auto exts = registered_optimizers();
  for (const GPT2Config& model : in.models) {
    std::vector<std::pair<std::string, std::string>> cases;  // (impl, grads)
    for (const auto& impl : ours) cases.emplace_back(impl, "fp32");
    cases.emplace_back("torch_adamw", "fp32");
    cases.emplace_back("torch_fused_adamw", "fp32");
    if (gpu) cases.emplace_back("adafactor_ref", "fp32");
    for (const auto& impl : ours) cases.emplace_back(impl, "bf16grad");
    for (const auto& [impl, grads] : cases) {
      CaseSpec spec;
      spec.name = BenchName("optim", {impl, grads}).axis("model", model.name);
      // Ours time their fused kernels on a GPU (which needs them built); on the CPU they run
      // their reference path.
      spec.needs_cuda_kernels =
          gpu && (impl == "adamw" || impl == "adam8bit" || impl == "adafactor" || impl == "lion");
      // LibTorch's optimizers launch per tensor from the host: a graph form beside them.
      spec.graph_form = impl == "torch_adamw" || impl == "torch_fused_adamw";
      spec.make = [impl = impl, grads = grads, model, device = in.device] {
        return make_optim_case(impl, grads, model, device, impl, nullptr);
      };
      register_case(std::move(spec));
    }
    for (const auto& [algorithm, impl] : exts)
      for (const char* grads : {"fp32", "bf16grad"}) {
        if (!impl_takes(impl, grads)) continue;
        CaseSpec spec;
        spec.name = BenchName("optim", {impl.name, grads}).axis("model", model.name);
        spec.make = [impl = impl.name, fn = impl.fn, grads = std::string(grads), model,
                     algorithm = algorithm, device = in.device] {
          return make_optim_case(impl, grads, model, device, algorithm, fn);
        };
        register_impl_case(impl, std::move(spec), in.device);
      }
  }
}

}  // namespace gptbench

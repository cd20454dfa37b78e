#include "model/checkpoint.h"

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/Generator.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <mutex>
#include <optional>
#include <stdexcept>

#include "model/gpt2.h"

namespace gptbench {

bool CheckpointPolicy::whole_block(int64_t layer) const {
  if (mode == CheckpointMode::kEveryBlock) return true;
  if (mode == CheckpointMode::kEveryKth) return k > 0 && layer % k == 0;
  return false;
}

CheckpointPolicy parse_checkpoint_policy(const std::string& name) {
  CheckpointPolicy p;
  if (name == "none") return p;
  if (name == "all") {
    p.mode = CheckpointMode::kEveryBlock;
    return p;
  }
  if (name == "attn") {
    p.mode = CheckpointMode::kAttention;
    return p;
  }
  if (name.rfind("every", 0) == 0 && name.size() > 5) {
    try {
      size_t used = 0;
      const int64_t k = std::stoll(name.substr(5), &used);
      if (used == name.size() - 5 && k >= 1) {
        p.mode = CheckpointMode::kEveryKth;
        p.k = k;
        return p;
      }
    } catch (const std::exception&) {
    }
  }
  throw std::invalid_argument("unknown checkpointing mode '" + name +
                              "'; valid: none, all, every<k> (k >= 1), attn");
}

std::string checkpoint_policy_name(const CheckpointPolicy& policy) {
  switch (policy.mode) {
    case CheckpointMode::kNone: return "none";
    case CheckpointMode::kEveryBlock: return "all";
    case CheckpointMode::kEveryKth: return "every" + std::to_string(policy.k);
    case CheckpointMode::kAttention: return "attn";
  }
  return "none";
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct FnHolder : torch::CustomClassHolder {
  std::function<torch::Tensor(const torch::Tensor&)> fn;
  std::function<void()> before_recompute;
};

constexpr c10::DeviceType kAutocastDevices[] = {c10::kCPU, c10::kCUDA};

// Sets autocast (per device type) to a saved state, cache off; restores the previous state.
class AutocastScope {
 public:
  AutocastScope(const bool (&enabled)[2], const at::ScalarType (&dtype)[2]) {
    cache_ = at::autocast::is_autocast_cache_enabled();
    for (int i = 0; i < 2; ++i) {
      prev_enabled_[i] = at::autocast::is_autocast_enabled(kAutocastDevices[i]);
      prev_dtype_[i] = at::autocast::get_autocast_dtype(kAutocastDevices[i]);
      at::autocast::set_autocast_dtype(kAutocastDevices[i], dtype[i]);
      at::autocast::set_autocast_enabled(kAutocastDevices[i], enabled[i]);
    }
    at::autocast::set_autocast_cache_enabled(false);
  }
  ~AutocastScope() {
    for (int i = 0; i < 2; ++i) {
      at::autocast::set_autocast_enabled(kAutocastDevices[i], prev_enabled_[i]);
      at::autocast::set_autocast_dtype(kAutocastDevices[i], prev_dtype_[i]);
    }
    at::autocast::set_autocast_cache_enabled(cache_);
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool cache_ = true;
  bool prev_enabled_[2] = {false, false};
  at::ScalarType prev_dtype_[2] = {at::kBFloat16, at::kHalf};
};

// Sets the generators to saved states for the recomputation, then puts back the states they
// had (as torch.random.fork_rng does): the recomputation draws what the forward drew, and
// the rest of the program sees no change.
class RngFork {
 public:
  RngFork(std::vector<std::pair<at::Generator, at::Tensor>> saved) {
    for (auto& [gen, state] : saved) {
      std::lock_guard<std::mutex> lock(gen.mutex());
      prev_.emplace_back(gen, gen.get_state());
      gen.set_state(state);
    }
  }
  ~RngFork() {
    for (auto& [gen, state] : prev_) {
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(state);
    }
  }

 private:
  std::vector<std::pair<at::Generator, at::Tensor>> prev_;
};

std::vector<at::Generator> generators_for(const torch::Tensor& x) {
  std::vector<at::Generator> gens = {at::detail::getDefaultCPUGenerator()};
  if (x.is_cuda()) gens.push_back(at::globalContext().defaultGenerator(x.device()));
  return gens;
}

class CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x,
                               c10::intrusive_ptr<FnHolder> fn) {
    ctx->save_for_backward({x});
    ctx->saved_data["fn"] = c10::IValue::make_capsule(fn);
    for (int i = 0; i < 2; ++i) {
      const std::string d = std::to_string(i);
      ctx->saved_data["ac_on" + d] = at::autocast::is_autocast_enabled(kAutocastDevices[i]);
      ctx->saved_data["ac_dtype" + d] =
          static_cast<int64_t>(at::autocast::get_autocast_dtype(kAutocastDevices[i]));
    }
    std::vector<at::Tensor> states;
    for (auto& gen : generators_for(x)) {
      std::lock_guard<std::mutex> lock(gen.mutex());
      states.push_back(gen.get_state());
    }
    ctx->saved_data["rng"] = states;
    return fn->fn(x);  // grad mode is off inside a custom Function's forward: nothing is kept
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    auto x = ctx->get_saved_variables()[0];
    auto holder = c10::static_intrusive_pointer_cast<FnHolder>(ctx->saved_data["fn"].toCapsule());
    bool enabled[2];
    at::ScalarType dtype[2];
    for (int i = 0; i < 2; ++i) {
      const std::string d = std::to_string(i);
      enabled[i] = ctx->saved_data["ac_on" + d].toBool();
      dtype[i] = static_cast<at::ScalarType>(ctx->saved_data["ac_dtype" + d].toInt());
    }
    auto gens = generators_for(x);
    auto states = ctx->saved_data["rng"].toTensorVector();
    std::vector<std::pair<at::Generator, at::Tensor>> saved;
    for (size_t i = 0; i < gens.size() && i < states.size(); ++i) saved.emplace_back(gens[i], states[i]);

    auto input = x.detach().requires_grad_(true);
    if (holder->before_recompute) holder->before_recompute();
    torch::Tensor y;
    {
      RngFork fork(std::move(saved));
      AutocastScope autocast(enabled, dtype);
      at::AutoGradMode grad(true);
      y = holder->fn(input);  // (B, T, C), with its graph this time
    }
    // Nested backward: parameter gradients accumulate into .grad(), input's gradient lands in
    // input.grad().
    torch::autograd::backward({y}, {grad_out[0]});
    return {input.grad(), torch::Tensor()};
  }
};

}  // namespace

// Whether checkpoint(fn, x) runs fn plainly, keeping what autograd saves (see below).
static bool runs_plainly(const torch::Tensor& x) { return at::GradMode::is_enabled() && !x.requires_grad(); }

torch::Tensor checkpoint(const std::function<torch::Tensor(const torch::Tensor&)>& fn,
                         const torch::Tensor& x, std::function<void()> before_recompute) {
  // Without grad mode nothing is saved anyway; an input that needs no gradient would leave the
  // function's output without a graph (parameters are not its inputs), so run it plainly.
  if (!at::GradMode::is_enabled() || !x.requires_grad()) return fn(x);
  auto holder = c10::make_intrusive<FnHolder>();
  holder->fn = fn;
  holder->before_recompute = std::move(before_recompute);
  return CheckpointFunction::apply(x, holder);
}

torch::Tensor block_forward(BlockImpl& block, const torch::Tensor& x, int64_t layer,
                            const CheckpointPolicy& policy, const BlockHooks* hooks) {
  const bool use_hook = hooks && hooks->before_use;
  if (use_hook) hooks->before_use(layer);
  if (policy.whole_block(layer)) {
    std::function<void()> again;
    if (use_hook) again = [use = hooks->before_use, layer] { use(layer); };
    const bool plain = runs_plainly(x);  // then autograd keeps the parameters: they must stay
    auto y = checkpoint([&block](const torch::Tensor& t) { return block.forward(t); }, x, std::move(again));
    if (hooks && hooks->after_forward && !plain) hooks->after_forward(layer);
    return y;
  }
  if (policy.attention_only()) {
    auto attn = [&block](const torch::Tensor& t) { return block.attn->forward(block.norm_1(t)); };
    auto [h, y] = block.add_norm_2(x, checkpoint(attn, x));  // (B, T, C) each
    return h + block.mlp->forward(y);
  }
  return block.forward(x);
}

}  // namespace gptbench

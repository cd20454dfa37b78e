#pragma once
// A call each time a parameter's gradient has been accumulated: a post-hook on the parameter's
// gradient accumulator (autograd's AccumulateGrad node). The data-parallel steps count their
// buckets and units down with it (train/dp_step.h, train/dp_fsdp.h).
#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <functional>
#include <memory>
#include <utility>

namespace gptbench {

using GradAccumulator = decltype(torch::autograd::impl::grad_accumulator(std::declval<const at::Tensor&>()));

// Runs `ready` on autograd's thread after each accumulation into `param`'s gradient. The hook
// lives as long as the returned accumulator: keep it. The accumulator records the parameter's
// shape when it is made, so call this while the parameter has its real shape.
inline GradAccumulator on_grad_accumulated(const at::Tensor& param, std::function<void()> ready) {
  auto acc = torch::autograd::impl::grad_accumulator(param);
  acc->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
      [ready = std::move(ready)](const torch::autograd::variable_list& outputs,
                                 const torch::autograd::variable_list&) {
        ready();
        return outputs;
      }));
  return acc;
}

}  // namespace gptbench

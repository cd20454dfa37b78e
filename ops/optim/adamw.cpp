#include "ops/optim/adamw.h"

#include <cmath>

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>

#include "ops/optim/adamw_kernels.h"
#endif

namespace gptbench {

// Reference: the operations of torch::optim::AdamW::step, in its order.
void AdamW::step_reference(const std::vector<at::Tensor>& grads) {
  auto& [m, v] = state_;
  const double bc1 = 1 - std::pow(opt_.beta1, static_cast<double>(step_));
  const double bc2 = 1 - std::pow(opt_.beta2, static_cast<double>(step_));
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    const at::Tensor g = grads[i].to(at::kFloat);
    if (opt_.weight_decay != 0) p.mul_(1 - opt_.lr * opt_.weight_decay);
    m[i].mul_(opt_.beta1).add_(g, 1 - opt_.beta1);
    v[i].mul_(opt_.beta2).addcmul_(g, g, 1 - opt_.beta2);
    auto denom = (v[i].sqrt() / std::sqrt(bc2)).add_(opt_.eps);
    p.addcdiv_(m[i], denom, -opt_.lr / bc1);
  }
}

void AdamW::step_fused(const std::vector<at::Tensor>& grads) {
#ifdef GPTBENCH_WITH_CUDA
  const ElemType gt = optim::grad_type_of(grads);
  tables_.refresh_chunked<optim::AdamWTensor>(params_, grads, [&](auto& t, size_t i) {
    t.m = state_[0][i].data_ptr<float>();
    t.v = state_[1][i].data_ptr<float>();
    t.vec = optim::vec_aligned(gt, t.g, {t.p, t.m, t.v});
  });
  optim::adamw_step_cuda(
      tables_.rows<optim::AdamWTensor>(), tables_.items(), tables_.num_items(), gt,
      optim::adam_scalars(opt_.lr, opt_.beta1, opt_.beta2, opt_.eps, opt_.weight_decay, step_),
      at::cuda::getCurrentCUDAStream().stream());
#else
  no_fused_kernels();
#endif
}

}  // namespace gptbench

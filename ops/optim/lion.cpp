#include "ops/optim/lion.h"

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>

#include "ops/optim/lion_kernels.h"
#endif

namespace gptbench {

void Lion::step_reference(const std::vector<at::Tensor>& grads) {
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    const at::Tensor g = grads[i].to(at::kFloat);
    auto& m = state_[0][i];
    // c = β1·m + (1−β1)·g, as separate rounded products and a sum (the kernel's order).
    const at::Tensor c = at::add(at::mul(m, opt_.beta1), at::mul(g, 1 - opt_.beta1));
    if (opt_.weight_decay != 0) p.mul_(1 - opt_.lr * opt_.weight_decay);
    p.sub_(at::sign(c), opt_.lr);
    m.mul_(opt_.beta2).add_(g, 1 - opt_.beta2);
  }
}

void Lion::step_fused(const std::vector<at::Tensor>& grads) {
#ifdef GPTBENCH_WITH_CUDA
  using namespace optim;
  const ElemType gt = grad_type_of(grads);
  tables_.refresh_chunked<LionTensor>(params_, grads, [&](auto& t, size_t i) {
    t.m = state_[0][i].data_ptr<float>();
    t.vec = vec_aligned(gt, t.g, {t.p, t.m});
  });
  LionScalars s{};
  s.beta1 = static_cast<float>(opt_.beta1);
  s.one_minus_beta1 = static_cast<float>(1 - opt_.beta1);
  s.beta2 = static_cast<float>(opt_.beta2);
  s.one_minus_beta2 = static_cast<float>(1 - opt_.beta2);
  s.decay = static_cast<float>(1 - opt_.lr * opt_.weight_decay);
  s.lr = static_cast<float>(opt_.lr);
  lion_step_cuda(tables_.rows<LionTensor>(), tables_.items(), tables_.num_items(), gt, s,
                 at::cuda::getCurrentCUDAStream().stream());
#else
  no_fused_kernels();
#endif
}

}  // namespace gptbench

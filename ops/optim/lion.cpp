#include "ops/optim/lion.h"

#include <stdexcept>

#include "ops/optim/device_table.h"

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>

#include "ops/optim/lion_kernels.h"
#endif

namespace gptbench {

Lion::Lion(std::vector<at::Tensor> params, LionOptions options, OptimBackend backend)
    : FusedOptimizer(std::move(params), backend), opt_(options) {
  if (opt_.lr < 0 || opt_.weight_decay < 0 || opt_.beta1 < 0 || opt_.beta1 > 1 ||
      opt_.beta2 < 0 || opt_.beta2 > 1)
    throw std::invalid_argument("lion: invalid hyper-parameter");
  for (const auto& p : params_) m_.push_back(at::zeros_like(p));
}

int64_t Lion::state_bytes() const { return 4 * numel(); }

void Lion::step_reference(const std::vector<at::Tensor>& grads) {
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    const at::Tensor g = grads[i].to(at::kFloat);
    auto& m = m_[i];
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
  const bool bf16 = grads[0].scalar_type() == at::kBFloat16;
  if (tables_.stale(params_, grads)) {
    std::vector<LionTensor> rows;
    for (size_t i = 0; i < params_.size(); ++i) {
      LionTensor t{};
      t.p = params_[i].data_ptr<float>();
      t.g = grads[i].data_ptr();
      t.m = m_[i].data_ptr<float>();
      t.n = params_[i].numel();
      t.vec = all_aligned({t.p, t.m}, 16) && all_aligned({t.g}, bf16 ? 8 : 16);
      rows.push_back(t);
    }
    tables_.store_chunked(rows, params_[0].device());
  }
  LionScalars s{};
  s.beta1 = static_cast<float>(opt_.beta1);
  s.one_minus_beta1 = static_cast<float>(1 - opt_.beta1);
  s.beta2 = static_cast<float>(opt_.beta2);
  s.one_minus_beta2 = static_cast<float>(1 - opt_.beta2);
  s.decay = static_cast<float>(1 - opt_.lr * opt_.weight_decay);
  s.lr = static_cast<float>(opt_.lr);
  lion_step_cuda(tables_.rows<LionTensor>(), tables_.items(), tables_.num_items(),
                 bf16 ? GradType::kBF16 : GradType::kF32, s,
                 at::cuda::getCurrentCUDAStream().stream());
#else
  (void)grads;
  throw std::runtime_error("lion: built without CUDA kernels");
#endif
}

}  // namespace gptbench

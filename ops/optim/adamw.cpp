#include "ops/optim/adamw.h"

#include <cmath>
#include <stdexcept>

#include "ops/optim/device_table.h"

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>

#include "ops/optim/adamw_kernels.h"
#endif

namespace gptbench {

AdamW::AdamW(std::vector<at::Tensor> params, AdamWOptions options, OptimBackend backend)
    : FusedOptimizer(std::move(params), backend), opt_(options) {
  if (opt_.lr < 0 || opt_.eps < 0 || opt_.weight_decay < 0 || opt_.beta1 < 0 ||
      opt_.beta1 >= 1 || opt_.beta2 < 0 || opt_.beta2 >= 1)
    throw std::invalid_argument("adamw: invalid hyper-parameter");
  for (const auto& p : params_) {
    m_.push_back(at::zeros_like(p));
    v_.push_back(at::zeros_like(p));
  }
}

int64_t AdamW::state_bytes() const { return 8 * numel(); }

// Reference: the operations of torch::optim::AdamW::step, in its order.
void AdamW::step_reference(const std::vector<at::Tensor>& grads) {
  const double bc1 = 1 - std::pow(opt_.beta1, static_cast<double>(step_));
  const double bc2 = 1 - std::pow(opt_.beta2, static_cast<double>(step_));
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    const at::Tensor g = grads[i].to(at::kFloat);
    if (opt_.weight_decay != 0) p.mul_(1 - opt_.lr * opt_.weight_decay);
    m_[i].mul_(opt_.beta1).add_(g, 1 - opt_.beta1);
    v_[i].mul_(opt_.beta2).addcmul_(g, g, 1 - opt_.beta2);
    auto denom = (v_[i].sqrt() / std::sqrt(bc2)).add_(opt_.eps);
    p.addcdiv_(m_[i], denom, -opt_.lr / bc1);
  }
}

void AdamW::step_fused(const std::vector<at::Tensor>& grads) {
#ifdef GPTBENCH_WITH_CUDA
  using namespace optim;
  const bool bf16 = grads[0].scalar_type() == at::kBFloat16;
  if (tables_.stale(params_, grads)) {
    std::vector<AdamWTensor> rows;
    for (size_t i = 0; i < params_.size(); ++i) {
      AdamWTensor t{};
      t.p = params_[i].data_ptr<float>();
      t.g = grads[i].data_ptr();
      t.m = m_[i].data_ptr<float>();
      t.v = v_[i].data_ptr<float>();
      t.n = params_[i].numel();
      t.vec = all_aligned({t.p, t.m, t.v}, 16) && all_aligned({t.g}, bf16 ? 8 : 16);
      rows.push_back(t);
    }
    tables_.store_chunked(rows, params_[0].device());
  }
  const AdamScalars s =
      adam_scalars(opt_.lr, opt_.beta1, opt_.beta2, opt_.eps, opt_.weight_decay, step_);
  adamw_step_cuda(tables_.rows<AdamWTensor>(), tables_.items(), tables_.num_items(),
                  bf16 ? GradType::kBF16 : GradType::kF32, s,
                  at::cuda::getCurrentCUDAStream().stream());
#else
  (void)grads;
  throw std::runtime_error("adamw: built without CUDA kernels");
#endif
}

}  // namespace gptbench

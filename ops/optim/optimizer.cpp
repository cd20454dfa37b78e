#include "ops/optim/optimizer.h"

#include <ATen/core/grad_mode.h>

#include <stdexcept>

namespace gptbench {

bool fused_available(const c10::Device& device) {
#ifdef GPTBENCH_WITH_CUDA
  return device.is_cuda();
#else
  (void)device;
  return false;
#endif
}

FusedOptimizer::FusedOptimizer(std::vector<at::Tensor> params, OptimBackend backend)
    : params_(std::move(params)) {
  if (params_.empty()) throw std::invalid_argument("optimizer: no parameters");
  const auto device = params_[0].device();
  for (const auto& p : params_) {
    if (!p.defined()) throw std::invalid_argument("optimizer: undefined parameter");
    if (p.scalar_type() != at::kFloat)
      throw std::invalid_argument("optimizer: parameters must be fp32");
    if (!p.is_contiguous()) throw std::invalid_argument("optimizer: parameters must be contiguous");
    if (p.device() != device)
      throw std::invalid_argument("optimizer: parameters must share one device");
  }
  switch (backend) {
    case OptimBackend::kAuto: fused_ = fused_available(device); break;
    case OptimBackend::kReference: fused_ = false; break;
    case OptimBackend::kFused:
      if (!fused_available(device))
        throw std::invalid_argument(
            "optimizer: the fused path needs CUDA parameters and a build with CUDA kernels");
      fused_ = true;
      break;
  }
}

int64_t FusedOptimizer::numel() const {
  int64_t n = 0;
  for (const auto& p : params_) n += p.numel();
  return n;
}

void FusedOptimizer::step() {
  std::vector<at::Tensor> grads;
  grads.reserve(params_.size());
  for (const auto& p : params_) {
    if (!p.grad().defined())
      throw std::invalid_argument("optimizer: every parameter needs a gradient");
    grads.push_back(p.grad());
  }
  step(grads);
}

void FusedOptimizer::step(const std::vector<at::Tensor>& grads) {
  if (grads.size() != params_.size())
    throw std::invalid_argument("optimizer: one gradient per parameter");
  const auto gtype = grads[0].scalar_type();
  if (gtype != at::kFloat && gtype != at::kBFloat16)
    throw std::invalid_argument("optimizer: gradients must be fp32 or bf16");
  for (size_t i = 0; i < grads.size(); ++i) {
    const auto& g = grads[i];
    if (!g.defined() || g.sizes() != params_[i].sizes() || !g.is_contiguous() ||
        g.scalar_type() != gtype || g.device() != params_[i].device())
      throw std::invalid_argument("optimizer: gradient " + std::to_string(i) +
                                  " must be defined, contiguous, of its parameter's shape and "
                                  "device, and of the others' dtype");
  }
  at::NoGradGuard no_grad;
  ++step_;
  if (fused_)
    step_fused(grads);
  else
    step_reference(grads);
}

void FusedOptimizer::no_fused_kernels() const {
  throw std::runtime_error(name() + ": built without CUDA kernels");
}

void FusedOptimizer::zero_grad() {
  for (auto& p : params_)
    if (p.grad().defined()) p.mutable_grad().zero_();
}

}  // namespace gptbench

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
  auto key = pointer_key(grads);
  for (const void* q : pointer_key(params_)) key.push_back(q);
  key.push_back(reinterpret_cast<const void*>(static_cast<uintptr_t>(bf16)));
  if (key != table_key_) {
    std::vector<AdamWTensor> rows;
    std::vector<int64_t> sizes;
    for (size_t i = 0; i < params_.size(); ++i) {
      AdamWTensor t{};
      t.p = params_[i].data_ptr<float>();
      t.g = grads[i].data_ptr();
      t.m = m_[i].data_ptr<float>();
      t.v = v_[i].data_ptr<float>();
      t.n = params_[i].numel();
      t.vec = all_aligned({t.p, t.m, t.v}, 16) && all_aligned({t.g}, bf16 ? 8 : 16);
      rows.push_back(t);
      sizes.push_back(t.n);
    }
    const auto chunks = make_chunks(sizes);
    table_ = upload_table(rows, params_[0].device());
    chunks_ = upload_table(chunks, params_[0].device());
    num_chunks_ = static_cast<int64_t>(chunks.size());
    table_key_ = key;
  }
  const double t = static_cast<double>(step_);
  AdamWScalars s{};
  s.beta1 = static_cast<float>(opt_.beta1);
  s.one_minus_beta1 = static_cast<float>(1 - opt_.beta1);
  s.beta2 = static_cast<float>(opt_.beta2);
  s.one_minus_beta2 = static_cast<float>(1 - opt_.beta2);
  s.decay = static_cast<float>(1 - opt_.lr * opt_.weight_decay);
  s.step_size = static_cast<float>(opt_.lr / (1 - std::pow(opt_.beta1, t)));
  s.inv_sqrt_bc2 = static_cast<float>(1 / std::sqrt(1 - std::pow(opt_.beta2, t)));
  s.eps = static_cast<float>(opt_.eps);
  adamw_step_cuda(reinterpret_cast<const AdamWTensor*>(table_.data_ptr()),
                  reinterpret_cast<const ChunkRef*>(chunks_.data_ptr()), num_chunks_,
                  bf16 ? GradType::kBF16 : GradType::kF32, s,
                  at::cuda::getCurrentCUDAStream().stream());
#else
  (void)grads;
  throw std::runtime_error("adamw: built without CUDA kernels");
#endif
}

}  // namespace gptbench

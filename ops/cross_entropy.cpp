#include "ops/cross_entropy.h"

#include <torch/autograd.h>

#include <stdexcept>
#include <string>

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "ops/cross_entropy_kernels.h"
#include "ops/device/elem_type_torch.h"
#endif

namespace gptbench {
namespace {

void check_args(const at::Tensor& logits, const at::Tensor& targets, int64_t classes) {
  const std::string what = "cross_entropy: ";
  if (logits.dim() != 2)
    throw std::invalid_argument(what + "logits must be 2-D (rows, columns), got " +
                                std::to_string(logits.dim()) + "-D");
  if (targets.dim() != 1 || targets.size(0) != logits.size(0))
    throw std::invalid_argument(what + "targets must be 1-D with one entry per logits row");
  if (targets.scalar_type() != at::kLong)
    throw std::invalid_argument(what + "targets must be int64");
  if (targets.device() != logits.device())
    throw std::invalid_argument(what + "logits and targets must be on the same device");
  if (classes < 1 || classes > logits.size(1))
    throw std::invalid_argument(what + "classes must be in [1, " + std::to_string(logits.size(1)) +
                                "], got " + std::to_string(classes));
}

#ifdef GPTBENCH_WITH_CUDA
// The logits' element type when the kernels take it (fused_cross_entropy falls back to LibTorch
// for others).
std::optional<ElemType> ce_dtype(at::ScalarType t) {
  return elem_type_in(t, {ElemType::kF32, ElemType::kBF16, ElemType::kF16});
}

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// Saves the logits (the forward's input, no copy), the targets, the per-row logsumexp and the
// number of counted rows; the backward writes the whole (N, C) gradient in one pass.
struct FusedCrossEntropyFn : torch::autograd::Function<FusedCrossEntropyFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& logits_in,
                            const at::Tensor& targets_in, int64_t classes, int64_t ignore_index) {
    c10::cuda::CUDAGuard guard(logits_in.device());
    const auto logits = logits_in.contiguous();
    const auto targets = targets_in.contiguous();
    const int64_t rows = logits.size(0), ld = logits.size(1);
    const auto f32 = logits.options().dtype(at::kFloat);
    auto loss_rows = at::empty({rows}, f32);
    auto lse = at::empty({rows}, f32);
    launch_cross_entropy_forward(logits.data_ptr(), ld, targets.data_ptr<int64_t>(),
                                 loss_rows.data_ptr<float>(), lse.data_ptr<float>(), rows,
                                 classes, ignore_index, ce_dtype(logits.scalar_type()).value(),
                                 at::cuda::getCurrentCUDAStream());
    auto counted = targets.ne(ignore_index).sum().to(at::kFloat);
    ctx->save_for_backward({logits, targets, lse, counted});
    ctx->saved_data["classes"] = classes;
    ctx->saved_data["ignore_index"] = ignore_index;
    return loss_rows.sum() / counted;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_out) {
    const auto saved = ctx->get_saved_variables();
    const auto& logits = saved[0];
    const auto& targets = saved[1];
    c10::cuda::CUDAGuard guard(logits.device());
    auto scale = (grad_out[0].to(at::kFloat) / saved[3]).reshape({1}).contiguous();
    auto grad = at::empty_like(logits, at::MemoryFormat::Contiguous);
    launch_cross_entropy_backward(logits.data_ptr(), logits.size(1), targets.data_ptr<int64_t>(),
                                  saved[2].data_ptr<float>(), scale.data_ptr<float>(),
                                  grad.data_ptr(), logits.size(0),
                                  ctx->saved_data["classes"].toInt(),
                                  ctx->saved_data["ignore_index"].toInt(),
                                  ce_dtype(logits.scalar_type()).value(),
                                  at::cuda::getCurrentCUDAStream());
    return {grad, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};
#endif

}  // namespace

at::Tensor torch_cross_entropy(const at::Tensor& logits, const at::Tensor& targets,
                               int64_t classes, int64_t ignore_index) {
  check_args(logits, targets, classes);
  return at::cross_entropy_loss(logits.narrow(1, 0, classes).to(at::kFloat), targets,
                                /*weight=*/{}, at::Reduction::Mean, ignore_index);
}

at::Tensor fused_cross_entropy(const at::Tensor& logits, const at::Tensor& targets,
                               int64_t classes, int64_t ignore_index) {
  check_args(logits, targets, classes);
#ifdef GPTBENCH_WITH_CUDA
  if (logits.is_cuda() && ce_dtype(logits.scalar_type()))
    return FusedCrossEntropyFn::apply(logits, targets, classes, ignore_index);
#endif
  return torch_cross_entropy(logits, targets, classes, ignore_index);
}

CrossEntropyReference cross_entropy_reference(const at::Tensor& logits, const at::Tensor& targets,
                                              int64_t classes, int64_t ignore_index) {
  check_args(logits, targets, classes);
  const auto x = logits.detach().to(at::kCPU, at::kDouble).narrow(1, 0, classes);
  const auto t = targets.detach().to(at::kCPU);
  const auto keep = t.ne(ignore_index);
  const auto safe_t = at::where(keep, t, at::zeros_like(t)).unsqueeze(1);
  const auto lse = at::logsumexp(x, 1);
  const auto picked = x.gather(1, safe_t).squeeze(1);
  const auto keep_d = keep.to(at::kDouble);
  const auto counted = keep_d.sum();
  CrossEntropyReference ref;
  ref.loss = ((lse - picked) * keep_d).sum() / counted;
  auto g = (x - lse.unsqueeze(1)).exp();
  g.scatter_add_(1, safe_t, -at::ones_like(safe_t, g.options()));
  g = g * (keep_d / counted).unsqueeze(1);
  ref.grad = at::zeros({logits.size(0), logits.size(1)}, g.options());
  ref.grad.narrow(1, 0, classes).copy_(g);
  return ref;
}

}  // namespace gptbench

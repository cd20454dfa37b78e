#include "ops/layernorm.h"

#include <ATen/autocast_mode.h>
#include <torch/autograd.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "ops/aligned_operand.h"
#include "ops/device/elem_type_torch.h"
#include "ops/layernorm_kernels.h"
#endif

namespace gptbench {
namespace {

void check_args(const at::Tensor& x, const at::Tensor& branch, const at::Tensor& gamma,
                const at::Tensor& beta) {
  const std::string what = "layernorm: ";
  if (!x.defined() || x.dim() < 1)
    throw std::invalid_argument(what + "x must be a tensor of at least 1 dimension");
  const int64_t c = x.size(-1);
  if (gamma.dim() != 1 || gamma.size(0) != c || beta.dim() != 1 || beta.size(0) != c)
    throw std::invalid_argument(what + "gamma and beta must be 1-D of x's last dimension (" +
                                std::to_string(c) + ")");
  if (branch.defined() && branch.sizes() != x.sizes())
    throw std::invalid_argument(what + "the residual branch must have x's shape");
  if (branch.defined() && branch.device() != x.device())
    throw std::invalid_argument(what + "x and the residual branch must be on the same device");
}

// What the next autocast Linear would cast y to, else x's dtype.
at::ScalarType output_dtype(const at::Tensor& x) {
  if (x.is_cuda() && at::autocast::is_autocast_enabled(at::kCUDA) &&
      at::autocast::get_autocast_dtype(at::kCUDA) == at::kBFloat16)
    return at::kBFloat16;
  return x.scalar_type();
}

#ifdef GPTBENCH_WITH_CUDA
using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// The element type of a branch, y or their gradients when the kernels take it (fp32 or bf16).
std::optional<ElemType> ln_dtype(at::ScalarType t) {
  return elem_type_in(t, {ElemType::kF32, ElemType::kBF16});
}


// Inputs x, branch, gamma, beta; outputs {h, y} with a branch, else {y}. Without a branch,
// `branch` is an empty placeholder (autograd's custom functions cannot take undefined
// tensors). Saves h (the normalised input), mean, rstd and gamma.
struct FusedLayerNormFn : torch::autograd::Function<FusedLayerNormFn> {
  static tensor_list forward(AutogradContext* ctx, const at::Tensor& x_in, const at::Tensor& branch_in,
                             const at::Tensor& gamma_in, const at::Tensor& beta_in, double eps,
                             bool has_branch, bool bf16_out) {
    c10::cuda::CUDAGuard guard(x_in.device());
    const auto x = aligned_contiguous(x_in);
    const auto gamma = aligned_contiguous(gamma_in), beta = aligned_contiguous(beta_in);
    const auto branch = has_branch ? aligned_contiguous(branch_in) : at::Tensor();
    const int64_t c = x.size(-1), rows = x.numel() / c;
    const auto f32 = x.options().dtype(at::kFloat);
    auto h = has_branch ? at::empty_like(x) : x;
    auto y = at::empty(x.sizes(), x.options().dtype(bf16_out ? at::kBFloat16 : at::kFloat));
    auto mean = at::empty({rows}, f32), rstd = at::empty({rows}, f32);
    LnForward a;
    a.x = x.data_ptr<float>();
    a.branch = has_branch ? branch.data_ptr() : nullptr;
    a.branch_dtype = has_branch ? ln_dtype(branch.scalar_type()).value() : ElemType::kF32;
    a.gamma = gamma.data_ptr<float>();
    a.beta = beta.data_ptr<float>();
    a.x_out = has_branch ? h.data_ptr<float>() : nullptr;
    a.y = y.data_ptr();
    a.y_dtype = bf16_out ? ElemType::kBF16 : ElemType::kF32;
    a.mean = mean.data_ptr<float>();
    a.rstd = rstd.data_ptr<float>();
    a.rows = rows;
    a.columns = static_cast<int>(c);
    a.eps = static_cast<float>(eps);
    launch_layernorm_forward(a, at::cuda::getCurrentCUDAStream());
    ctx->save_for_backward({h, mean, rstd, gamma});
    ctx->saved_data["has_branch"] = has_branch;
    ctx->saved_data["branch_dtype"] = has_branch ? branch.scalar_type() : at::kFloat;
    if (has_branch) return {h, y};
    return {y};
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& h = saved[0];
    c10::cuda::CUDAGuard guard(h.device());
    const bool has_branch = ctx->saved_data["has_branch"].toBool();
    const at::Tensor dres = has_branch && grads[0].defined() ? aligned_contiguous(grads[0]) : at::Tensor();
    at::Tensor dy = grads[has_branch ? 1 : 0];
    const int64_t c = h.size(-1), rows = h.numel() / c;
    dy = dy.defined() ? aligned_contiguous(dy) : at::zeros(h.sizes(), h.options());
    const auto branch_dtype = ctx->saved_data["branch_dtype"].toScalarType();
    auto dx = at::empty_like(h);
    auto dbranch = has_branch && branch_dtype != at::kFloat ? at::empty(h.sizes(), h.options().dtype(branch_dtype))
                                                           : at::Tensor();
    auto dgamma = at::empty({c}, h.options()), dbeta = at::empty({c}, h.options());
    auto scratch = at::empty({layernorm_backward_scratch_floats(rows, c)}, h.options());
    LnBackward a;
    a.dy = dy.data_ptr();
    a.dy_dtype = ln_dtype(dy.scalar_type()).value();
    a.h = h.data_ptr<float>();
    a.mean = saved[1].data_ptr<float>();
    a.rstd = saved[2].data_ptr<float>();
    a.gamma = saved[3].data_ptr<float>();
    a.dres = dres.defined() ? dres.data_ptr<float>() : nullptr;
    a.dx = dx.data_ptr<float>();
    a.dbranch = dbranch.defined() ? dbranch.data_ptr() : nullptr;
    a.dbranch_dtype = ln_dtype(branch_dtype).value();
    a.dgamma = dgamma.data_ptr<float>();
    a.dbeta = dbeta.data_ptr<float>();
    a.scratch = scratch.data_ptr<float>();
    a.rows = rows;
    a.columns = static_cast<int>(c);
    launch_layernorm_backward(a, at::cuda::getCurrentCUDAStream());
    // An fp32 branch gets dx itself (the gradient of a sum).
    const at::Tensor db = has_branch ? (dbranch.defined() ? dbranch : dx) : at::Tensor();
    return {dx, db, dgamma, dbeta, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};
#endif

}  // namespace

bool layernorm_uses_kernels(const at::Tensor& x, const at::Tensor& branch, const at::Tensor& gamma) {
#ifdef GPTBENCH_WITH_CUDA
  const bool ok_branch = !branch.defined() || ln_dtype(branch.scalar_type()).has_value();
  return x.is_cuda() && x.scalar_type() == at::kFloat && gamma.scalar_type() == at::kFloat &&
         gamma.device() == x.device() && ok_branch && x.numel() > 0 &&
         layernorm_kernel_supports(x.size(-1));
#else
  (void)x;
  (void)branch;
  (void)gamma;
  return false;
#endif
}

AddLayerNorm torch_add_layernorm(const at::Tensor& x, const at::Tensor& branch,
                                 const at::Tensor& gamma, const at::Tensor& beta, double eps) {
  check_args(x, branch, gamma, beta);
  AddLayerNorm out;
  out.h = branch.defined() ? x + branch : x;
  out.y = at::layer_norm(out.h, {x.size(-1)}, gamma, beta, eps).to(output_dtype(x));
  return out;
}

AddLayerNorm fused_add_layernorm(const at::Tensor& x, const at::Tensor& branch,
                                 const at::Tensor& gamma, const at::Tensor& beta, double eps) {
  check_args(x, branch, gamma, beta);
#ifdef GPTBENCH_WITH_CUDA
  if (layernorm_uses_kernels(x, branch, gamma) && beta.scalar_type() == at::kFloat) {
    const bool bf16 = output_dtype(x) == at::kBFloat16;
    const bool has_branch = branch.defined();
    const auto branch_arg = has_branch ? branch : at::empty({0}, x.options());
    auto outs = FusedLayerNormFn::apply(x, branch_arg, gamma, beta, eps, has_branch, bf16);
    if (has_branch) return {outs[0], outs[1]};
    return {x, outs[0]};
  }
#endif
  return torch_add_layernorm(x, branch, gamma, beta, eps);
}

at::Tensor fused_layernorm(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta,
                           double eps) {
  return fused_add_layernorm(x, at::Tensor(), gamma, beta, eps).y;
}

}  // namespace gptbench

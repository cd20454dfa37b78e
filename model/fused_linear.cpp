#include "model/fused_linear.h"

#include <ATen/autocast_mode.h>
#include <torch/autograd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "model/linear_operands.h"
#include "ops/column_sum.h"
#include "ops/linear_lt.h"

namespace gptbench {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// ------------------------------------------------------------------ operands

at::Tensor bias_operand(const at::Tensor& b) {
  if (b.scalar_type() == at::kFloat && lt_fp32_bias_supported()) return b;
  return bf16_operand(b);
}

// ------------------------------------------------------------------ gradients

// The gradient dyᵀ·x of master weight w: added to (or written into) w.grad() in fp32 by the
// GEMM itself when `mode` asks for it and w is an fp32 leaf with no other gradient layout —
// then autograd gets an undefined gradient for w — else returned in w's dtype.
at::Tensor weight_grad(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& w,
                       WeightGrad mode) {
  if (mode == WeightGrad::kAccumulate && w.is_leaf() && w.requires_grad() &&
      w.scalar_type() == at::kFloat) {
    at::Tensor& g = w.mutable_grad();
    if (!g.defined()) {
      g = at::empty(w.sizes(), w.options());
      lt_wgrad(dy, x, g, /*accumulate=*/false);
      return {};
    }
    if (g.scalar_type() == at::kFloat && g.is_contiguous() && g.sizes() == w.sizes()) {
      lt_wgrad(dy, x, g, /*accumulate=*/true);
      return {};
    }
  }
  auto dw = at::empty(w.sizes(), w.options().dtype(at::kFloat));
  lt_wgrad(dy, x, dw, /*accumulate=*/false);
  return w.scalar_type() == at::kFloat ? dw : dw.to(w.scalar_type());
}

// Σrows dy in fp32 (ops/column_sum.h over the bf16 rows), in the bias's dtype.
at::Tensor bias_grad(const at::Tensor& dy, const at::Tensor& b) {
  return column_sum(dy).to(b.scalar_type());
}

WeightGrad saved_mode(AutogradContext* ctx) {
  return static_cast<WeightGrad>(ctx->saved_data["mode"].toInt());
}

// ------------------------------------------------------------------ autograd functions
// Both take 2-d contiguous bf16 rows and the layers' own (master) weights and biases, cast to
// bf16 operands inside; every gradient has its input's dtype.

// y = x·wᵀ + b (BIAS epilogue); backward: dw (fp32 GEMM), db (column sum), dx = dy·w.
struct LinearBias : torch::autograd::Function<LinearBias> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const at::Tensor& b, int64_t mode) {
    const at::Tensor w16 = bf16_operand(w);
    ctx->save_for_backward({x, w16});
    ctx->saved_data["w"] = w;  // the master weight, for its gradient
    ctx->saved_data["b"] = b;
    ctx->saved_data["mode"] = mode;
    return lt_linear(x, w16, bias_operand(b));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& w16 = saved[1];
    const at::Tensor w = ctx->saved_data["w"].toTensor(), b = ctx->saved_data["b"].toTensor();
    auto dy = bf16_grad_rows(grads[0]);
    at::Tensor dw = ctx->needs_input_grad(1) ? weight_grad(dy, x, w, saved_mode(ctx)) : at::Tensor();
    at::Tensor db = ctx->needs_input_grad(2) ? bias_grad(dy, b) : at::Tensor();
    at::Tensor dx = ctx->needs_input_grad(0) ? at::mm(dy, w16) : at::Tensor();
    return {dx, dw, db, at::Tensor()};
  }
};

// y = gelu_tanh(x·w_fcᵀ + b_fc)·w_projᵀ + b_proj; saves x, h = gelu(pre) and pre (what the
// unfused composition saves too). Backward: dw_proj, db_proj; d_pre and db_fc (lt_dgelu_bgrad:
// the DGELU epilogue or a plain GEMM and one pass for both, whichever is faster); dw_fc;
// dx = d_pre·w_fc.
struct MlpGelu : torch::autograd::Function<MlpGelu> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w_fc,
                            const at::Tensor& b_fc, const at::Tensor& w_proj,
                            const at::Tensor& b_proj, int64_t mode) {
    const at::Tensor fc16 = bf16_operand(w_fc), proj16 = bf16_operand(w_proj);
    auto [h, pre] = lt_linear_gelu(x, fc16, bias_operand(b_fc));
    ctx->save_for_backward({x, fc16, proj16, h, pre});
    ctx->saved_data["w_fc"] = w_fc;  // the master weights, for their gradients
    ctx->saved_data["w_proj"] = w_proj;
    ctx->saved_data["b_fc"] = b_fc;
    ctx->saved_data["b_proj"] = b_proj;
    ctx->saved_data["mode"] = mode;
    return lt_linear(h, proj16, bias_operand(b_proj));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& fc16 = saved[1];
    const auto& proj16 = saved[2];
    const auto& h = saved[3];
    const auto& pre = saved[4];
    const WeightGrad mode = saved_mode(ctx);
    auto arg = [ctx](const char* key) { return ctx->saved_data[key].toTensor(); };
    auto dy = bf16_grad_rows(grads[0]);
    at::Tensor dw_proj = ctx->needs_input_grad(3) ? weight_grad(dy, h, arg("w_proj"), mode) : at::Tensor();
    at::Tensor db_proj = ctx->needs_input_grad(4) ? bias_grad(dy, arg("b_proj")) : at::Tensor();
    auto [d_pre, db_pre] = lt_dgelu_bgrad(dy, proj16, pre);  // db_pre: Σrows d_pre in fp32
    at::Tensor dw_fc = ctx->needs_input_grad(1) ? weight_grad(d_pre, x, arg("w_fc"), mode) : at::Tensor();
    at::Tensor db_fc = ctx->needs_input_grad(2) ? db_pre.to(arg("b_fc").scalar_type()) : at::Tensor();
    at::Tensor dx = ctx->needs_input_grad(0) ? at::mm(d_pre, fc16) : at::Tensor();
    return {dx, dw_fc, db_fc, dw_proj, db_proj, at::Tensor()};
  }
};

}  // namespace

bool fused_linear_available(const at::Tensor& x) {
#ifdef GPTBENCH_WITH_CUDA
  if (!x.defined() || !x.is_cuda() || !x.is_floating_point() || x.scalar_type() == at::kDouble)
    return false;
  if (at::autocast::is_autocast_enabled(c10::DeviceType::CUDA))
    return at::autocast::get_autocast_dtype(c10::DeviceType::CUDA) == at::kBFloat16;
  return x.scalar_type() == at::kBFloat16;
#else
  (void)x;
  return false;
#endif
}

at::Tensor linear_fused(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                        WeightGrad mode) {
  const char* fn = "linear_fused";
  check_linear_input(fn, x);
  check_linear_layer(fn, "the", w, b, x.size(-1));
  if (!fused_linear_available(x) || x.numel() == 0 || !lt_shape_supported(w.size(1), w.size(0)))
    return at::linear(x, w, b);
  return unrows(LinearBias::apply(bf16_rows(x), w, b, static_cast<int64_t>(mode)), x);
}

at::Tensor mlp_gelu_fused(const at::Tensor& x, const at::Tensor& w_fc, const at::Tensor& b_fc,
                          const at::Tensor& w_proj, const at::Tensor& b_proj, WeightGrad mode) {
  const char* fn = "mlp_gelu_fused";
  check_linear_input(fn, x);
  check_linear_layer(fn, "c_fc", w_fc, b_fc, x.size(-1));
  check_linear_layer(fn, "c_proj", w_proj, b_proj, w_fc.size(0));
  if (!fused_linear_available(x) || x.numel() == 0 ||
      !lt_shape_supported(w_fc.size(1), w_fc.size(0)) ||
      !lt_shape_supported(w_proj.size(1), w_proj.size(0)))
    return at::linear(at::gelu(at::linear(x, w_fc, b_fc), "tanh"), w_proj, b_proj);
  return unrows(MlpGelu::apply(bf16_rows(x), w_fc, b_fc, w_proj, b_proj, static_cast<int64_t>(mode)), x);
}

}  // namespace gptbench

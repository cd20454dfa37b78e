#include "model/fused_linear.h"

#include <ATen/autocast_mode.h>
#include <torch/autograd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "ops/linear_lt.h"

namespace gptbench {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// ------------------------------------------------------------------ shape checks

[[noreturn]] void bad(const char* fn, const std::string& what) {
  throw std::invalid_argument(std::string(fn) + ": " + what);
}

void check_input(const char* fn, const at::Tensor& x) {
  if (!x.defined() || (x.dim() != 2 && x.dim() != 3))
    bad(fn, "x must be (B, T, C) or (N, C), got " +
                (x.defined() ? c10::str(x.sizes()) : std::string("an undefined tensor")));
}

// w (out, in) and b (out) of one layer taking `in` features.
void check_layer(const char* fn, const char* name, const at::Tensor& w, const at::Tensor& b,
                 int64_t in) {
  const std::string n(name);
  if (!w.defined() || w.dim() != 2 || w.size(1) != in)
    bad(fn, n + " weight must be (out, " + std::to_string(in) + "), got " +
                (w.defined() ? c10::str(w.sizes()) : std::string("an undefined tensor")));
  if (!b.defined() || b.dim() != 1 || b.size(0) != w.size(0))
    bad(fn, n + " bias must be (" + std::to_string(w.size(0)) + "), got " +
                (b.defined() ? c10::str(b.sizes()) : std::string("an undefined tensor")));
}

// ------------------------------------------------------------------ operands

at::Tensor to_bf16(const at::Tensor& t) {
  return at::autocast::cached_cast(at::kBFloat16, t, c10::DeviceType::CUDA);
}

at::Tensor bias_operand(const at::Tensor& b) {
  if (b.scalar_type() == at::kFloat && lt_fp32_bias_supported()) return b;
  return to_bf16(b);
}

// (B, T, C) or (N, C) as contiguous bf16 rows (N, C).
at::Tensor rows(const at::Tensor& x) { return to_bf16(x).reshape({-1, x.size(-1)}).contiguous(); }

at::Tensor unrows(const at::Tensor& y, const at::Tensor& x) {
  auto shape = x.sizes().vec();
  shape.back() = y.size(1);
  return y.view(shape);
}

at::ScalarType saved_dtype(AutogradContext* ctx, const char* key) {
  return static_cast<at::ScalarType>(ctx->saved_data[key].toInt());
}

// The incoming gradient as contiguous bf16 rows (autograd hands it in the output's dtype).
at::Tensor grad_rows(const at::Tensor& g) {
  return g.to(at::kBFloat16).reshape({-1, g.size(-1)}).contiguous();
}

// ------------------------------------------------------------------ autograd functions
// Both take 2-d contiguous bf16 rows and bf16 weights; biases bf16 or fp32. Every gradient has
// its input's dtype.

// y = x·wᵀ + b; backward: dw and db from one BGRADB GEMM, dx = dy·w.
struct LinearBGrad : torch::autograd::Function<LinearBGrad> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const at::Tensor& b) {
    ctx->save_for_backward({x, w});
    ctx->saved_data["b"] = static_cast<int64_t>(b.scalar_type());
    return lt_linear(x, w, b);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& w = saved[1];
    auto dy = grad_rows(grads[0]);
    auto [dw, db] = lt_wgrad_bgrad(dy, x, saved_dtype(ctx, "b"));
    at::Tensor dx = ctx->needs_input_grad(0) ? at::mm(dy, w) : at::Tensor();
    return {dx, dw, db};
  }
};

// y = gelu_tanh(x·w_fcᵀ + b_fc)·w_projᵀ + b_proj; saves x, h = gelu(pre) and pre (what the
// unfused composition saves too). Backward: dw_proj, db_proj (BGRADB); d_pre (DGELU);
// dw_fc, db_fc (BGRADB); dx = d_pre·w_fc.
struct MlpGelu : torch::autograd::Function<MlpGelu> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w_fc,
                            const at::Tensor& b_fc, const at::Tensor& w_proj,
                            const at::Tensor& b_proj) {
    auto [h, pre] = lt_linear_gelu(x, w_fc, b_fc);
    ctx->save_for_backward({x, w_fc, w_proj, h, pre});
    ctx->saved_data["b_fc"] = static_cast<int64_t>(b_fc.scalar_type());
    ctx->saved_data["b_proj"] = static_cast<int64_t>(b_proj.scalar_type());
    return lt_linear(h, w_proj, b_proj);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& w_fc = saved[1];
    const auto& w_proj = saved[2];
    const auto& h = saved[3];
    const auto& pre = saved[4];
    auto dy = grad_rows(grads[0]);
    auto [dw_proj, db_proj] = lt_wgrad_bgrad(dy, h, saved_dtype(ctx, "b_proj"));
    auto d_pre = lt_dgelu(dy, w_proj, pre);
    auto [dw_fc, db_fc] = lt_wgrad_bgrad(d_pre, x, saved_dtype(ctx, "b_fc"));
    at::Tensor dx = ctx->needs_input_grad(0) ? at::mm(d_pre, w_fc) : at::Tensor();
    return {dx, dw_fc, db_fc, dw_proj, db_proj};
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

at::Tensor linear_fused_bgrad(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  const char* fn = "linear_fused_bgrad";
  check_input(fn, x);
  check_layer(fn, "the", w, b, x.size(-1));
  if (!fused_linear_available(x) || x.numel() == 0 || !lt_shape_supported(w.size(1), w.size(0)))
    return at::linear(x, w, b);
  return unrows(LinearBGrad::apply(rows(x), to_bf16(w), bias_operand(b)), x);
}

at::Tensor mlp_gelu_fused(const at::Tensor& x, const at::Tensor& w_fc, const at::Tensor& b_fc,
                          const at::Tensor& w_proj, const at::Tensor& b_proj) {
  const char* fn = "mlp_gelu_fused";
  check_input(fn, x);
  check_layer(fn, "c_fc", w_fc, b_fc, x.size(-1));
  check_layer(fn, "c_proj", w_proj, b_proj, w_fc.size(0));
  if (!fused_linear_available(x) || x.numel() == 0 ||
      !lt_shape_supported(w_fc.size(1), w_fc.size(0)) ||
      !lt_shape_supported(w_proj.size(1), w_proj.size(0)))
    return at::linear(at::gelu(at::linear(x, w_fc, b_fc), "tanh"), w_proj, b_proj);
  return unrows(MlpGelu::apply(rows(x), to_bf16(w_fc), bias_operand(b_fc), to_bf16(w_proj),
                               bias_operand(b_proj)),
                x);
}

}  // namespace gptbench

#include "model/fp8_linear.h"

#include <ATen/core/grad_mode.h>
#include <torch/autograd.h>

#include "model/fused_linear.h"
#include "model/linear_operands.h"
#include "ops/column_sum.h"
#include "ops/fp8/linear.h"

namespace gptbench {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr LinearImpl kImpl = LinearImpl::kFp8;

// y (M, N) bf16 = X̂·Ŵᵀ (+ b in bf16), from x (M, K) bf16 rows and w (N, K); `saved` receives
// the FP8 operands (with their transposed copies when `for_backward`).
at::Tensor forward_rows(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                        Fp8LinearSaved& saved, bool for_backward) {
  at::Tensor y = at::empty({x.size(0), w.size(0)}, x.options());  // (M, N) bf16
  linear_forward(kImpl, x, bf16_operand(w), y, saved, for_backward);
  if (b.defined()) y.add_(bf16_operand(b));
  return y;
}

at::ScalarType saved_dtype(AutogradContext* ctx, const char* key) {
  return static_cast<at::ScalarType>(ctx->saved_data[key].toInt());
}

// The bias argument of a layer without one: autograd functions take defined tensors only, so an
// empty one, which adds nothing and gets no gradient.
at::Tensor no_bias(const at::Tensor& w) { return at::empty({0}, w.options()); }

// Takes x as 2-d contiguous bf16 rows and the layer's own (master) weight and bias (or
// no_bias); every gradient has its input's dtype.
struct Fp8Linear : torch::autograd::Function<Fp8Linear> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const at::Tensor& b_or_empty) {
    const at::Tensor b = b_or_empty.numel() > 0 ? b_or_empty : at::Tensor();
    Fp8LinearSaved saved;
    at::Tensor y = forward_rows(x, w, b, saved, /*for_backward=*/true);
    // The backward's GEMMs read the transposed copies only: X̂ᵀ (K, M), Ŵᵀ (K, N) and their
    // scales. The plain copies and the bf16 weight are freed here.
    ctx->save_for_backward({saved.x.data_t, saved.x.scale_inv, saved.w.data_t, saved.w.scale_inv});
    ctx->saved_data["w_dtype"] = static_cast<int64_t>(w.scalar_type());
    ctx->saved_data["b_dtype"] = static_cast<int64_t>(b.defined() ? b.scalar_type() : w.scalar_type());
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    Fp8LinearSaved saved;
    saved.x.data_t = s[0];
    saved.x.scale_inv = s[1];
    saved.w.data_t = s[2];
    saved.w.scale_inv = s[3];
    const int64_t k = s[0].size(0), m = s[0].size(1), n = s[2].size(1);
    const at::Tensor dy = bf16_grad_rows(grads[0]);  // (M, N)
    // For the FP8 impls linear_backward takes the values from `saved` and only the shapes of x
    // and w (ops/fp8/linear.h): zero-stride stand-ins, so that x and W need not be kept in bf16.
    const at::Tensor one = at::empty({1, 1}, dy.options());
    at::Tensor dx = at::empty({m, k}, dy.options()), dw = at::empty({n, k}, dy.options());
    linear_backward(kImpl, dy, one.expand({m, k}), one.expand({n, k}), saved, dx, dw);
    return {ctx->needs_input_grad(0) ? dx : at::Tensor(),
            ctx->needs_input_grad(1) ? dw.to(saved_dtype(ctx, "w_dtype")) : at::Tensor(),
            ctx->needs_input_grad(2) ? column_sum(dy).to(saved_dtype(ctx, "b_dtype")) : at::Tensor()};
  }
};

}  // namespace

bool fp8_linear_shape_supported(int64_t rows, int64_t in, int64_t out) {
  return rows > 0 && in > 0 && out > 0 && rows % 16 == 0 && in % 16 == 0 && out % 16 == 0;
}

bool fp8_linear_available(const at::Tensor& x, const at::Tensor& w) {
  if (!fused_linear_available(x) || x.dim() < 1 || !w.defined() || w.dim() != 2) return false;
  const int64_t in = x.size(-1);
  if (!fp8_linear_shape_supported(in > 0 ? x.numel() / in : 0, in, w.size(0))) return false;
  return linear_unsupported(kImpl, x.device()).empty();
}

at::Tensor linear_fp8(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  const char* fn = "linear_fp8";
  check_linear_input(fn, x);
  check_linear_layer(fn, "the", w, b, x.size(-1), /*bias_optional=*/true);
  if (!fp8_linear_available(x, w)) return b.defined() ? linear_fused(x, w, b) : at::linear(x, w);
  const bool grad = at::GradMode::is_enabled() &&
                    (x.requires_grad() || w.requires_grad() || (b.defined() && b.requires_grad()));
  if (!grad) {
    Fp8LinearSaved saved;
    return unrows(forward_rows(bf16_rows(x), w, b, saved, /*for_backward=*/false), x);
  }
  return unrows(Fp8Linear::apply(bf16_rows(x), w, b.defined() ? b : no_bias(w)), x);
}

}  // namespace gptbench

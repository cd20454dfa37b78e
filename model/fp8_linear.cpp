#include "model/fp8_linear.h"

#include <ATen/core/grad_mode.h>
#include <torch/autograd.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "model/fused_linear.h"
#include "model/linear_operands.h"
#include "ops/column_sum.h"
#include "ops/fp8/linear.h"

namespace gptbench {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr LinearImpl kImpl = LinearImpl::kFp8;

// y (M, N) bf16 = X̂·Ŵᵀ (+ b, bf16, in the GEMM's epilogue), from X̂ (x quantized per tensor to
// e4m3, with X̂ᵀ when `for_backward`) and w (N, K); `saved` receives the FP8 operands.
// `scales`: delayed scaling's (W's taken here), or null.
at::Tensor forward_quantized(Fp8PerTensor xq, const at::Tensor& w, const at::Tensor& b, Fp8LinearSaved& saved,
                             bool for_backward, Fp8LayerScales* scales) {
  at::Tensor y = at::empty({xq.data.size(0), w.size(0)}, xq.data.options().dtype(at::kBFloat16));
  linear_forward_fp8(std::move(xq), bf16_operand(w), y, saved, for_backward,
                     b.defined() ? bf16_operand(b).contiguous() : at::Tensor(), scales ? &scales->w : nullptr);
  return y;
}

// The same from x (M, K) bf16 rows.
at::Tensor forward_rows(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                        Fp8LinearSaved& saved, bool for_backward, Fp8LayerScales* scales) {
  const Fp8Copies copies = for_backward ? Fp8Copies::kBoth : Fp8Copies::kPlain;
  return forward_quantized(quantize_per_tensor_fp8(x, Fp8Format::kE4m3, copies, scales ? &scales->x : nullptr), w,
                           b, saved, for_backward, scales);
}

// The same from GELU(bf16(u + bp)), u (M, K) bf16 rows and bp a bf16 bias, quantized where GELU
// is computed.
at::Tensor forward_after_gelu(const at::Tensor& u, const at::Tensor& bp, const at::Tensor& w, const at::Tensor& b,
                              Fp8LinearSaved& saved, bool for_backward, Fp8LayerScales* scales) {
  const Fp8Copies copies = for_backward ? Fp8Copies::kBoth : Fp8Copies::kPlain;
  return forward_quantized(
      quantize_per_tensor_gelu_fp8(u, bp, Fp8Format::kE4m3, copies, scales ? &scales->x : nullptr), w, b, saved,
      for_backward, scales);
}

at::ScalarType saved_dtype(AutogradContext* ctx, const char* key) {
  return static_cast<at::ScalarType>(ctx->saved_data[key].toInt());
}

// The bias argument of a layer without one: autograd functions take defined tensors only, so an
// empty one, which adds nothing and gets no gradient.
at::Tensor no_bias(const at::Tensor& w) { return at::empty({0}, w.options()); }

// What a layer's backward needs, after `own` tensors of the caller's: X̂ᵀ (K, M), Ŵᵀ (K, N) and
// their scales (the plain copies and the bf16 weight are freed), w's and b's dtypes, and the
// layer's delayed scales if it has them (dy's are used there).
void save_layer(AutogradContext* ctx, std::vector<at::Tensor> own, const Fp8LinearSaved& saved, const at::Tensor& w,
                const at::Tensor& b, const Fp8Scales& scales) {
  own.insert(own.end(), {saved.x.data_t, saved.x.scale_inv, saved.w.data_t, saved.w.scale_inv});
  ctx->save_for_backward(own);
  ctx->saved_data["w_dtype"] = static_cast<int64_t>(w.scalar_type());
  ctx->saved_data["b_dtype"] = static_cast<int64_t>(b.defined() ? b.scalar_type() : w.scalar_type());
  if (scales) ctx->saved_data["scales"] = c10::IValue::make_capsule(scales);
}

Fp8Scales saved_scales(AutogradContext* ctx) {
  auto it = ctx->saved_data.find("scales");
  if (it == ctx->saved_data.end()) return {};
  return c10::static_intrusive_pointer_cast<Fp8LayerScales>(it->second.toCapsule());
}

struct LayerGrads {
  at::Tensor dx, dw, db;  // dx (M, K) bf16; dw, db in w's and b's dtypes, or undefined
};

// The layer's backward from what save_layer kept, starting at saved tensor `first`, for the
// incoming gradient of y.
LayerGrads backward_layer(AutogradContext* ctx, const variable_list& s, size_t first, const at::Tensor& grad_y,
                          bool need_w, bool need_b) {
  Fp8LinearSaved saved;
  saved.x.data_t = s[first];
  saved.x.scale_inv = s[first + 1];
  saved.w.data_t = s[first + 2];
  saved.w.scale_inv = s[first + 3];
  const int64_t k = saved.x.data_t.size(0), m = saved.x.data_t.size(1), n = saved.w.data_t.size(1);
  const at::Tensor dy = bf16_grad_rows(grad_y);  // (M, N)
  // For the FP8 impls linear_backward takes the values from `saved` and only the shapes of x
  // and w (ops/fp8/linear.h): zero-stride stand-ins, so that x and W need not be kept in bf16.
  const at::Tensor one = at::empty({1, 1}, dy.options());
  LayerGrads g{at::empty({m, k}, dy.options()), at::empty({n, k}, dy.options()), {}};
  const Fp8Scales scales = saved_scales(ctx);
  linear_backward(kImpl, dy, one.expand({m, k}), one.expand({n, k}), saved, g.dx, g.dw,
                  scales ? &scales->dy : nullptr);
  g.dw = need_w ? g.dw.to(saved_dtype(ctx, "w_dtype")) : at::Tensor();
  if (need_b) g.db = column_sum(dy).to(saved_dtype(ctx, "b_dtype"));
  return g;
}

// Takes x as 2-d contiguous bf16 rows and the layer's own (master) weight and bias (or
// no_bias); every gradient has its input's dtype.
struct Fp8Linear : torch::autograd::Function<Fp8Linear> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const at::Tensor& b_or_empty, const Fp8Scales& scales) {
    const at::Tensor b = b_or_empty.numel() > 0 ? b_or_empty : at::Tensor();
    Fp8LinearSaved saved;
    at::Tensor y = forward_rows(x, w, b, saved, /*for_backward=*/true, scales.get());
    save_layer(ctx, {}, saved, w, b, scales);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    LayerGrads g = backward_layer(ctx, ctx->get_saved_variables(), 0, grads[0], ctx->needs_input_grad(1),
                                  ctx->needs_input_grad(2));
    return {ctx->needs_input_grad(0) ? g.dx : at::Tensor(), g.dw, g.db, at::Tensor()};
  }
};

// linear(GELU(bf16(u + b_pre)), w, b), the MLP's c_proj after its GELU: u is c_fc's bf16 output
// (2-D rows) before its bias b_pre, and the GELU output is quantized where it is computed
// (quantize_per_tensor_gelu_fp8), never written in bf16. The backward recomputes GELU's input
// from u and b_pre in the pass that takes GELU's derivative and sums b_pre's gradient
// (gelu_backward_column_sum).
struct Fp8LinearAfterGelu : torch::autograd::Function<Fp8LinearAfterGelu> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& u, const at::Tensor& b_pre,
                            const at::Tensor& w, const at::Tensor& b_or_empty, const Fp8Scales& scales) {
    const at::Tensor b = b_or_empty.numel() > 0 ? b_or_empty : at::Tensor();
    const at::Tensor bp = bf16_operand(b_pre);
    Fp8LinearSaved saved;
    at::Tensor y = forward_after_gelu(u, bp, w, b, saved, /*for_backward=*/true, scales.get());
    save_layer(ctx, {u, bp}, saved, w, b, scales);
    ctx->saved_data["b_pre_dtype"] = static_cast<int64_t>(b_pre.scalar_type());
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    LayerGrads g = backward_layer(ctx, s, 2, grads[0], ctx->needs_input_grad(2), ctx->needs_input_grad(3));
    auto [du, db_pre] = gelu_backward_column_sum(g.dx, s[0], s[1]);
    return {du, db_pre.to(saved_dtype(ctx, "b_pre_dtype")), g.dw, g.db, at::Tensor()};
  }
};

}  // namespace

Fp8Scaling parse_fp8_scaling(const std::string& name) {
  if (name == "current") return Fp8Scaling::kCurrent;
  if (name == "delayed") return Fp8Scaling::kDelayed;
  throw std::invalid_argument("unknown FP8 scaling '" + name + "': current (each tensor's amax now) or delayed "
                              "(the largest amax of its last casts)");
}

const char* fp8_scaling_name(Fp8Scaling s) { return s == Fp8Scaling::kDelayed ? "delayed" : "current"; }

bool fp8_linear_shape_supported(int64_t rows, int64_t in, int64_t out) {
  return rows > 0 && in > 0 && out > 0 && rows % 16 == 0 && in % 16 == 0 && out % 16 == 0;
}

bool fp8_linear_available(const at::Tensor& x, const at::Tensor& w) {
  if (!fused_linear_available(x) || x.dim() < 1 || !w.defined() || w.dim() != 2) return false;
  const int64_t in = x.size(-1);
  if (!fp8_linear_shape_supported(in > 0 ? x.numel() / in : 0, in, w.size(0))) return false;
  return linear_unsupported(kImpl, x.device()).empty();
}

at::Tensor linear_fp8(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, const Fp8Scales& scales) {
  const char* fn = "linear_fp8";
  check_linear_input(fn, x);
  check_linear_layer(fn, "the", w, b, x.size(-1), /*bias_optional=*/true);
  if (!fp8_linear_available(x, w)) return b.defined() ? linear_fused(x, w, b) : at::linear(x, w);
  const bool grad = at::GradMode::is_enabled() &&
                    (x.requires_grad() || w.requires_grad() || (b.defined() && b.requires_grad()));
  if (!grad) {
    Fp8LinearSaved saved;
    return unrows(forward_rows(bf16_rows(x), w, b, saved, /*for_backward=*/false, scales.get()), x);
  }
  return unrows(Fp8Linear::apply(bf16_rows(x), w, b.defined() ? b : no_bias(w), scales), x);
}

at::Tensor linear_fp8_after_gelu(const at::Tensor& u, const at::Tensor& b_pre, const at::Tensor& w,
                                 const at::Tensor& b, const Fp8Scales& scales) {
  const char* fn = "linear_fp8_after_gelu";
  check_linear_input(fn, u);
  if (!b_pre.defined() || b_pre.dim() != 1 || b_pre.size(0) != u.size(-1))
    throw std::invalid_argument(std::string(fn) + ": b_pre must be (" + std::to_string(u.size(-1)) +
                                "), the bias of the layer that made u");
  check_linear_layer(fn, "the", w, b, u.size(-1), /*bias_optional=*/true);
  if (!fp8_linear_available(u, w)) {
    const at::Tensor h = at::gelu(u + b_pre.to(u.scalar_type()), "tanh");
    return linear_fp8(h, w, b, scales);
  }
  const bool grad = at::GradMode::is_enabled() && (u.requires_grad() || b_pre.requires_grad() ||
                                                   w.requires_grad() || (b.defined() && b.requires_grad()));
  const at::Tensor rows = bf16_rows(u);
  if (!grad) {
    Fp8LinearSaved saved;
    return unrows(forward_after_gelu(rows, bf16_operand(b_pre), w, b, saved, /*for_backward=*/false, scales.get()),
                  u);
  }
  return unrows(Fp8LinearAfterGelu::apply(rows, b_pre, w, b.defined() ? b : no_bias(w), scales), u);
}

}  // namespace gptbench

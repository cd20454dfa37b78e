#include "model/linear_operands.h"

#include <ATen/autocast_mode.h>

#include <stdexcept>
#include <string>

namespace gptbench {
namespace {

[[noreturn]] void bad(const char* fn, const std::string& what) {
  throw std::invalid_argument(std::string(fn) + ": " + what);
}

std::string sizes_of(const at::Tensor& t) {
  return t.defined() ? c10::str(t.sizes()) : std::string("an undefined tensor");
}

}  // namespace

void check_linear_input(const char* fn, const at::Tensor& x) {
  if (!x.defined() || (x.dim() != 2 && x.dim() != 3))
    bad(fn, "x must be (B, T, C) or (N, C), got " + sizes_of(x));
}

void check_linear_layer(const char* fn, const char* name, const at::Tensor& w, const at::Tensor& b,
                        int64_t in, bool bias_optional) {
  const std::string n(name);
  if (!w.defined() || w.dim() != 2 || w.size(1) != in)
    bad(fn, n + " weight must be (out, " + std::to_string(in) + "), got " + sizes_of(w));
  if (bias_optional && !b.defined()) return;
  if (!b.defined() || b.dim() != 1 || b.size(0) != w.size(0))
    bad(fn, n + " bias must be (" + std::to_string(w.size(0)) + "), got " + sizes_of(b));
}

at::Tensor bf16_operand(const at::Tensor& t) {
  return at::autocast::cached_cast(at::kBFloat16, t, c10::DeviceType::CUDA);
}

at::Tensor bf16_rows(const at::Tensor& x) {
  return bf16_operand(x).reshape({-1, x.size(-1)}).contiguous();
}

at::Tensor unrows(const at::Tensor& y, const at::Tensor& x) {
  auto shape = x.sizes().vec();
  shape.back() = y.size(1);
  return y.view(shape);
}

at::Tensor bf16_grad_rows(const at::Tensor& g) {
  return g.to(at::kBFloat16).reshape({-1, g.size(-1)}).contiguous();
}

}  // namespace gptbench

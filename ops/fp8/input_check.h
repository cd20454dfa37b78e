#pragma once
// The input check the FP8 quantizers share: a 2-D (rows, cols) tensor of a wider floating type.
#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

namespace gptbench {

// Throws std::invalid_argument naming `fn` unless x is a defined 2-D bf16, fp16 or fp32 tensor.
inline void check_fp8_quantizer_input(const at::Tensor& x, const char* fn) {
  if (!x.defined() || x.dim() != 2)
    throw std::invalid_argument(std::string(fn) + ": x must be a 2-D (rows, cols) tensor");
  if (!at::isFloatingType(x.scalar_type()) || at::isFloat8Type(x.scalar_type()))
    throw std::invalid_argument(std::string(fn) + ": x must be bf16, fp16 or fp32, got " +
                                std::string(c10::toString(x.scalar_type())));
}

}  // namespace gptbench

#pragma once
// at::ScalarType to ElemType, for the LibTorch-facing wrappers of our kernels (host code only;
// the .cu files see ElemType alone).
#include <c10/core/ScalarType.h>

#include <initializer_list>
#include <optional>
#include <string>

#include "ops/device/elem_type.h"

namespace gptbench {

// The ElemType of `t` when it is one of `supported` (the types a kernel takes), else nullopt.
std::optional<ElemType> elem_type_in(c10::ScalarType t, std::initializer_list<ElemType> supported);

// The ElemType of `t`, which must be one of `supported`: else std::invalid_argument
// "<what>: fp32 or bf16 only, got Half" (the supported names, LibTorch's name of t).
ElemType check_elem_type(c10::ScalarType t, std::initializer_list<ElemType> supported,
                         const std::string& what);

}  // namespace gptbench

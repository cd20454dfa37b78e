#include "ops/device/elem_type_torch.h"

#include <stdexcept>

namespace gptbench {
namespace {

std::optional<ElemType> elem_type_of(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float: return ElemType::kF32;
    case c10::ScalarType::BFloat16: return ElemType::kBF16;
    case c10::ScalarType::Half: return ElemType::kF16;
    default: return std::nullopt;
  }
}

// "fp32", "fp32 or bf16", "fp32, bf16 or fp16".
std::string names_of(std::initializer_list<ElemType> types) {
  std::string s;
  size_t i = 0;
  for (const ElemType e : types) {
    if (i > 0) s += i + 1 == types.size() ? " or " : ", ";
    s += elem_type_name(e);
    ++i;
  }
  return s;
}

}  // namespace

std::optional<ElemType> elem_type_in(c10::ScalarType t, std::initializer_list<ElemType> supported) {
  const std::optional<ElemType> e = elem_type_of(t);
  for (const ElemType s : supported)
    if (e == s) return e;
  return std::nullopt;
}

ElemType check_elem_type(c10::ScalarType t, std::initializer_list<ElemType> supported,
                         const std::string& what) {
  if (const auto e = elem_type_in(t, supported)) return *e;
  throw std::invalid_argument(what + ": " + names_of(supported) + " only, got " + c10::toString(t));
}

}  // namespace gptbench

#pragma once
// The storage element types of our kernels' operands: one enum for every launcher (softmax,
// LayerNorm, cross-entropy, flash attention, the fused optimizers). Torch- and CUDA-free, so
// .cu files, the launchers' headers and host code share it; convert.cuh maps the CUDA storage
// types to it, elem_type_torch.h maps at::ScalarType to it. Each launcher accepts a subset and
// rejects the rest.
#include <cstdint>

namespace gptbench {

// The values are stored in launch tables and keys (int32): fixed, never reordered.
enum class ElemType : int32_t { kF32 = 0, kBF16 = 1, kF16 = 2 };

// Bytes per element.
constexpr int elem_bytes(ElemType t) { return t == ElemType::kF32 ? 4 : 2; }

// "fp32", "bf16" or "fp16": the names the project's messages and benchmark names use.
constexpr const char* elem_type_name(ElemType t) {
  switch (t) {
    case ElemType::kF32: return "fp32";
    case ElemType::kBF16: return "bf16";
    case ElemType::kF16: return "fp16";
  }
  return "an unknown type";
}

}  // namespace gptbench

#pragma once
// The operand our vectorised kernels read: t contiguous and 16-byte aligned (a contiguous view
// may start anywhere; such a view is copied to a fresh allocation, which is aligned).
#include <ATen/ATen.h>

#include <cstdint>

namespace gptbench {

inline at::Tensor aligned_contiguous(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  if (reinterpret_cast<uintptr_t>(c.data_ptr()) % 16 != 0) c = c.clone(at::MemoryFormat::Contiguous);
  return c;
}

}  // namespace gptbench

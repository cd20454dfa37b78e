#pragma once
// Host-side helper of the fused paths: copies a table of plain structs (tensor pointers, chunk
// references) to the device once, held by a LibTorch byte tensor; rebuilt only when the
// tensors it points at change (compared by a key of data pointers).
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace gptbench {
namespace optim {

// A device copy of `bytes` bytes at `data` (a uint8 tensor on `device`).
at::Tensor upload_bytes(const void* data, size_t bytes, c10::Device device);

template <typename T>
at::Tensor upload_table(const std::vector<T>& rows, c10::Device device) {
  return upload_bytes(rows.data(), rows.size() * sizeof(T), device);
}

// The data pointers of tensors (undefined → 0): the key a table is valid for.
std::vector<const void*> pointer_key(const std::vector<at::Tensor>& tensors);

}  // namespace optim
}  // namespace gptbench

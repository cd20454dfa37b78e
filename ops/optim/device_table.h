#pragma once
// Host-side helpers of the fused paths: copies a table of plain structs (tensor pointers, chunk
// references) to the device once, held by a LibTorch byte tensor; rebuilt only when the
// tensors it points at change (compared by a key of data pointers).
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "ops/optim/multi_tensor.h"

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

// The two device tables of one fused optimizer's launch: a row per tensor (pointers, sizes,
// flags) and the work items (chunks or tiles) the grid walks. They stay valid while the
// parameters, the gradients and the gradient dtype do; a step asks stale() and rebuilds only
// then. The new key is kept only once store() has uploaded the tables, so a build that throws
// is retried on the next step.
class LaunchTables {
 public:
  // True when params/grads (data pointers, gradient dtype) differ from the last store().
  bool stale(const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads);

  template <typename Row, typename Item>
  void store(const std::vector<Row>& rows, const std::vector<Item>& items, c10::Device device) {
    rows_ = upload_table(rows, device);
    items_ = upload_table(items, device);
    num_items_ = static_cast<int64_t>(items.size());
    key_ = std::move(pending_);
  }
  // Rows plus the chunk table of their tensors' sizes (each row's `n`; make_chunks).
  template <typename Row>
  void store_chunked(const std::vector<Row>& rows, c10::Device device) {
    std::vector<int64_t> sizes;
    sizes.reserve(rows.size());
    for (const Row& r : rows) sizes.push_back(r.n);
    store(rows, make_chunks(sizes), device);
  }

  template <typename Row>
  const Row* rows() const { return reinterpret_cast<const Row*>(rows_.data_ptr()); }
  template <typename Item = ChunkRef>
  const Item* items() const { return reinterpret_cast<const Item*>(items_.data_ptr()); }
  int64_t num_items() const { return num_items_; }

 private:
  std::vector<const void*> key_, pending_;
  at::Tensor rows_, items_;  // uint8 tensors on the parameters' device
  int64_t num_items_ = 0;
};

}  // namespace optim
}  // namespace gptbench

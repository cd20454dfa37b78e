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

// The gradient type of a step's launch (FusedOptimizer::step checked: all fp32 or all bf16).
ElemType grad_type_of(const std::vector<at::Tensor>& grads);

// A launch-table row with the fields every optimizer's row has set: the parameter p (fp32), its
// gradient g and their size n; the rest zero.
template <typename Row>
Row tensor_row(const at::Tensor& param, const at::Tensor& grad) {
  Row r{};
  r.p = param.data_ptr<float>();
  r.g = grad.data_ptr();
  r.n = param.numel();
  return r;
}

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
  // When stale(): a row per parameter i, tensor_row(params[i], grads[i]) completed by
  // fill(row, i), and their chunk table, stored.
  template <typename Row, typename Fill>
  void refresh_chunked(const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads,
                       Fill fill) {
    if (!stale(params, grads)) return;
    std::vector<Row> rows;
    rows.reserve(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      Row r = tensor_row<Row>(params[i], grads[i]);
      fill(r, i);
      rows.push_back(r);
    }
    store_chunked(rows, params[0].device());
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

#include "ops/optim/device_table.h"

#include <cstring>

#include "ops/device/elem_type_torch.h"

namespace gptbench {
namespace optim {

at::Tensor upload_bytes(const void* data, size_t bytes, c10::Device device) {
  auto host = at::empty({static_cast<int64_t>(bytes > 0 ? bytes : 1)}, at::kByte);
  if (bytes > 0) std::memcpy(host.data_ptr(), data, bytes);
  return host.to(device);  // pageable host memory: the copy completes before .to() returns
}

std::vector<const void*> pointer_key(const std::vector<at::Tensor>& tensors) {
  std::vector<const void*> key;
  key.reserve(tensors.size());
  for (const auto& t : tensors) key.push_back(t.defined() ? t.data_ptr() : nullptr);
  return key;
}

ElemType grad_type_of(const std::vector<at::Tensor>& grads) {
  return check_elem_type(grads[0].scalar_type(), {ElemType::kF32, ElemType::kBF16},
                         "optimizer: gradients");
}

bool LaunchTables::stale(const std::vector<at::Tensor>& params,
                         const std::vector<at::Tensor>& grads) {
  pending_ = pointer_key(grads);
  for (const void* q : pointer_key(params)) pending_.push_back(q);
  const bool bf16 = !grads.empty() && grads[0].scalar_type() == at::kBFloat16;
  pending_.push_back(reinterpret_cast<const void*>(static_cast<uintptr_t>(bf16)));
  return pending_ != key_;
}

}  // namespace optim
}  // namespace gptbench

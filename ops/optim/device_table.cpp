#include "ops/optim/device_table.h"

#include <cstring>

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

}  // namespace optim
}  // namespace gptbench

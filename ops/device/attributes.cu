#include "ops/device/attributes.h"

#include <map>
#include <mutex>
#include <utility>

#include "ops/cuda_check.h"

namespace gptbench {

int device_attribute(cudaDeviceAttr attr) {
  static std::mutex mu;
  static std::map<std::pair<int, int>, int> values;
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = values.try_emplace({dev, static_cast<int>(attr)}, 0);
  if (fresh) {
    try {
      CUDA_CHECK(cudaDeviceGetAttribute(&it->second, attr, dev));
    } catch (...) {
      values.erase(it);
      throw;
    }
  }
  return it->second;
}

}  // namespace gptbench

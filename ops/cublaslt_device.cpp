#include "ops/cublaslt_device.h"

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/ATen.h>

#include <map>
#include <mutex>

#include "ops/cuda_check.h"

namespace gptbench {

LtDevice lt_device(int device) {
  static std::mutex mu;
  static std::map<int, cublasLtHandle_t> handles;
  static std::map<int, at::Tensor> workspaces;
  std::lock_guard<std::mutex> lock(mu);
  auto& h = handles[device];
  if (!h) CUBLAS_CHECK(cublasLtCreate(&h));
  auto& ws = workspaces[device];
  if (!ws.defined())
    ws = at::empty({static_cast<int64_t>(kLtWorkspaceBytes)},
                   at::TensorOptions().dtype(at::kByte).device(at::kCUDA, device));
  return {h, ws.data_ptr()};
}

}  // namespace gptbench
#endif  // GPTBENCH_WITH_CUDA

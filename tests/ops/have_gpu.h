#pragma once
// Whether the GPU tests of our own kernels can run: a CUDA build of the kernels and a device.
#include <torch/cuda.h>

namespace gptbench {

inline bool have_gpu() {
#ifdef GPTBENCH_WITH_CUDA
  return torch::cuda::is_available();
#else
  return false;
#endif
}

}  // namespace gptbench

#pragma once
// Attributes of the current CUDA device, read once per device and attribute (host side; built
// with the CUDA sources). Throws gptbench::CudaError on a CUDA failure.
#include <cuda_runtime_api.h>

namespace gptbench {

int device_attribute(cudaDeviceAttr attr);
inline int sm_count() { return device_attribute(cudaDevAttrMultiProcessorCount); }

}  // namespace gptbench

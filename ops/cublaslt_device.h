#pragma once
// The cuBLASLt handle and workspace that our cuBLASLt calls share (ops/gemm_cublaslt.cpp,
// ops/linear_lt.cpp): one of each per device, created on first use and kept for the process.
// A workspace is used by one call at a time on the caller's current stream, as LibTorch uses its
// own; callers hold their own lock while they launch.
#ifdef GPTBENCH_WITH_CUDA
#include <cublasLt.h>

#include <cstddef>

namespace gptbench {

constexpr size_t kLtWorkspaceBytes = 32u << 20;  // what LibTorch gives cuBLASLt on Hopper

struct LtDevice {
  cublasLtHandle_t handle;
  void* workspace;  // kLtWorkspaceBytes
};

// The handle and workspace of CUDA device `device`. Throws gptbench::CudaError when cuBLASLt
// cannot create a handle, c10::Error when the workspace cannot be allocated.
LtDevice lt_device(int device);

}  // namespace gptbench
#endif  // GPTBENCH_WITH_CUDA

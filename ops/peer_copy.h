#pragma once
// A copy driven by the GPU's multiprocessors (loads and stores of 16 bytes), the way NCCL moves
// data between GPUs, rather than by a copy engine (cudaMemcpyPeer, LibTorch's cross-device
// copy_), which reaches a fraction of NVLink's bandwidth. The comm family's %peak divides by
// what it measures (fixtures/comm_case.cpp). Torch-free; built with the kernels.
#include <cuda_runtime_api.h>

#include <cstddef>

namespace gptbench {

// Lets the current device read and write the memory of device `peer` (cudaDeviceEnablePeerAccess;
// already enabled is fine). Throws CudaError when the two devices cannot reach each other.
void enable_peer_access(int peer);

// Copies `bytes` from `src` to `dst` on `stream` with a kernel of the current device: either
// pointer may be on a peer device whose access is enabled. Both 16-byte aligned, bytes a
// multiple of 16 (std::invalid_argument otherwise).
void launch_peer_copy(void* dst, const void* src, size_t bytes, cudaStream_t stream);

}  // namespace gptbench

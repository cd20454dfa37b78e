// Grid-stride copy in 16-byte words (see ops/peer_copy.h).
#include "ops/peer_copy.h"

#include <cstdint>
#include <stdexcept>

#include "ops/cuda_check.h"

namespace gptbench {
namespace {

constexpr int kThreads = 512;
constexpr int kBlocksPerSm = 4;

__global__ void __launch_bounds__(kThreads) peer_copy_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src,
                                                             size_t words) {
  const size_t stride = static_cast<size_t>(gridDim.x) * kThreads;
  for (size_t i = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x; i < words; i += stride) dst[i] = src[i];
}

}  // namespace

void enable_peer_access(int peer) {
  const cudaError_t err = cudaDeviceEnablePeerAccess(peer, 0);
  if (err == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();  // clear the (non-sticky) error so that later checks do not see it
    return;
  }
  CUDA_CHECK(err);
}

void launch_peer_copy(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (reinterpret_cast<uintptr_t>(dst) % 16 != 0 || reinterpret_cast<uintptr_t>(src) % 16 != 0 || bytes % 16 != 0)
    throw std::invalid_argument("launch_peer_copy: pointers must be 16-byte aligned and bytes a multiple of 16");
  const size_t words = bytes / 16;
  if (words == 0) return;
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const size_t blocks = (words + kThreads - 1) / kThreads;
  const int grid = static_cast<int>(blocks < static_cast<size_t>(sms) * kBlocksPerSm ? blocks : static_cast<size_t>(sms) * kBlocksPerSm);
  peer_copy_kernel<<<grid, kThreads, 0, stream>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src), words);
  CUDA_CHECK_LAUNCH();
}

}  // namespace gptbench

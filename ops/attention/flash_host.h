#pragma once
// Host-side pieces our attention wrappers share (flash.cpp, flash_fp8.cpp): which tensors the
// kernels read in place, and the Hopper kernels' zeroed work counter. LibTorch and CUDA builds
// only; not part of the public API (ops/attention/flash.h, flash_fp8.h).
#include <ATen/ATen.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda_check.h"

namespace gptbench {

// Whether a (B, H, L, d) tensor is laid out as the kernels read it: last dim contiguous, every
// other stride a multiple of 8 elements, the data 16-byte aligned.
inline bool flash_reads_in_place(const at::Tensor& t) {
  return t.stride(3) == 1 && t.stride(0) % 8 == 0 && t.stride(1) % 8 == 0 &&
         t.stride(2) % 8 == 0 && reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
}

// The Hopper forward's work-tile counter on `like`'s device, zeroed on `stream` by a memset
// rather than at::zeros' fill kernel (the host's share of a short call is as long as the GPU's).
inline at::Tensor flash_zeroed_counter(const at::Tensor& like, cudaStream_t stream) {
  at::Tensor counter = at::empty({1}, like.options().dtype(at::kInt));
  CUDA_CHECK(cudaMemsetAsync(counter.data_ptr<int>(), 0, sizeof(int), stream));
  return counter;
}

}  // namespace gptbench

// Test-only kernel behind --gptbench_fault=illegal_address (see ops/fault_kernel.h).
#include "ops/fault_kernel.h"

#include <cstdint>

#include "ops/cuda_check.h"

namespace gptbench {
namespace {

__global__ void write_through(int* p) { *p = 42; }

}  // namespace

void launch_illegal_write() {
  // Low addresses are never mapped on the device: the store faults with cudaErrorIllegalAddress.
  int* bad = reinterpret_cast<int*>(static_cast<uintptr_t>(0x10));
  write_through<<<1, 1>>>(bad);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace gptbench

// One thread spinning on %globaltimer (see ops/gpu_hold.h).
#include "ops/gpu_hold.h"

#include "ops/cuda_check.h"

namespace gptbench {
namespace {

__device__ uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void gpu_hold_kernel(uint64_t nanoseconds) {
  const uint64_t t0 = global_timer_ns();
  while (global_timer_ns() - t0 < nanoseconds) {
#if __CUDA_ARCH__ >= 700
    __nanosleep(500);
#endif
  }
}

__global__ void released_gpu_hold_kernel(const volatile uint64_t* release, uint64_t generation,
                                         volatile uint64_t* timed_out, uint64_t timeout_ns) {
  const uint64_t t0 = global_timer_ns();
  while (*release < generation) {
    if (global_timer_ns() - t0 >= timeout_ns) {
      *timed_out = generation;
      __threadfence_system();
      return;
    }
#if __CUDA_ARCH__ >= 700
    __nanosleep(200);
#endif
  }
}

}  // namespace

void launch_released_gpu_hold(cudaStream_t stream, const volatile uint64_t* release, uint64_t generation,
                              volatile uint64_t* timed_out, uint64_t timeout_ns) {
  released_gpu_hold_kernel<<<1, 1, 0, stream>>>(release, generation, timed_out, timeout_ns);
  CUDA_CHECK_LAUNCH();
}

void launch_gpu_hold(cudaStream_t stream, uint64_t nanoseconds) {
  gpu_hold_kernel<<<1, 1, 0, stream>>>(nanoseconds);
  CUDA_CHECK_LAUNCH();
}

}  // namespace gptbench

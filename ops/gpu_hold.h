#pragma once
// Keeps a stream busy for a set time: one thread spins on the GPU's global timer. The region
// timer (fixtures/timer.*) enqueues it just before its start event, so that by the time the GPU
// reaches the event the host has already enqueued the region's first launch: the region is
// timed without the idle gap of launch latency in front of it (nvbench's "blocking kernel",
// bounded by time instead of a host flag). Torch-free; built with the kernels.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/timer_hold.h"

namespace gptbench {

// Enqueues the hold on `stream` (returns at once; throws CudaError if the launch fails).
void launch_gpu_hold(cudaStream_t stream, uint64_t nanoseconds);

}  // namespace gptbench

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

// A hold the host releases: one thread spins until *release (host memory mapped into the
// device's address space, written by the host) reaches `generation`, or until `timeout_ns` have
// passed, in which case it writes `generation` to *timed_out. The region timer releases it
// once the whole region is enqueued, so no host delay (a preempted thread, a slow dispatch) can
// open a gap inside the region; the timeout keeps a region that waits on the host itself (a
// host sync inside, a full launch queue) from hanging.
void launch_released_gpu_hold(cudaStream_t stream, const volatile uint64_t* release, uint64_t generation,
                              volatile uint64_t* timed_out, uint64_t timeout_ns);

}  // namespace gptbench

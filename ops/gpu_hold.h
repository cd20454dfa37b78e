#pragma once
// Keeps a stream busy for a set time: one thread spins on the GPU's global timer. The region
// timer (fixtures/timer.*) enqueues it just before its start event, so that by the time the GPU
// reaches the event the host has already enqueued the region's first launch: the region is
// timed without the idle gap of launch latency in front of it (nvbench's "blocking kernel",
// bounded by time instead of a host flag). Torch-free; built with the kernels.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace gptbench {

// How long the timer holds the stream before a region: longer than the host needs to enqueue
// an op (a few µs; ~20 µs for an optimizer step over GPT-2's ~150 tensors).
constexpr uint64_t kTimerHoldNs = 50'000;

// Enqueues the hold on `stream` (returns at once; throws CudaError if the launch fails).
void launch_gpu_hold(cudaStream_t stream, uint64_t nanoseconds);

}  // namespace gptbench

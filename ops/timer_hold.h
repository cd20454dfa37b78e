#pragma once
// How long the region timer (fixtures/timer.*) holds the stream before a region: longer than
// the host needs to enqueue an op (a few µs; ~20 µs for an optimizer step over GPT-2's ~150
// tensors). Its own header, free of CUDA, so that CPU-only builds know it too.
#include <cstdint>

namespace gptbench {

constexpr uint64_t kTimerHoldNs = 50'000;

}  // namespace gptbench

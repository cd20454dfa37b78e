// Sizes past which a model or a training step is a typo rather than an out-of-memory point.
// gptbench rejects them when it parses its flags (one line, exit 2) instead of letting every
// model-shaped benchmark fail in LibTorch's allocator; sizes within the limits that merely do
// not fit the device still become per-benchmark "out of memory" skips (fixtures/case_runner.h).
#pragma once

#include <cstdint>
#include <string>

#include "model/config.h"

namespace gptbench {

// One size (B, T, or a custom model's L, d, h, ff, V, T): GEMM sizes reach cuBLAS as 32-bit ints.
constexpr int64_t kMaxDimension = 2147483647;  // 2^31 - 1
// Tokens per step, B·T: the row count of every model GEMM, a 32-bit int in cuBLAS too.
constexpr int64_t kMaxTokens = kMaxDimension;
// Elements of the model or of one tensor: 1e15 is 2 PB in bf16, four orders of magnitude
// beyond the memory of any GPU (an H200 has 141 GB).
constexpr double kMaxElements = 1e15;

// "" when the model's parameter count stays within kMaxElements; otherwise one line saying
// how many it would have and the limit.
std::string model_size_error(const GPT2Config& cfg);

// "" when B·T stays within kMaxTokens and the step's largest activations (logits B·T·V, MLP
// hidden B·T·ff, attention scores B·h·T²) within kMaxElements; otherwise one line naming
// --gptbench_batch, --gptbench_seq, the tensor and the limit.
std::string step_size_error(const GPT2Config& cfg, int64_t batch, int64_t seq);

}  // namespace gptbench

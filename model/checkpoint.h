#pragma once
// Activation checkpointing (recomputation): a block's forward runs without keeping its
// intermediate activations; only its input is saved, and the backward pass runs the forward
// again, with gradients, before back-propagating through it (Chen et al. 2016; what
// torch.utils.checkpoint(use_reentrant=True) does).
//
// The recomputation must see what the first forward saw:
//   - autocast: the backward runs on autograd's device threads, where autocast is off; the
//     forward's autocast state (enabled, dtype, per device type) is saved and re-entered, with
//     the autocast weight cache off (a cache on a worker thread would never be cleared, and
//     would serve stale weights after the optimizer step).
//   - random numbers: GPT-2 here has no dropout, so the blocks draw none; the CPU and CUDA
//     generator states are saved anyway (a few bytes for CUDA, ~5 KB for the CPU) and restored
//     around the recomputation, so adding dropout later stays correct.
// Parameter gradients reach .grad() through a nested (reentrant) backward over the recomputed
// graph; the function returns the gradient of its input.
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <string>

namespace gptbench {

enum class CheckpointMode {
  kNone,       // keep every activation
  kEveryBlock, // recompute every block
  kEveryKth,   // recompute blocks 0, k, 2k, ...
  kAttention,  // selective: recompute the attention half of every block (ln_1, QKV, SDPA, proj)
};

struct CheckpointPolicy {
  CheckpointMode mode = CheckpointMode::kNone;
  int64_t k = 2;  // kEveryKth only

  // Whether block `layer` is recomputed whole (kEveryBlock, kEveryKth).
  bool whole_block(int64_t layer) const;
  bool attention_only() const { return mode == CheckpointMode::kAttention; }
};

// "none", "all", "every<k>" (e.g. every2), "attn"; throws std::invalid_argument otherwise.
CheckpointPolicy parse_checkpoint_policy(const std::string& name);
std::string checkpoint_policy_name(const CheckpointPolicy& policy);

// y = fn(x), recomputed in backward instead of saved. Without grad mode (or when x needs no
// gradient) this is fn(x). fn must be a pure function of x and of module parameters.
// before_recompute, when set, runs in the backward just before fn runs again.
torch::Tensor checkpoint(const std::function<torch::Tensor(const torch::Tensor&)>& fn,
                         const torch::Tensor& x, std::function<void()> before_recompute = {});

// Calls around each use of a block's parameters, for a caller that keeps them elsewhere between
// uses (fully sharded data parallelism, train/dp_fsdp.h). Either may be empty.
//   before_use(layer)     before the block's forward, and before its recomputation in the
//                         backward when the block is recomputed whole
//   after_forward(layer)  after the forward of a block recomputed whole: nothing of the block's
//                         forward is kept, so its parameters may go until before_use again
struct BlockHooks {
  std::function<void(int64_t layer)> before_use, after_forward;
};

struct BlockImpl;
// The forward of `block` (layer index `layer`) under `policy`, with `hooks` when not null.
torch::Tensor block_forward(BlockImpl& block, const torch::Tensor& x, int64_t layer,
                            const CheckpointPolicy& policy, const BlockHooks* hooks = nullptr);

}  // namespace gptbench

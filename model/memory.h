#pragma once
// The memory model: predicted peak bytes of one GPT-2 training step — what LibTorch's CUDA
// caching allocator reports as its allocated peak — from the configuration alone. It models the
// step of train/step.h as the memory family runs it: fp32 weights, LibTorch's blocks
// (blocks:torch), SDPA attention, the torch LM head (50,257 columns, fp32 cross-entropy),
// gradients kept between steps (ours) or set to none (LibTorch's optimizers).
//
// Notation: P parameters, N = B·T tokens, C = d_model, F = d_ff, H heads, V vocabulary rows of
// the embedding, a = bytes of an activation (2 under bf16 autocast, 4 in fp32/TF32).
//
//   static      params 4·P + gradients 4·P (when kept between steps) + optimizer state (below)
//               + inputs 16·N (idx and targets, int64; the CPU 40·N + 8·B, the host buffers
//               too) + GEMM workspaces (GPU: cuBLAS's and cuBLASLt's, 32 MiB each, for each
//               of the two threads that run GEMMs, the forward's and autograd's: 128 MiB)
//   state       AdamW 8·P; 8-bit Adam 2·n + 8·⌈n/256⌉ per tensor of n ≥ 4,096 elements, else 8·n
//               (≈ 2.03 B/param); Adafactor 4·(r + c) per matrix (r, c), 4·n per vector; Lion 4·P
//   saved       what autograd keeps from the forward for the backward, per block:
//                 bf16  20·N·C + 4·N·F + 16·N + lse   (fp32 input x 4NC, bf16 copies of the two
//                       LayerNorm outputs 2NC + 2NC, QKV 6NC, attention output 2NC, residual h
//                       4NC, the MLP's pre- and post-GELU 2NF + 2NF, LayerNorm mean and rstd 4
//                       floats per token, twice)
//                 fp32  32·N·C + 8·N·F + 16·N + lse   (the same tensors in fp32: 4+4+12+4+4+4 NC)
//                 lse   SDPA's log-sum-exp, 4·B·H·T (FlashAttention-2, bf16; the CPU) or
//                       4·B·H·⌈T/32⌉·32 (memory-efficient attention, fp32 on CUDA)
//               checkpointed block: its input only, 4·N·C; attention-only checkpointing: the
//               input, h, ln_2's statistics and the MLP's half, 8·N·C + 8·N + a·N·C + 2·a·N·F;
//               after the blocks: ln_f's input 4NC and statistics 8N, the LM head's input
//               (bf16 copy 2NC, or fp32 4NC)
//   weights     bf16 only: autocast's bf16 copies of the Linear weights that autograd saves,
//               2 bytes each — those of the blocks not recomputed — and of the tied LM head 2·V·C
//               (biases are not saved; recomputed blocks' copies live only in their backward)
//   moments     the step's peak is the largest of
//                 loss      saved + weights + logits a·N·V + fp32 copy 4·N·V (bf16) + log-probs 4·N·V
//                           (below softmax's with the same weights: kept for the record)
//                 softmax   saved + weights + 12·N·V: log-probs, their gradient from nll_loss and
//                           log_softmax's input gradient, all fp32 (log_softmax backward)
//                 head      saved + weights + a·N·V (the logits' gradient) + a·N·C + a·V·C (the
//                           LM-head GEMM's two gradients) — bf16 then converts the weight
//                           gradient to fp32 (+4·V·C, the logits' gradient freed)
//                 block     saved + weights + the gradients in flight in a block's backward
//                           (≈ 12·N·C + 2·a·N·F) + parameter gradients (kept: the accumulation's
//                           temporary of the largest weight, (6 or 4)·max(3C², F·C); set to none:
//                           wte's 4·V·C and the MLP's 8·C·F) + with recomputation, the block's
//                           saved activations again and its bf16 weight copies
//                 update    all gradients + the optimizer step (no temporaries in the fused
//                           kernels) + the embedding's dense gradient 4·V·C
// Every formula is written out again beside its code (model/memory.cpp) and checked against
// hand-computed values in tests/model/memory_test.cpp.
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"

namespace gptbench {

// Which activations a step recomputes (the modes of model/checkpoint.h, by value: this header
// stays free of LibTorch).
struct RecomputeBlocks {
  int64_t every = 0;            // 0: none; 1: every block; k: blocks 0, k, 2k, …
  bool attention_only = false;  // selective: the attention half of every block
};

// cuBLAS and cuBLASLt workspaces that LibTorch takes from the caching allocator, one each per
// thread that runs GEMMs (the forward's and autograd's): 32 MiB each on Hopper.
constexpr double kGemmWorkspaceBytes = 4.0 * (32 << 20);

struct MemoryConfig {
  GPT2Config model;
  int64_t batch = 1;
  int64_t seq = 1024;
  bool bf16 = true;                // bf16 autocast over fp32 weights; false: fp32 (or TF32)
  std::string optimizer = "adamw"; // torch, torch_fused, adamw, adam8bit, adafactor, lion
  RecomputeBlocks recompute;
  bool cuda = true;                // GEMM workspaces and SDPA's CUDA layouts; false: the CPU
};

// Bytes of one term each; total() is the predicted peak.
struct MemoryEstimate {
  double params = 0;      // 4·P
  double grads = 0;       // 4·P, counted in the peak when the optimizer keeps them
  double state = 0;       // optimizer state
  double inputs = 0;      // idx and targets on the device
  double workspace = 0;   // cuBLAS workspaces
  double saved = 0;       // activations kept for the backward, all blocks and the head's input
  double weights = 0;     // bf16 weight copies at the moment of the peak
  double transient = 0;   // the peak moment's own tensors (logits, their gradients, …)
  std::string moment;     // which moment is the peak: loss, softmax, head, block, update
  double total() const;
};

// Exact parameter tensors of the model in the order GPT2Impl registers them, as shapes.
std::vector<std::vector<int64_t>> parameter_shapes(const GPT2Config& model);

// Optimizer state in bytes for `optimizer` over the model's parameters; throws
// std::invalid_argument for a name it does not know.
double optimizer_state_bytes(const std::string& optimizer, const GPT2Config& model);
// Whether the optimizer keeps gradients between steps (ours zero them in place).
bool optimizer_keeps_grads(const std::string& optimizer);

// Activations one block saves for the backward (no recomputation), bytes.
double block_saved_bytes(const MemoryConfig& cfg);

MemoryEstimate estimate_memory(const MemoryConfig& cfg);

// The largest batch whose predicted peak is at most `limit_bytes` (0 when not even 1 fits),
// searched up to `cap`.
int64_t predicted_max_batch(MemoryConfig cfg, double limit_bytes, int64_t cap = 1 << 16);

}  // namespace gptbench

#pragma once
// GPT-2 in LibTorch: token + position embeddings, pre-LayerNorm blocks with causal
// self-attention (naive or SDPA) and a GELU MLP, final LayerNorm, LM head tied to the token
// embedding, cross-entropy loss.
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "model/checkpoint.h"
#include "model/config.h"
#include "model/fp8_linear.h"
#include "model/fused_linear.h"

namespace gptbench {

// naive: matmul, mask, softmax, matmul (L×L materialised); sdpa: at::scaled_dot_product_attention
// with LibTorch's own backend choice (FlashAttention-2 first, as PyTorch from Python);
// flash: our FlashAttention-2 kernel (ops/attention/flash.h; CUDA, bf16/fp16 activations);
// cudnn: SDPA with only its cuDNN backend enabled (CUDA; on Hopper it is the fastest attention
// LibTorch has, 1.3-1.9x its FlashAttention-2 in the attention family, but not its default).
enum class AttnImpl { kNaive, kSdpa, kFlash, kCudnn };

// "naive", "sdpa", "flash" or "cudnn"; throws std::invalid_argument naming the valid ones.
AttnImpl parse_attn_impl(const std::string& name);
const char* attn_impl_name(AttnImpl impl);

// Causal self-attention on q, k, v of shape (B, H, T, hd) -> (B, H, T, hd).
torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, AttnImpl impl);

// torch: LibTorch's LayerNorm, Linear, GELU, adds and casts; fused: our kernels where they
// apply, LibTorch's otherwise — the fused residual-add + LayerNorm (ops/layernorm.h: LayerNorm
// straight to bf16 under autocast, the residual add and its gradient in the same pass) and, in
// bf16, Linear layers with cuBLASLt epilogues (model/fused_linear.h: fp32 weight gradients from
// the GEMM, the MLP's tanh-GELU inside its GEMMs). The same function.
enum class BlockKernels { kTorch, kFused };
BlockKernels parse_block_kernels(const std::string& name);  // "torch" or "fused"
const char* block_kernels_name(BlockKernels k);

struct CausalSelfAttentionImpl : torch::nn::Module {
  CausalSelfAttentionImpl(const GPT2Config& cfg, AttnImpl impl);
  torch::Tensor forward(const torch::Tensor& x);  // (B, T, C) -> (B, T, C)

  torch::nn::Linear c_attn{nullptr}, c_proj{nullptr};
  int64_t n_head;
  AttnImpl impl;
  BlockKernels kernels = BlockKernels::kTorch;
  WeightGrad weight_grad = WeightGrad::kReturn;  // fused Linear layers (model/fused_linear.h)
  bool fp8 = false;  // c_attn, c_proj through linear_fp8 (model/fp8_linear.h), whatever `kernels`
  Fp8Scales c_attn_scales, c_proj_scales;  // their delayed scaling, or null (current)
  // When set: called on autograd's thread once the gradient of the attention's output is
  // complete, just before the attention's backward is enqueued (every backward through a
  // forward that recorded gradients; with recomputation, through the recomputed forward).
  std::function<void()> before_backward;
};
TORCH_MODULE(CausalSelfAttention);

struct MLPImpl : torch::nn::Module {
  explicit MLPImpl(const GPT2Config& cfg);
  torch::Tensor forward(const torch::Tensor& x);  // (B, T, C) -> (B, T, C)

  torch::nn::Linear c_fc{nullptr}, c_proj{nullptr};
  BlockKernels kernels = BlockKernels::kTorch;
  WeightGrad weight_grad = WeightGrad::kReturn;
  bool fp8 = false;  // c_fc through linear_fp8 without its bias, then linear_fp8_after_gelu (bias + tanh-GELU fused into c_proj's input quantization)
  Fp8Scales c_fc_scales, c_proj_scales;  // their delayed scaling, or null (current)
};
TORCH_MODULE(MLP);

struct BlockImpl : torch::nn::Module {
  BlockImpl(const GPT2Config& cfg, AttnImpl impl);
  torch::Tensor forward(const torch::Tensor& x);  // (B, T, C) -> (B, T, C)
  // The block's pieces, so checkpointing can recompute part of it: ln_1(x), and
  // (h = x + branch, ln_2(h)) — through the fused kernels when `kernels` says so.
  torch::Tensor norm_1(const torch::Tensor& x);
  std::pair<torch::Tensor, torch::Tensor> add_norm_2(const torch::Tensor& x,
                                                     const torch::Tensor& branch);
  // The fused blocks' chain without recomputation, the residual adds deferred: the block's input
  // is x_prev + branch_prev (branch_prev undefined: x_prev alone), added inside ln_1's kernel,
  // and it returns (h, mlp(ln_2(h))) unadded, for the next block's ln_1 or ln_f to add. Each
  // block's output is then written once, by the LayerNorm that reads it, instead of by a
  // separate fp32 add (and its gradient reaches the MLP in bf16, with the residual gradient
  // added in the LayerNorm's backward).
  std::pair<torch::Tensor, torch::Tensor> forward_deferred(const torch::Tensor& x_prev,
                                                           const torch::Tensor& branch_prev);

  BlockKernels kernels = BlockKernels::kTorch;

  torch::nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  CausalSelfAttention attn{nullptr};
  MLP mlp{nullptr};
};
TORCH_MODULE(Block);

struct GPT2Impl : torch::nn::Module {
  // Parameters are initialised as GPT-2 does (normal 0.02, residual projections scaled by
  // 1/sqrt(2·n_layer), zero biases) from the current LibTorch seed.
  GPT2Impl(const GPT2Config& cfg, AttnImpl impl = AttnImpl::kSdpa);

  torch::Tensor forward(const torch::Tensor& idx);  // (B, T) int64 -> logits (B, T, V)
  // The LM head's output with its padding columns: (B, T, cfg.embedding_rows()); forward() is
  // its first V columns (a view).
  torch::Tensor forward_padded(const torch::Tensor& idx);
  // The tied LM head: x (B, T, C) -> (B, T, embedding rows).
  torch::Tensor lm_head(const torch::Tensor& x);
  // Mean cross-entropy of the logits for idx against targets (B, T), computed in fp32.
  torch::Tensor loss(const torch::Tensor& idx, const torch::Tensor& targets);
  void set_attn_impl(AttnImpl impl);
  // Every block and the final LayerNorm; `wg`: where the fused Linear layers put their weight
  // gradients (kAccumulate: straight into .grad, unseen by gradient hooks).
  void set_block_kernels(BlockKernels k, WeightGrad wg = WeightGrad::kReturn);
  // FP8 GEMMs (model/fp8_linear.h): `blocks`, every block's four Linear layers; `head`, the tied
  // LM head. Everything else keeps its precision (embeddings, LayerNorms, attention). `scaling`:
  // each FP8 layer's (delayed: a fresh Fp8LayerScales per layer, its history empty).
  void set_fp8_gemms(bool blocks, bool head, Fp8Scaling scaling = Fp8Scaling::kCurrent);

  GPT2Config cfg;
  CheckpointPolicy checkpointing;  // activation recomputation of the blocks (model/checkpoint.h)
  BlockHooks block_hooks;          // calls around each block's use (model/checkpoint.h)
  torch::nn::Embedding wte{nullptr}, wpe{nullptr};
  torch::nn::ModuleList h{nullptr};
  std::vector<Block> blocks;  // the entries of h, typed
  torch::nn::LayerNorm ln_f{nullptr};
  BlockKernels kernels = BlockKernels::kTorch;
  bool fp8_blocks = false, fp8_head = false;  // set_fp8_gemms
  Fp8Scaling fp8_scaling = Fp8Scaling::kCurrent;
  Fp8Scales head_scales;
};
TORCH_MODULE(GPT2);

}  // namespace gptbench

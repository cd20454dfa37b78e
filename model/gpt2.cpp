#include "model/gpt2.h"

#include "model/fp8_linear.h"
#include "model/fused_linear.h"
#include "ops/attention/flash.h"
#include "ops/attention_ref.h"
#include "ops/cross_entropy.h"
#include "ops/layernorm.h"

#include <ATen/ATen.h>
#include <torch/nn/init.h>

#include <cmath>
#include <optional>
#include <stdexcept>
#include <tuple>

namespace gptbench {

AttnImpl parse_attn_impl(const std::string& name) {
  if (name == "naive") return AttnImpl::kNaive;
  if (name == "sdpa") return AttnImpl::kSdpa;
  if (name == "flash") return AttnImpl::kFlash;
  if (name == "cudnn") return AttnImpl::kCudnn;
  throw std::invalid_argument("unknown attention implementation '" + name +
                              "'; valid: naive, sdpa, flash, cudnn");
}

const char* attn_impl_name(AttnImpl impl) {
  switch (impl) {
    case AttnImpl::kNaive: return "naive";
    case AttnImpl::kSdpa: return "sdpa";
    case AttnImpl::kFlash: return "flash";
    case AttnImpl::kCudnn: return "cudnn";
  }
  return "?";
}

torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, AttnImpl impl) {
  if (impl == AttnImpl::kFlash) return flash_attention(q, k, v, /*causal=*/true);
  if (impl == AttnImpl::kSdpa || impl == AttnImpl::kCudnn) {
    // The backward is the forward's backend's (autograd records the cuDNN op), so the guard
    // needs to cover the forward only.
    std::optional<SdpBackendGuard> only_cudnn;
    if (impl == AttnImpl::kCudnn) {
      TORCH_CHECK(q.is_cuda(), "attention 'cudnn' is SDPA's cuDNN backend: it needs CUDA tensors");
      only_cudnn.emplace(AttnBackend::kSdpaCudnn);
    }
    return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                            /*is_causal=*/true);
  }
  const int64_t T = q.size(-2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  auto att = at::matmul(q, k.transpose(-2, -1)) * scale;  // (B, H, T, T)
  auto mask = at::ones({T, T}, q.options().dtype(at::kBool)).triu(1);
  att = att.masked_fill(mask, -std::numeric_limits<float>::infinity());
  att = at::softmax(att, -1);
  return at::matmul(att, v);  // (B, H, T, hd)
}

BlockKernels parse_block_kernels(const std::string& name) {
  if (name == "torch") return BlockKernels::kTorch;
  if (name == "fused") return BlockKernels::kFused;
  throw std::invalid_argument("unknown block kernels '" + name + "'; valid: torch, fused");
}

const char* block_kernels_name(BlockKernels k) {
  return k == BlockKernels::kFused ? "fused" : "torch";
}

namespace {
double ln_eps(const torch::nn::LayerNorm& ln) { return ln->options.eps(); }
}  // namespace

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const GPT2Config& cfg, AttnImpl impl_)
    : n_head(cfg.n_head), impl(impl_) {
  c_attn = register_module("c_attn", torch::nn::Linear(cfg.d_model, 3 * cfg.d_model));
  c_proj = register_module("c_proj", torch::nn::Linear(cfg.d_model, cfg.d_model));
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2);
  const bool fused = kernels == BlockKernels::kFused;
  auto linear = [fused, this](torch::nn::Linear& l, const torch::Tensor& t, const Fp8Scales& scales) {
    if (fp8) return linear_fp8(t, l->weight, l->bias, scales);
    return fused ? linear_fused(t, l->weight, l->bias, weight_grad) : l->forward(t);
  };
  auto qkv = linear(c_attn, x, c_attn_scales).split(C, /*dim=*/2);  // 3 × (B, T, C)
  auto heads = [&](const torch::Tensor& t) {
    return t.view({B, T, n_head, C / n_head}).transpose(1, 2);  // (B, H, T, hd)
  };
  auto y = causal_attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]), impl);
  if (before_backward && y.requires_grad()) y.register_hook([f = before_backward](const at::Tensor&) { f(); });
  y = y.transpose(1, 2).contiguous().view({B, T, C});
  return linear(c_proj, y, c_proj_scales);
}

MLPImpl::MLPImpl(const GPT2Config& cfg) {
  c_fc = register_module("c_fc", torch::nn::Linear(cfg.d_model, cfg.d_ff));
  c_proj = register_module("c_proj", torch::nn::Linear(cfg.d_ff, cfg.d_model));
}

torch::Tensor MLPImpl::forward(const torch::Tensor& x) {
  if (fp8)  // c_fc without its bias: c_proj's FP8 input quantization adds it where GELU reads it
    return linear_fp8_after_gelu(linear_fp8(x, c_fc->weight, /*b=*/{}, c_fc_scales), c_fc->bias, c_proj->weight,
                                 c_proj->bias, c_proj_scales);
  if (kernels == BlockKernels::kFused)
    return mlp_gelu_fused(x, c_fc->weight, c_fc->bias, c_proj->weight, c_proj->bias, weight_grad);
  return c_proj->forward(at::gelu(c_fc->forward(x), "tanh"));
}

BlockImpl::BlockImpl(const GPT2Config& cfg, AttnImpl impl) {
  ln_1 = register_module("ln_1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({cfg.d_model})));
  attn = register_module("attn", CausalSelfAttention(cfg, impl));
  ln_2 = register_module("ln_2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({cfg.d_model})));
  mlp = register_module("mlp", MLP(cfg));
}

torch::Tensor BlockImpl::norm_1(const torch::Tensor& x) {
  if (kernels == BlockKernels::kFused)
    return fused_layernorm(x, ln_1->weight, ln_1->bias, ln_eps(ln_1));
  return ln_1->forward(x);
}

std::pair<torch::Tensor, torch::Tensor> BlockImpl::add_norm_2(const torch::Tensor& x,
                                                              const torch::Tensor& branch) {
  if (kernels == BlockKernels::kFused) {
    auto out = fused_add_layernorm(x, branch, ln_2->weight, ln_2->bias, ln_eps(ln_2));
    return {out.h, out.y};
  }
  auto h = x + branch;
  return {h, ln_2->forward(h)};
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x) {
  auto [h, y] = add_norm_2(x, attn->forward(norm_1(x)));
  return h + mlp->forward(y);
}

std::pair<torch::Tensor, torch::Tensor> BlockImpl::forward_deferred(const torch::Tensor& x_prev,
                                                                    const torch::Tensor& branch_prev) {
  torch::Tensor x = x_prev, y1;
  if (branch_prev.defined()) {
    auto in = fused_add_layernorm(x_prev, branch_prev, ln_1->weight, ln_1->bias, ln_eps(ln_1));
    x = in.h;
    y1 = in.y;
  } else {
    y1 = norm_1(x_prev);
  }
  auto [h, y2] = add_norm_2(x, attn->forward(y1));
  return {h, mlp->forward(y2)};
}

GPT2Impl::GPT2Impl(const GPT2Config& cfg_, AttnImpl impl) : cfg(cfg_) {
  wte = register_module("wte", torch::nn::Embedding(cfg.embedding_rows(), cfg.d_model));
  wpe = register_module("wpe", torch::nn::Embedding(cfg.n_ctx, cfg.d_model));
  h = register_module("h", torch::nn::ModuleList());
  for (int64_t i = 0; i < cfg.n_layer; ++i) {
    blocks.emplace_back(cfg, impl);
    h->push_back(blocks.back());
  }
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({cfg.d_model})));

  torch::NoGradGuard no_grad;
  const double std = 0.02, proj_std = 0.02 / std::sqrt(2.0 * cfg.n_layer);
  torch::nn::init::normal_(wte->weight, 0.0, std);
  wte->weight.narrow(0, cfg.vocab, cfg.embedding_rows() - cfg.vocab).zero_();  // padding rows
  torch::nn::init::normal_(wpe->weight, 0.0, std);
  for (auto& b : blocks) {
    for (auto* lin : {&b->attn->c_attn, &b->attn->c_proj, &b->mlp->c_fc, &b->mlp->c_proj}) {
      const bool residual = lin == &b->attn->c_proj || lin == &b->mlp->c_proj;
      torch::nn::init::normal_((*lin)->weight, 0.0, residual ? proj_std : std);
      torch::nn::init::zeros_((*lin)->bias);
    }
  }
}

void GPT2Impl::set_attn_impl(AttnImpl impl) {
  for (auto& b : blocks) b->attn->impl = impl;
}

void GPT2Impl::set_block_kernels(BlockKernels k, WeightGrad wg) {
  kernels = k;
  for (auto& b : blocks) {
    b->kernels = b->attn->kernels = b->mlp->kernels = k;
    b->attn->weight_grad = b->mlp->weight_grad = wg;
  }
}

void GPT2Impl::set_fp8_gemms(bool blocks_in_fp8, bool head_in_fp8, Fp8Scaling scaling) {
  fp8_blocks = blocks_in_fp8;
  fp8_head = head_in_fp8;
  fp8_scaling = scaling;
  auto scales = [scaling] { return scaling == Fp8Scaling::kDelayed ? c10::make_intrusive<Fp8LayerScales>() : Fp8Scales(); };
  for (auto& b : blocks) {
    b->attn->fp8 = b->mlp->fp8 = blocks_in_fp8;
    b->attn->c_attn_scales = scales();
    b->attn->c_proj_scales = scales();
    b->mlp->c_fc_scales = scales();
    b->mlp->c_proj_scales = scales();
  }
  head_scales = scales();
}

torch::Tensor GPT2Impl::forward(const torch::Tensor& idx) {
  auto logits = forward_padded(idx);
  return cfg.pad_vocab ? logits.narrow(-1, 0, cfg.vocab) : logits;
}

torch::Tensor GPT2Impl::forward_padded(const torch::Tensor& idx) {
  const int64_t T = idx.size(1);
  TORCH_CHECK(T <= cfg.n_ctx, "sequence length ", T, " exceeds the context ", cfg.n_ctx);
  auto pos = at::arange(T, idx.options().dtype(at::kLong));
  auto x = wte->forward(idx) + wpe->forward(pos);  // (B, T, C)
  if (kernels == BlockKernels::kFused && checkpointing.mode == CheckpointMode::kNone) {
    torch::Tensor branch;  // the last block's MLP output, added by ln_f's kernel
    for (size_t i = 0; i < blocks.size(); ++i) {
      if (block_hooks.before_use) block_hooks.before_use(static_cast<int64_t>(i));
      std::tie(x, branch) = blocks[i]->forward_deferred(x, branch);
    }
    x = branch.defined() ? fused_add_layernorm(x, branch, ln_f->weight, ln_f->bias, ln_eps(ln_f)).y
                         : fused_layernorm(x, ln_f->weight, ln_f->bias, ln_eps(ln_f));
    return lm_head(x);
  }
  for (size_t i = 0; i < blocks.size(); ++i)
    x = block_forward(*blocks[i], x, static_cast<int64_t>(i), checkpointing, &block_hooks);
  x = kernels == BlockKernels::kFused ? fused_layernorm(x, ln_f->weight, ln_f->bias, ln_eps(ln_f))
                                      : ln_f->forward(x);
  return lm_head(x);
}

torch::Tensor GPT2Impl::lm_head(const torch::Tensor& x) {
  if (fp8_head) return linear_fp8(x, wte->weight, /*b=*/{}, head_scales);
  return at::matmul(x, wte->weight.t());
}

torch::Tensor GPT2Impl::loss(const torch::Tensor& idx, const torch::Tensor& targets) {
  auto logits = forward_padded(idx);
  return torch_cross_entropy(logits.view({-1, logits.size(-1)}), targets.reshape({-1}), cfg.vocab);
}

}  // namespace gptbench

#include "model/gpt2.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/optim/adamw.h>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "fixtures/model_cache.h"
#include "train/step.h"
#include "fixtures/verify.h"

namespace gptbench {
namespace {

TEST(GPT2, ForwardShapes) {
  auto cfg = cpu_tiny_config();
  GPT2 model(cfg);
  auto batch = synthetic_batch(cfg, 3, 17, at::kCPU, 1);
  auto logits = model->forward(batch.idx);
  EXPECT_EQ(logits.sizes(), (at::IntArrayRef{3, 17, cfg.vocab}));
  EXPECT_TRUE(at::isfinite(logits).all().item<bool>());
}

// At initialisation the logits are small (std ≈ 0.02·√d), so the predicted distribution is
// nearly uniform and the loss is ln(V) plus half the logit variance (≈ 0.03 for tiny).
TEST(GPT2, LossAtInitIsLogVocab) {
  auto cfg = cpu_tiny_config();
  GPT2 model(cfg);
  auto batch = synthetic_batch(cfg, 4, 64, at::kCPU, 2);
  const double loss = model->loss(batch.idx, batch.targets).item<double>();
  EXPECT_NEAR(loss, std::log(static_cast<double>(cfg.vocab)), 0.1);
}

// Naive attention (matmul, mask, softmax, matmul) and SDPA compute the same function.
TEST(GPT2, AttentionImplsAgree) {
  at::manual_seed(3);
  auto q = at::randn({2, 4, 33, 16}, at::kDouble), k = at::randn_like(q), v = at::randn_like(q);
  auto naive = causal_attention(q, k, v, AttnImpl::kNaive);
  auto sdpa = causal_attention(q, k, v, AttnImpl::kSdpa);
  EXPECT_LT((naive - sdpa).abs().max().item<double>(), 1e-10);  // float64: rounding only
  // Causality: the first position attends to itself alone.
  EXPECT_LT((naive.select(2, 0) - v.select(2, 0)).abs().max().item<double>(), 1e-12);

  auto cfg = cpu_tiny_config();
  GPT2 model(cfg);
  auto batch = synthetic_batch(cfg, 2, 20, at::kCPU, 4);
  auto a = model->forward(batch.idx);
  model->set_attn_impl(AttnImpl::kNaive);
  auto b = model->forward(batch.idx);
  // fp32 through two layers: the two paths differ by reassociation only (~1e-6 relative).
  EXPECT_LT((a - b).abs().max().item<double>(), 1e-4);
}

TEST(GPT2, BackwardReachesEveryParameter) {
  auto cfg = cpu_tiny_config();
  GPT2 model(cfg);
  auto batch = synthetic_batch(cfg, 2, 16, at::kCPU, 5);
  model->loss(batch.idx, batch.targets).backward();
  for (const auto& p : model->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0) << p.key();
  }
}

// The attention's before_backward runs once per block and backward, last block first, after
// the block's c_proj has its gradient and before its c_attn has one (the attention's backward,
// which c_attn's gradient needs, has not run); never for a forward that records no gradient. With
// every block recomputed it runs for the recomputed forward, once per block as well.
TEST(GPT2, AttentionBeforeBackwardRunsJustBeforeEachAttentionsBackward) {
  auto cfg = cpu_tiny_config();
  GPT2 model(cfg);
  ASSERT_GE(model->blocks.size(), 2u);
  auto batch = synthetic_batch(cfg, 2, 16, at::kCPU, 6);
  std::vector<int64_t> calls;
  for (size_t i = 0; i < model->blocks.size(); ++i) {
    auto& attn = *model->blocks[i]->attn;
    attn.before_backward = [&calls, &attn, i] {
      calls.push_back(static_cast<int64_t>(i));
      EXPECT_TRUE(attn.c_proj->weight.grad().defined()) << "block " << i;
      EXPECT_FALSE(attn.c_attn->weight.grad().defined()) << "block " << i;
    };
  }
  {
    at::NoGradGuard no_grad;
    model->loss(batch.idx, batch.targets);
  }
  EXPECT_TRUE(calls.empty());
  std::vector<int64_t> reversed;
  for (int64_t i = static_cast<int64_t>(model->blocks.size()) - 1; i >= 0; --i) reversed.push_back(i);
  for (const char* ckpt : {"none", "all"}) {
    model->checkpointing = parse_checkpoint_policy(ckpt);
    model->zero_grad(/*set_to_none=*/true);
    calls.clear();
    auto loss = model->loss(batch.idx, batch.targets);
    EXPECT_TRUE(calls.empty()) << ckpt;  // the forward alone calls nothing
    loss.backward();
    EXPECT_EQ(calls, reversed) << ckpt;
  }
}

// pad_vocab changes the LM head's storage, not the model: with the same weights (the padding
// rows zero) the logits and the loss are those of the unpadded model, and the padding rows get
// no gradient. V = 1000 pads to 1024.
TEST(GPT2, PaddedVocabularyComputesTheSameFunction) {
  auto cfg = cpu_tiny_config();
  cfg.vocab = 1000;
  GPT2 plain(cfg);
  auto padded_cfg = cfg;
  padded_cfg.pad_vocab = true;
  GPT2 padded(padded_cfg);
  ASSERT_EQ(padded->wte->weight.size(0), 1024);
  EXPECT_EQ(padded->wte->weight.narrow(0, 1000, 24).abs().max().item<double>(), 0.0);
  {
    torch::NoGradGuard no_grad;
    auto src = plain->named_parameters();
    for (auto& p : padded->named_parameters()) {
      const auto& from = src[p.key()];
      p.value().narrow(0, 0, from.size(0)).copy_(from);
    }
  }
  auto batch = synthetic_batch(cfg, 2, 24, at::kCPU, 6);
  auto a = plain->forward(batch.idx), b = padded->forward(batch.idx);
  ASSERT_EQ(b.sizes(), a.sizes());
  EXPECT_EQ(padded->forward_padded(batch.idx).size(-1), 1024);
  // fp32: the same products in the same order, except the GEMM's blocking over N.
  EXPECT_LT((a - b).abs().max().item<double>(), 1e-5);
  auto la = plain->loss(batch.idx, batch.targets), lb = padded->loss(batch.idx, batch.targets);
  EXPECT_NEAR(la.item<double>(), lb.item<double>(), 1e-5);
  la.backward();
  lb.backward();
  const auto& ga = plain->wte->weight.grad();
  const auto& gb = padded->wte->weight.grad();
  EXPECT_LT((gb.narrow(0, 0, 1000) - ga).abs().max().item<double>(), 1e-6);
  EXPECT_EQ(gb.narrow(0, 1000, 24).abs().max().item<double>(), 0.0);
}

TEST(GPT2, ParseAttnImpl) {
  EXPECT_EQ(parse_attn_impl("naive"), AttnImpl::kNaive);
  EXPECT_EQ(parse_attn_impl("sdpa"), AttnImpl::kSdpa);
  EXPECT_EQ(parse_attn_impl("flash"), AttnImpl::kFlash);
  EXPECT_EQ(parse_attn_impl("cudnn"), AttnImpl::kCudnn);
  EXPECT_STREQ(attn_impl_name(AttnImpl::kFlash), "flash");
  EXPECT_STREQ(attn_impl_name(AttnImpl::kCudnn), "cudnn");
  EXPECT_THROW(parse_attn_impl("flash3"), std::invalid_argument);
}

TEST(GPT2, SequenceLongerThanContextIsAnError) {
  auto cfg = model_config("custom:L=1,d=32,h=2,V=50,T=8");
  GPT2 model(cfg);
  auto idx = at::zeros({1, 9}, at::kLong);
  EXPECT_THROW(model->forward(idx), c10::Error);
}

TEST(GPT2, CudnnAttentionNeedsCuda) {
  auto cfg = model_config("custom:L=1,d=32,h=2,V=50,T=8");
  GPT2 model(cfg, AttnImpl::kCudnn);
  auto idx = at::zeros({1, 8}, at::kLong);
  try {
    model->forward(idx);
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs CUDA tensors"), std::string::npos) << e.what();
  }
}

TEST(GPT2, BF16OnGpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU";
  auto model = shared_model(model_config("small"), at::kBFloat16, c10::Device(c10::kCUDA, 0));
  auto cfg = model->cfg;
  auto batch = synthetic_batch(cfg, 2, 128, c10::Device(c10::kCUDA, 0), 6);
  const double loss = model->loss(batch.idx, batch.targets).item<double>();
  // bf16 logits carry ~3 significant digits; ln(50257) = 10.82 and small's init adds ≈ 0.15.
  EXPECT_NEAR(loss, std::log(static_cast<double>(cfg.vocab)), 0.4);
}

// Our flash kernel, and SDPA forced to its cuDNN backend, as GPT-2's attention give SDPA's
// (default backend's) loss and gradients. bf16 model: the attention paths round differently
// (bf16 P·V operands in ours, fp32 inside SDPA's kernels), so the loss agrees to ~1e-3 relative
// and parameter gradients to a few 1e-2 (relative Frobenius error; bf16 has 8 mantissa bits and
// the backward chains several bf16 products).
TEST(GPT2, FusedAttentionsMatchSdpaLossAndGradients) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU";
  const c10::Device cuda(c10::kCUDA, 0);
  auto cfg = model_config("custom:L=2,d=256,h=4,V=1024,T=256");  // head dim 64
  at::manual_seed(11);
  GPT2 model(cfg);
  model->to(cuda, at::kBFloat16);
  auto batch = synthetic_batch(cfg, 2, 200, cuda, 12);
  auto run = [&](AttnImpl impl) {
    model->set_attn_impl(impl);
    model->zero_grad();
    auto loss = model->loss(batch.idx, batch.targets);
    loss.backward();
    std::vector<at::Tensor> grads;
    for (const auto& p : model->parameters()) grads.push_back(p.grad().clone());
    return std::make_pair(loss.item<double>(), grads);
  };
  auto [loss_sdpa, g_sdpa] = run(AttnImpl::kSdpa);
  std::vector<AttnImpl> impls = {AttnImpl::kCudnn};
#ifdef GPTBENCH_WITH_CUDA
  impls.push_back(AttnImpl::kFlash);
#endif
  for (AttnImpl impl : impls) {
    SCOPED_TRACE(attn_impl_name(impl));
    auto [loss, g] = run(impl);
    EXPECT_NEAR(loss, loss_sdpa, 2e-2);
    for (size_t i = 0; i < g_sdpa.size(); ++i)
      EXPECT_LT(relative_error(g[i], g_sdpa[i]), 5e-2) << "parameter " << i;
  }
}

TEST(GPT2, ParseBlockKernels) {
  EXPECT_EQ(parse_block_kernels("torch"), BlockKernels::kTorch);
  EXPECT_EQ(parse_block_kernels("fused"), BlockKernels::kFused);
  EXPECT_STREQ(block_kernels_name(BlockKernels::kFused), "fused");
  EXPECT_THROW(parse_block_kernels("apex"), std::invalid_argument);
}

// Loss and parameter gradients of one forward/backward, with the model's block kernels set.
std::pair<double, std::vector<at::Tensor>> loss_and_grads(GPT2& model, BlockKernels k,
                                                          const TokenBatch& batch) {
  model->set_block_kernels(k);
  model->zero_grad();
  auto loss = model->loss(batch.idx, batch.targets);
  loss.backward();
  std::vector<at::Tensor> grads;
  for (const auto& p : model->parameters()) grads.push_back(p.grad().clone());
  return {loss.item<double>(), grads};
}

// On the CPU the fused blocks take LibTorch's composition: the same operations, the same bits.
TEST(GPT2, FusedBlocksOnCpuAreLibTorchs) {
  auto cfg = cpu_tiny_config();
  GPT2 model(cfg);
  auto batch = synthetic_batch(cfg, 2, 16, at::kCPU, 7);
  auto [loss_t, g_t] = loss_and_grads(model, BlockKernels::kTorch, batch);
  auto [loss_f, g_f] = loss_and_grads(model, BlockKernels::kFused, batch);
  EXPECT_EQ(loss_t, loss_f);
  for (size_t i = 0; i < g_t.size(); ++i) EXPECT_TRUE(at::equal(g_t[i], g_f[i])) << i;
}

// The fused blocks (residual-add + LayerNorm kernels; in bf16 also the cuBLASLt epilogue
// Linears and MLP) give the model's loss and gradients, fp32 weights in fp32 and under bf16
// autocast (as the training step runs it). fp32: only the LayerNorm changes, and the two paths
// differ by the order of its sums (~1e-6 relative, amplified a little by the backward); bf16:
// LayerNorm outputs are rounded to bf16 in both paths from fp32 values that may differ in the
// last bit, and the GEMMs (other kernels, other summation orders) round their bf16 outputs
// independently, so elements occasionally round the other way: loss to ~1e-3 and gradients to
// ~1e-2 relative (Frobenius).
TEST(GPT2, FusedBlocksMatchTorchLossAndGradients) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU";
  const c10::Device cuda(c10::kCUDA, 0);
  auto cfg = model_config("custom:L=2,d=256,h=4,V=1024,T=256");
  at::manual_seed(13);
  GPT2 model(cfg);
  model->to(cuda);
  auto batch = synthetic_batch(cfg, 2, 200, cuda, 14);
  for (bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16 autocast" : "fp32");
    std::pair<double, std::vector<at::Tensor>> torch_run, fused_run;
    {
      PrecisionScope precision(bf16 ? Precision::kBf16 : Precision::kFp32, cuda);
      torch_run = loss_and_grads(model, BlockKernels::kTorch, batch);
      fused_run = loss_and_grads(model, BlockKernels::kFused, batch);
    }
    const auto& [loss_t, g_t] = torch_run;
    const auto& [loss_f, g_f] = fused_run;
    EXPECT_NEAR(loss_f, loss_t, (bf16 ? 1e-3 : 1e-5) * loss_t);
    for (size_t i = 0; i < g_t.size(); ++i)
      EXPECT_LT(relative_error(g_f[i], g_t[i]), bf16 ? 2e-2 : 1e-4) << "parameter " << i;
  }
}

// Training with the fused blocks follows LibTorch's blocks: 40 AdamW steps on one fixed batch
// (bf16 autocast, fp32 weights, the same initial weights) lower the loss from ln(V) ≈ 6.9 by
// more than 1 nat in both, and the two trajectories end within 0.1 + 5% of each other
// (rounding differences grow over the steps, but a wrong gradient shows as a different curve).
TEST(GPT2, FusedBlocksTrainLikeTorchBlocks) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU";
  const c10::Device cuda(c10::kCUDA, 0);
  auto cfg = model_config("custom:L=2,d=256,h=4,V=1024,T=256");
  auto batch = synthetic_batch(cfg, 4, 128, cuda, 15);
  auto train = [&](BlockKernels k) {
    at::manual_seed(16);
    GPT2 model(cfg);
    model->to(cuda);
    model->set_block_kernels(k);
    torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-3));
    PrecisionScope bf16(Precision::kBf16, cuda);
    std::vector<double> losses;
    for (int step = 0; step < 40; ++step) {
      opt.zero_grad();
      auto loss = model->loss(batch.idx, batch.targets);
      loss.backward();
      opt.step();
      at::autocast::clear_cache();
      losses.push_back(loss.item<double>());
    }
    return losses;
  };
  const auto torch_losses = train(BlockKernels::kTorch);
  const auto fused_losses = train(BlockKernels::kFused);
  const std::string curves = "losses torch " + std::to_string(torch_losses.front()) + " -> " +
                             std::to_string(torch_losses.back()) + ", fused " +
                             std::to_string(fused_losses.front()) + " -> " +
                             std::to_string(fused_losses.back());
  EXPECT_NEAR(fused_losses.front(), torch_losses.front(), 1e-2) << curves;
  EXPECT_LT(torch_losses.back(), torch_losses.front() - 1.0) << curves;
  EXPECT_LT(fused_losses.back(), fused_losses.front() - 1.0) << curves;
  EXPECT_NEAR(fused_losses.back(), torch_losses.back(), 0.1 + 0.05 * torch_losses.back()) << curves;
  std::cout << curves << "\n";
}

}  // namespace
}  // namespace gptbench

#include "model/checkpoint.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/cuda.h>

#include <map>
#include <string>

#include "fixtures/memory.h"
#include "fixtures/model_cache.h"
#include "model/gpt2.h"

namespace gptbench {
namespace {

TEST(Checkpoint, PolicyNames) {
  for (const char* name : {"none", "all", "every2", "every3", "attn"})
    EXPECT_EQ(checkpoint_policy_name(parse_checkpoint_policy(name)), name);
  EXPECT_EQ(parse_checkpoint_policy("every1").k, 1);
  for (const char* bad : {"", "every", "every0", "everyx", "every2x", "some"})
    EXPECT_THROW(parse_checkpoint_policy(bad), std::invalid_argument) << bad;
  auto p = parse_checkpoint_policy("every3");
  EXPECT_TRUE(p.whole_block(0));
  EXPECT_FALSE(p.whole_block(1));
  EXPECT_FALSE(p.whole_block(2));
  EXPECT_TRUE(p.whole_block(3));
  EXPECT_TRUE(parse_checkpoint_policy("all").whole_block(5));
  EXPECT_FALSE(parse_checkpoint_policy("attn").whole_block(0));
  EXPECT_FALSE(parse_checkpoint_policy("none").whole_block(0));
}

// Loss and every parameter gradient of `model` on `batch` under `policy`.
struct Grads {
  double loss = 0;
  std::map<std::string, at::Tensor> grads;
};

Grads loss_and_grads(GPT2& model, const TokenBatch& batch, const std::string& policy) {
  model->checkpointing = parse_checkpoint_policy(policy);
  model->zero_grad();
  auto loss = model->loss(batch.idx, batch.targets);
  loss.backward();
  Grads g;
  g.loss = loss.item<double>();
  for (const auto& p : model->named_parameters()) g.grads[p.key()] = p.value().grad().clone();
  model->checkpointing = {};
  return g;
}

double max_rel_diff(const Grads& a, const Grads& b) {
  double worst = 0;
  for (const auto& [name, ga] : a.grads) {
    const auto& gb = b.grads.at(name);
    const double scale = ga.abs().max().item<double>() + 1e-30;
    worst = std::max(worst, (ga - gb).abs().max().item<double>() / scale);
  }
  return worst;
}

GPT2Config three_layer_config() {
  auto cfg = cpu_tiny_config();
  cfg.n_layer = 3;  // every2 recomputes blocks 0 and 2 and keeps block 1
  return cfg;
}

// float64 on the CPU: the recomputation runs the same ops on the same inputs, so gradients
// agree to rounding of the (differently ordered) accumulation, far below 1e-10.
TEST(Checkpoint, GradientsMatchWithoutCheckpointingFp64) {
  auto cfg = three_layer_config();
  at::manual_seed(11);
  GPT2 model(cfg);
  model->to(at::kDouble);
  auto batch = synthetic_batch(cfg, 2, 24, at::kCPU, 3);
  const Grads ref = loss_and_grads(model, batch, "none");
  for (const char* policy : {"all", "every2", "attn"}) {
    const Grads g = loss_and_grads(model, batch, policy);
    EXPECT_EQ(g.loss, ref.loss) << policy;  // the forward is the same computation
    ASSERT_EQ(g.grads.size(), ref.grads.size());
    EXPECT_LT(max_rel_diff(g, ref), 1e-10) << policy;
  }
}

TEST(Checkpoint, GradientsMatchWithoutCheckpointingFp32) {
  auto cfg = three_layer_config();
  at::manual_seed(12);
  GPT2 model(cfg);
  auto batch = synthetic_batch(cfg, 2, 32, at::kCPU, 4);
  const Grads ref = loss_and_grads(model, batch, "none");
  for (const char* policy : {"all", "every2", "attn"}) {
    const Grads g = loss_and_grads(model, batch, policy);
    // fp32: same kernels on the same inputs; summation order can differ by accumulation into
    // .grad() through the nested backward (a few ulps, ~1e-6 relative).
    EXPECT_LT(max_rel_diff(g, ref), 1e-4) << policy;
  }
}

// Under bf16 autocast the recomputation must run under autocast too (autograd's worker has it
// off): a recomputation in fp32 would differ from the bf16 forward by ~1e-2 relative.
TEST(Checkpoint, RecomputationReentersAutocast) {
  auto cfg = three_layer_config();
  at::manual_seed(13);
  GPT2 model(cfg);
  auto batch = synthetic_batch(cfg, 2, 32, at::kCPU, 5);
  auto with_autocast = [&](const std::string& policy) {
    at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCPU, true);
    model->checkpointing = parse_checkpoint_policy(policy);
    model->zero_grad();
    auto loss = model->loss(batch.idx, batch.targets);
    at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(at::kCPU, false);
    loss.backward();
    Grads g;
    g.loss = loss.item<double>();
    for (const auto& p : model->named_parameters()) g.grads[p.key()] = p.value().grad().clone();
    model->checkpointing = {};
    return g;
  };
  const Grads ref = with_autocast("none");
  const Grads all = with_autocast("all");
  EXPECT_EQ(all.loss, ref.loss);
  EXPECT_LT(max_rel_diff(all, ref), 1e-3);
  EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));  // state restored after backward
}

// The recomputation draws the forward's random numbers (restored generator state), and the
// caller's generator is left where the forward left it.
TEST(Checkpoint, RandomStateIsReplayedAndRestored) {
  at::manual_seed(21);
  auto x = at::randn({4, 8}, at::kDouble).requires_grad_(true);
  auto noisy = [](const at::Tensor& t) { return t * at::rand_like(t); };  // d/dt = the draws
  at::manual_seed(5);
  auto y_ref = noisy(x);
  auto grad_ref = torch::autograd::grad({y_ref.sum()}, {x})[0];
  at::manual_seed(5);
  auto y = checkpoint(noisy, x);
  EXPECT_TRUE(at::equal(y.detach(), y_ref.detach()));
  const auto after_forward = at::detail::getDefaultCPUGenerator().get_state();
  auto grad = torch::autograd::grad({y.sum()}, {x})[0];
  EXPECT_TRUE(at::equal(grad, grad_ref));  // same draws in the recomputation
  EXPECT_TRUE(at::equal(at::detail::getDefaultCPUGenerator().get_state(), after_forward));
}

TEST(Checkpoint, NoGradAndInputsWithoutGradientRunPlainly) {
  auto x = at::randn({3, 5});
  int calls = 0;
  auto fn = [&calls](const at::Tensor& t) {
    ++calls;
    return t * 2;
  };
  auto y = checkpoint(fn, x);  // x needs no gradient: plain call, no graph
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(y.requires_grad());
  {
    at::NoGradGuard no_grad;
    auto z = checkpoint(fn, x.requires_grad_(true));
    EXPECT_FALSE(z.requires_grad());
  }
  EXPECT_EQ(calls, 2);
}

// On a GPU under bf16 autocast: gradients agree (to bf16 noise and atomics in SDPA's backward)
// and every-block checkpointing lowers peak memory.
TEST(Checkpoint, GpuGradientsAgreeAndMemoryDrops) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU";
  auto cfg = model_config("custom:L=4,d=256,h=4,V=4096,T=512");
  at::manual_seed(31);
  GPT2 model(cfg);
  const c10::Device dev(c10::kCUDA, 0);
  model->to(dev);
  auto batch = synthetic_batch(cfg, 8, 512, dev, 6);
  auto run = [&](const std::string& policy, int64_t* peak) {
    model->checkpointing = parse_checkpoint_policy(policy);
    model->zero_grad();
    free_cached_memory(dev);
    reset_peak_memory(dev);
    at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
    auto loss = model->loss(batch.idx, batch.targets);
    at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(at::kCUDA, false);
    loss.backward();
    torch::cuda::synchronize();
    *peak = peak_memory_bytes(dev);
    Grads g;
    g.loss = loss.item<double>();
    for (const auto& p : model->named_parameters()) g.grads[p.key()] = p.value().grad().cpu();
    model->checkpointing = {};
    return g;
  };
  int64_t peak_none = 0, peak_all = 0, peak_attn = 0;
  const Grads ref = run("none", &peak_none);
  const Grads all = run("all", &peak_all);
  const Grads attn = run("attn", &peak_attn);
  EXPECT_NEAR(all.loss, ref.loss, 1e-6);
  EXPECT_LT(max_rel_diff(all, ref), 2e-2);
  EXPECT_LT(max_rel_diff(attn, ref), 2e-2);
  EXPECT_LT(peak_all, peak_none);
  EXPECT_LT(peak_attn, peak_none);
}

}  // namespace
}  // namespace gptbench

// A short training run of a small GPT-2 on one fixed synthetic batch lowers the loss with every
// optimizer: on the CPU through the reference paths (tiny model), on a GPU through the fused
// kernels (skipped without one).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <functional>
#include <memory>

#include "fixtures/model_cache.h"
#include "model/gpt2.h"
#include "ops/optim/adafactor.h"
#include "ops/optim/adam8bit.h"
#include "ops/optim/adamw.h"
#include "ops/optim/lion.h"
#include "tests/ops/optim/optim_test_util.h"

namespace gptbench {
namespace {

using Factory = std::function<std::unique_ptr<FusedOptimizer>(std::vector<at::Tensor>)>;

// Learning rates for memorising one batch quickly: Adam-family 3e-3, Lion 10× smaller (its
// sign update is larger per element, as the paper advises), Adafactor its default relative step.
std::vector<std::pair<std::string, Factory>> factories(OptimBackend backend) {
  return {
      {"adamw", [=](std::vector<at::Tensor> p) {
         AdamWOptions o;
         o.lr = 3e-3;
         return std::unique_ptr<FusedOptimizer>(new AdamW(std::move(p), o, backend));
       }},
      {"adam8bit", [=](std::vector<at::Tensor> p) {
         Adam8bitOptions o;
         o.lr = 3e-3;
         return std::unique_ptr<FusedOptimizer>(new Adam8bit(std::move(p), o, backend));
       }},
      {"lion", [=](std::vector<at::Tensor> p) {
         LionOptions o;
         o.lr = 3e-4;
         return std::unique_ptr<FusedOptimizer>(new Lion(std::move(p), o, backend));
       }},
      {"adafactor", [=](std::vector<at::Tensor> p) {
         return std::unique_ptr<FusedOptimizer>(new Adafactor(std::move(p), {}, backend));
       }},
  };
}

// Trains a fresh model (seeded) for `steps` steps; returns (first loss, last loss).
std::pair<double, double> train(const GPT2Config& cfg, c10::Device device, const Factory& make,
                                int steps, int64_t batch, int64_t seq) {
  at::manual_seed(kModelSeed);
  GPT2 model(cfg);
  model->to(device);
  auto data = synthetic_batch(cfg, batch, seq, device, 7);
  auto opt = make(model->parameters());
  double first = 0, last = 0;
  for (int s = 0; s < steps; ++s) {
    auto loss = model->loss(data.idx, data.targets);
    if (s == 0) first = loss.item<double>();
    opt->zero_grad();
    loss.backward();
    opt->step();
  }
  last = model->loss(data.idx, data.targets).item<double>();
  return {first, last};
}

TEST(OptimTrain, TinyGpt2LossDropsOnCpu) {
  testing_optim::SingleThread one_thread;
  const auto cfg = cpu_tiny_config();
  for (const auto& [name, make] : factories(OptimBackend::kReference)) {
    const auto [first, last] = train(cfg, at::kCPU, make, 30, 4, 32);
    // From ln(1024) ≈ 6.93: 30 steps on one batch of 128 tokens take every optimizer well
    // below it (memorisation); 1.0 nats is a conservative floor.
    EXPECT_LT(last, first - 1.0) << name << ": " << first << " -> " << last;
    std::printf("%-9s cpu tiny: loss %.3f -> %.3f (30 steps)\n", name.c_str(), first, last);
  }
}

TEST(OptimTrain, SmallGpt2LossDropsOnGpuFused) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU";
#ifndef GPTBENCH_WITH_CUDA
  GTEST_SKIP() << "built without CUDA kernels";
#endif
  const auto cfg = model_config("custom:L=4,d=256,h=4,V=8192,T=256");
  for (const auto& [name, make] : factories(OptimBackend::kFused)) {
    const auto [first, last] = train(cfg, c10::Device(c10::kCUDA, 0), make, 200, 8, 128);
    // From ln(8192) ≈ 9.0: 200 steps memorise most of one 1,024-token batch.
    EXPECT_LT(last, first - 3.0) << name << ": " << first << " -> " << last;
    std::printf("%-9s gpu fused: loss %.3f -> %.3f (200 steps)\n", name.c_str(), first, last);
  }
}

}  // namespace
}  // namespace gptbench

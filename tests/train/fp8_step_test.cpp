// The training step with FP8 GEMMs (train/step.h Precision::kFp8, LmHead::kFp8; train/case.h):
// names, the CPU's skip and fallback, the first-loss check; on a GPU with FP8 tensor cores the
// first loss against bf16's, a captured graph, and convergence beside bf16 on a learnable token
// stream.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fixtures/case_runner.h"
#include "fixtures/device_info.h"
#include "ops/fp8/linear.h"
#include "tests/ops/have_gpu.h"
#include "train/case.h"
#include "train/step.h"

namespace gptbench {
namespace {

TrainConfig tiny_fp8_config() {
  TrainConfig cfg;
  cfg.model = cpu_tiny_config();  // d 128, d_ff 512, V 1024: every GEMM a multiple of 16
  cfg.precision = Precision::kFp8;
  cfg.batch = 2;
  cfg.seq = 32;
  cfg.optimizer = "torch_fused";
  cfg.head = LmHead::kFused;
  cfg.kernels = BlockKernels::kFused;
  return cfg;
}

TEST(TrainStepFp8, PrecisionAndHeadNames) {
  EXPECT_EQ(parse_precision("fp8"), Precision::kFp8);
  EXPECT_STREQ(precision_name(Precision::kFp8), "fp8");
  EXPECT_EQ(parse_lm_head("fp8"), LmHead::kFp8);
  EXPECT_STREQ(lm_head_name(LmHead::kFp8), "fp8");
  EXPECT_TRUE(uses_fp8_gemms(Precision::kFp8, LmHead::kFused));
  EXPECT_TRUE(uses_fp8_gemms(Precision::kBf16, LmHead::kFp8));
  EXPECT_FALSE(uses_fp8_gemms(Precision::kBf16, LmHead::kFused));
  try {
    parse_precision("e4m3");
    ADD_FAILURE() << "e4m3 parsed";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("fp8"), std::string::npos) << e.what();  // named as valid
  }
}

TEST(TrainCaseFp8, RowName) {
  TrainCaseOptions o;
  o.cfg = tiny_fp8_config();
  o.cfg.optimizer = "adamw";
  o.graph = true;
  EXPECT_EQ(train_step_name(o),
            "model/train_step/tiny/fp8/B:2/T:32/opt:adamw/attn:sdpa/head:fused/blocks:fused/accum:1/mode:graph");
  o.cfg.head = LmHead::kFp8;
  EXPECT_EQ(train_step_name(o),
            "model/train_step/tiny/fp8/B:2/T:32/opt:adamw/attn:sdpa/head:fp8/blocks:fused/accum:1/mode:graph");
  // Delayed scaling is an axis of its own, on steps with FP8 GEMMs only.
  o.cfg.fp8_scaling = Fp8Scaling::kDelayed;
  EXPECT_EQ(train_step_name(o), "model/train_step/tiny/fp8/B:2/T:32/opt:adamw/attn:sdpa/head:fp8/blocks:fused/"
                                "accum:1/mode:graph/scaling:delayed");
  o.cfg.precision = Precision::kBf16;
  o.cfg.head = LmHead::kFused;
  EXPECT_EQ(train_step_name(o),
            "model/train_step/tiny/bf16/B:2/T:32/opt:adamw/attn:sdpa/head:fused/blocks:fused/accum:1/mode:graph");
}

// On the CPU a step with FP8 GEMMs is skipped with linear_unsupported's reason — not an error —
// before a model is built, in either mode and with the FP8 LM head alone too.
TEST(TrainCaseFp8, SkippedOnTheCpuWithTheReason) {
  const std::string why = linear_unsupported(LinearImpl::kFp8, at::kCPU);
  ASSERT_NE(why, "");
  for (bool graph : {false, true})
    for (auto [precision, head] : {std::pair{Precision::kFp8, LmHead::kFused},
                                   std::pair{Precision::kFp8, LmHead::kFp8},
                                   std::pair{Precision::kBf16, LmHead::kFp8}}) {
      TrainCaseOptions o;
      o.cfg = tiny_fp8_config();
      o.cfg.precision = precision;
      o.cfg.head = head;
      o.graph = graph;
      try {
        make_train_case(o, at::kCPU);
        ADD_FAILURE() << train_step_name(o) << " was built on the CPU";
      } catch (const SkipCase& e) {
        EXPECT_EQ(std::string(e.what()), "skipped: " + why);
      }
    }
}

// linear_fp8 falls back to bf16 off an FP8 GPU, so the model itself runs an fp8 step anywhere
// (the suite skips such rows; this keeps tiny configurations usable): a step on the CPU learns
// as a bf16 one does.
TEST(TrainStepFp8, StepFallsBackToBf16OnTheCpu) {
  TrainConfig cfg = tiny_fp8_config();
  cfg.kernels = BlockKernels::kTorch;
  cfg.head = LmHead::kFp8;
  TrainStep ts(cfg, at::kCPU);
  EXPECT_TRUE(ts.model()->fp8_blocks);
  EXPECT_TRUE(ts.model()->fp8_head);
  EXPECT_TRUE(ts.model()->blocks[0]->mlp->fp8);
  EXPECT_EQ(ts.model()->wte->weight.size(0), 1024);  // padded (already a multiple of 64)
  ts.step();
  EXPECT_NEAR(ts.last_loss(), std::log(1024.0), 0.5);
  // The fallback is at::linear, which under autocast rounds the bias to bf16 before adding it;
  // torch::nn::Linear adds the fp32 bias to the bf16 product. Otherwise the same computation.
  const Fp8FirstLosses l = fp8_first_losses(ts);
  EXPECT_NEAR(l.fp8, l.bf16, 1e-3);
  EXPECT_TRUE(ts.model()->fp8_blocks);  // restored
}

TEST(TrainStepFp8, MfuOverTheFp8Peaks) {
  // A step of FLOPs F every 10 ms: mfu_pct over the measured bf16 peak as for every step, and for
  // a step with FP8 GEMMs mfu_fp8_pct and mfu_fp8_datasheet_pct over the measured e4m3 GEMM peak
  // and the datasheet FP8 peak; 0 where a peak is unknown. Other steps declare neither.
  const TrainConfig cfg = tiny_fp8_config();
  const double flops = cfg.flops_per_step();
  StepStats stats;
  PhaseTimes t;
  t.s[kForward] = 0.010;
  stats.add(t);
  stats.add(t);
  Peaks& peaks = global_peaks();
  const Peaks saved = peaks;
  peaks.gemm_e4m3 = 1.5e15;
  peaks.datasheet_e4m3 = 1.979e15;
  peaks.datasheet_bf16 = 0;
  std::map<std::string, double> counters;
  LiveCounters live(counters, step_counter_names(/*fp8=*/true));
  publish_step_counters(stats, cfg, /*bf16_peak=*/8e14, live);
  EXPECT_NEAR(counters.at("mfu_pct"), 100 * flops / 0.010 / 8e14, 1e-9);
  EXPECT_NEAR(counters.at("mfu_fp8_pct"), 100 * flops / 0.010 / 1.5e15, 1e-9);
  EXPECT_NEAR(counters.at("mfu_fp8_datasheet_pct"), 100 * flops / 0.010 / 1.979e15, 1e-9);
  EXPECT_EQ(counters.at("mfu_datasheet_pct"), 0);
  peaks.gemm_e4m3 = 0;  // no FP8 tensor cores
  publish_step_counters(stats, cfg, 8e14, live);
  EXPECT_EQ(counters.at("mfu_fp8_pct"), 0);
  peaks = saved;
  const std::vector<std::string> plain = step_counter_names();
  EXPECT_EQ(std::count(plain.begin(), plain.end(), "mfu_fp8_pct"), 0);
  std::map<std::string, double> bf16_counters;
  LiveCounters bf16_live(bf16_counters, plain);
  publish_step_counters(stats, cfg, 8e14, bf16_live);  // declares none, writes none
  EXPECT_EQ(bf16_counters.count("mfu_fp8_pct"), 0u);
}

TEST(TrainCaseFp8, FirstLossCheck) {
  EXPECT_EQ(check_fp8_first_loss(10.95, 10.94), "");
  EXPECT_EQ(check_fp8_first_loss(10.94, 10.94 + kFp8FirstLossTolerance), "");
  EXPECT_NE(check_fp8_first_loss(10.94, 11.0), "");
  EXPECT_NE(check_fp8_first_loss(NAN, NAN), "");
  EXPECT_NE(check_fp8_first_loss(INFINITY, 10.94), "");
}

// ------------------------------------------------------------------ GPU

std::string no_fp8() {
  if (!have_gpu()) return "no CUDA GPU (or a build without CUDA kernels)";
  return linear_unsupported(LinearImpl::kFp8, c10::Device(c10::kCUDA, 0));
}

// A GPT-2-shaped model small enough for a test: 4 layers of d_model 384 (6 heads of 64), d_ff
// 1536, vocabulary 4096, B·T = 8 × 256 rows: every GEMM on the FP8 path.
TrainConfig gpu_config(Precision precision, LmHead head) {
  TrainConfig cfg;
  cfg.model = model_config("custom:L=4:d=384:h=6:V=4096:T=256");
  cfg.precision = precision;
  cfg.batch = 8;
  cfg.seq = 256;
  cfg.optimizer = "torch_fused";
  cfg.head = head;
  cfg.kernels = BlockKernels::kFused;
  return cfg;
}

TEST(TrainStepFp8, GpuFirstLossMatchesBf16) {
  if (auto why = no_fp8(); !why.empty()) GTEST_SKIP() << why;
  for (LmHead head : {LmHead::kFused, LmHead::kFp8}) {
    TrainStep ts(gpu_config(Precision::kFp8, head), c10::Device(c10::kCUDA, 0));
    const Fp8FirstLosses l = fp8_first_losses(ts);
    std::printf("head:%s first loss fp8 %.6f bf16 %.6f (|diff| %.2e)\n", lm_head_name(head), l.fp8, l.bf16,
                std::fabs(l.fp8 - l.bf16));
    EXPECT_NE(l.fp8, l.bf16);  // the FP8 path ran
    EXPECT_EQ(check_fp8_first_loss(l.fp8, l.bf16), "");
  }
}

// The suite's row, built and verified as the runner does: skipped nowhere here, first loss
// checked, graph captured and replayed.
TEST(TrainCaseFp8, GpuGraphRowVerifiesAndRuns) {
  if (auto why = no_fp8(); !why.empty()) GTEST_SKIP() << why;
  for (Fp8Scaling scaling : {Fp8Scaling::kCurrent, Fp8Scaling::kDelayed}) {
    SCOPED_TRACE(fp8_scaling_name(scaling));
    TrainCaseOptions o;
    o.cfg = gpu_config(Precision::kFp8, LmHead::kFp8);
    o.cfg.optimizer = "adamw";
    o.cfg.fp8_scaling = scaling;
    o.graph = true;
    o.warmup_steps = 3;
    Case c = make_train_case(o, c10::Device(c10::kCUDA, 0));
    EXPECT_EQ(c.verify(), "");
    for (int i = 0; i < 3; ++i) c.run();
    EXPECT_GT(c.counters.at("tokens/s"), 0);
    EXPECT_GT(c.counters.at("graph_ms"), 0);
  }
}

// A token stream the model learns quickly: one fixed sequence of 64 distinct random tokens,
// tiled; row r of every batch starts at offset 9·r of it. The next token is a function of the
// current one, so even the embeddings and the LM head alone can learn it.
struct PatternBatch {
  at::Tensor idx, tgt;  // (B, T) int64
};
PatternBatch pattern_batch(const TrainConfig& cfg) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(99);
  const at::Tensor pattern = at::randperm(cfg.model.vocab, gen, at::TensorOptions().dtype(at::kLong)).narrow(0, 0, 64);
  const int64_t len = cfg.seq + 1 + 64;
  const at::Tensor stream = pattern.repeat({(len + 63) / 64});
  std::vector<at::Tensor> rows;
  for (int64_t r = 0; r < cfg.batch; ++r) rows.push_back(stream.narrow(0, (9 * r) % 64, cfg.seq + 1));
  const at::Tensor all = at::stack(rows);  // (B, T + 1)
  return {all.narrow(1, 0, cfg.seq).contiguous(), all.narrow(1, 1, cfg.seq).contiguous()};
}

// The losses of `steps` eager steps on the pattern from the step's seed.
std::vector<double> pattern_losses(const TrainConfig& cfg, int steps, c10::Device device) {
  TrainStep ts(cfg, device);
  const PatternBatch batch = pattern_batch(cfg);
  ts.set_batch_source([&batch](at::Tensor& idx, at::Tensor& tgt) {
    idx.copy_(batch.idx);
    tgt.copy_(batch.tgt);
  });
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    ts.step();
    losses.push_back(ts.last_loss());
  }
  return losses;
}

// 60 steps of AdamW (lr 3e-4) from one seed, in bf16 and with FP8 GEMMs (blocks; blocks and
// LM head). Both must learn — the last loss under half the first — and FP8 must follow bf16:
// |Δ| ≤ 0.05 + 10% of bf16's last loss. Why that tolerance: the two runs see the same data and
// weights at the start, and FP8's quantization errors are unbiased, so its updates are bf16's
// plus noise of ≈ 5% per GEMM output in RMS (e4m3 x, W; 8% for the e5m2 gradients); Adam's
// normalised update takes the gradients' sign pattern, which that noise barely moves, so the
// trajectories stay close, and the loss curves differ by the noise's effect on the remaining
// loss — a few percent of it where the loss is still falling. 10% relative is twice that; 0.05
// absolute covers the end of the curve, where the loss is small and its relative spread large.
// A wrong gradient scale (a factor 2 or more) or a transposed copy read as plain stalls or
// diverges the FP8 run instead.
TEST(TrainStepFp8, ConvergesLikeBf16) {
  if (auto why = no_fp8(); !why.empty()) GTEST_SKIP() << why;
  const c10::Device gpu(c10::kCUDA, 0);
  constexpr int kSteps = 60;
  const auto bf16 = pattern_losses(gpu_config(Precision::kBf16, LmHead::kFused), kSteps, gpu);
  // Delayed scaling: the first step primes every history with current amaxes, so its loss is
  // current scaling's; later steps cast with the largest amax of the last 16.
  for (auto [head, scaling] : {std::pair{LmHead::kFused, Fp8Scaling::kCurrent}, std::pair{LmHead::kFp8, Fp8Scaling::kCurrent},
                               std::pair{LmHead::kFp8, Fp8Scaling::kDelayed}}) {
    TrainConfig cfg = gpu_config(Precision::kFp8, head);
    cfg.fp8_scaling = scaling;
    const auto fp8 = pattern_losses(cfg, kSteps, gpu);
    std::printf("head:%s %s loss  step 1: bf16 %.4f fp8 %.4f  step 30: bf16 %.4f fp8 %.4f  step 60: bf16 %.4f fp8 %.4f\n",
                lm_head_name(head), fp8_scaling_name(scaling), bf16[0], fp8[0], bf16[29], fp8[29], bf16.back(),
                fp8.back());
    EXPECT_NEAR(fp8[0], bf16[0], kFp8FirstLossTolerance);
    EXPECT_LT(bf16.back(), 0.5 * bf16[0]);
    EXPECT_LT(fp8.back(), 0.5 * fp8[0]);
    for (double l : fp8) ASSERT_TRUE(std::isfinite(l));
    EXPECT_LE(std::fabs(fp8.back() - bf16.back()), 0.05 + 0.10 * bf16.back());
  }
}

}  // namespace
}  // namespace gptbench

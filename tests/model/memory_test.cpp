// The memory model's formulas against values computed by hand for a tiny GPT-2 whose every
// tensor is a multiple of 512 bytes (so the allocator's rounding adds nothing unless noted):
// custom:L=1:d=128:h=2:ff=256:V=1024:T=64 — C = 128, F = 256, H = 2, V = 1,024, n_ctx = 64.
// These are exact counts: the tolerance is none.
#include "model/memory.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace gptbench {
namespace {

MemoryConfig tiny(int64_t batch = 2, int64_t seq = 64) {
  MemoryConfig m;
  m.model = model_config("custom:L=1:d=128:h=2:ff=256:V=1024:T=64");
  m.batch = batch;
  m.seq = seq;
  return m;
}

// P = wte 1,024·128 + wpe 64·128 + block (ln 4·128, c_attn 384·128 + 384, c_proj 128·128 + 128,
// c_fc 256·128 + 256, c_proj 128·256 + 128 = 132,480) + ln_f 256 = 272,000.
constexpr double kParams = 272000;

TEST(MemoryModel, ParameterShapesAddUpToTheParameterCount) {
  double n = 0;
  for (const auto& s : parameter_shapes(tiny().model)) {
    double e = 1;
    for (auto d : s) e *= static_cast<double>(d);
    n += e;
  }
  EXPECT_EQ(n, kParams);
  EXPECT_EQ(n, static_cast<double>(param_count(tiny().model)));
  EXPECT_EQ(parameter_shapes(tiny().model).size(), 2u + 12u + 2u);
}

TEST(MemoryModel, OptimizerStatePerOptimizer) {
  const GPT2Config m = tiny().model;
  EXPECT_EQ(optimizer_state_bytes("adamw", m), 8 * kParams);
  EXPECT_EQ(optimizer_state_bytes("torch_fused", m), 8 * kParams);
  EXPECT_EQ(optimizer_state_bytes("lion", m), 4 * kParams);
  // 8-bit Adam: codes n + n and absmax 2·4·⌈n/256⌉ (each rounded up to 512 B) for the six
  // matrices — wte 262,144 + 2,048 + 2,048, wpe 16,384 + 512 + 512 (32 blocks: 128 B → 512), c_attn
  // 98,304 + 1,024 + 1,024 (192 blocks: 768 B → 1,024), c_proj 32,768 + 512 + 512, c_fc and
  // mlp c_proj 65,536 + 512 + 512 each — and 8 B for each of the 1,664 vector elements
  // (n < 4,096): 266,240 + 17,408 + 100,352 + 33,792 + 2·66,560 + 13,312.
  EXPECT_EQ(optimizer_state_bytes("adam8bit", m), 564224);
  // Adafactor: 4·(r + c) per matrix — wte 4,096 + 512, wpe 256 → 512 + 512, c_attn 1,536 + 512,
  // c_proj 512 + 512, c_fc 1,024 + 512, mlp c_proj 512 + 1,024 — and 4·n for the vectors, 6,656.
  EXPECT_EQ(optimizer_state_bytes("adafactor", m), 4608 + 1024 + 2048 + 1024 + 1536 + 1536 + 6656);
  EXPECT_THROW(optimizer_state_bytes("sgd", m), std::invalid_argument);
  EXPECT_TRUE(optimizer_keeps_grads("adamw"));
  EXPECT_FALSE(optimizer_keeps_grads("torch_fused"));
}

// B = 2, T = 64: N = 128 tokens.
TEST(MemoryModel, ActivationsOfOneBlock) {
  MemoryConfig m = tiny();
  // bf16: 20·N·C 327,680 + 4·N·F 131,072 + 16·N 2,048 + lse 4·B·H·T 1,024.
  EXPECT_EQ(block_saved_bytes(m), 327680 + 131072 + 2048 + 1024);
  // fp32: 32·N·C 524,288 + 8·N·F 262,144 + 2,048 + 1,024.
  m.bf16 = false;
  EXPECT_EQ(block_saved_bytes(m), 524288 + 262144 + 2048 + 1024);
  // The memory-efficient kernel (fp32 on CUDA) rounds T = 40 up to 64 rows of log-sum-exp;
  // the CPU keeps 40. N = 80: 32·80·128 + 8·80·256 + 16·80.
  m.seq = 40;
  EXPECT_EQ(block_saved_bytes(m), 327680 + 163840 + 1280 + 4 * 2 * 2 * 64);
  m.cuda = false;
  EXPECT_EQ(block_saved_bytes(m), 327680 + 163840 + 1280 + 4 * 2 * 2 * 40);
}

// bf16, AdamW (ours: gradients kept), no recomputation. N·V = 131,072.
TEST(MemoryModel, PeakWithoutRecomputationIsLogSoftmaxBackward) {
  const MemoryEstimate e = estimate_memory(tiny());
  EXPECT_EQ(e.params, 4 * kParams);
  EXPECT_EQ(e.grads, 4 * kParams);
  EXPECT_EQ(e.state, 8 * kParams);
  EXPECT_EQ(e.inputs, 2 * 1024);  // idx and targets, 8·N each
  EXPECT_EQ(e.workspace, kGemmWorkspaceBytes);
  // The block 461,824, ln_f's input 4NC 65,536 and statistics 8N 1,024, the head's bf16 input
  // 2NC 32,768, the positions 8T 512.
  EXPECT_EQ(e.saved, 461824 + 65536 + 1024 + 32768 + 512);
  // The bf16 weight copies autograd saves, 2·(4C² + 2CF) + 2VC = 524,288, then
  // loss:    10·N·V = 1,310,720;
  // softmax: 12·N·V = 1,572,864  <- the largest;
  // head:    524,288 + 2NV 262,144 + 2NC 32,768 + 2VC 262,144;
  // block:   524,288 + 12NC 196,608 + 4NF 131,072 + the accumulation's temporary 6·3C² 294,912.
  EXPECT_EQ(e.moment, "softmax");
  EXPECT_EQ(e.weights, 524288);
  EXPECT_EQ(e.transient, 1572864);
  EXPECT_EQ(e.total(), 16 * kParams + 2048 + kGemmWorkspaceBytes + 561664 + 524288 + 1572864);
}

TEST(MemoryModel, RecomputationKeepsBlockInputsOnly) {
  MemoryConfig m = tiny();
  m.recompute.every = 1;
  const MemoryEstimate e = estimate_memory(m);
  // Saved: the block's input 4NC, then as before 65,536 + 1,024 + 32,768 + 512.
  EXPECT_EQ(e.saved, 65536 + 65536 + 1024 + 32768 + 512);
  // Only the head's weight copy 2VC is saved (262,144): softmax 262,144 + 1,572,864 beats
  // block 262,144 + 196,608 + 131,072 + 294,912 + the recomputed block 461,824 + its bf16
  // weights 2·(4C² + 2CF) 262,144 = 1,608,704 and loss 262,144 + 1,310,720.
  EXPECT_EQ(e.moment, "softmax");
  EXPECT_EQ(e.weights, 262144);
  EXPECT_EQ(e.transient, 1572864);
}

TEST(MemoryModel, Fp32HasNoWeightCopiesAndGradientsSetToNoneWait) {
  MemoryConfig m = tiny();
  m.bf16 = false;
  m.optimizer = "torch_fused";
  const MemoryEstimate e = estimate_memory(m);
  EXPECT_EQ(e.grads, 0);  // allocated in the backward, after the peak
  EXPECT_EQ(e.weights, 0);
  // saved: 789,504 + 65,536 + 1,024 + the head's fp32 input 65,536 + 512. softmax 12·N·V =
  // 1,572,864 beats block (12NC 196,608 + 8NF 262,144 + wte's gradient 524,288 + the MLP's
  // 8CF 262,144) 1,245,184 and update (4P + 4VC) 1,612,288 − the saved activations.
  EXPECT_EQ(e.saved, 789504 + 65536 + 1024 + 65536 + 512);
  EXPECT_EQ(e.moment, "softmax");
  EXPECT_EQ(e.transient, 1572864);
}

TEST(MemoryModel, LargestBatchUnderALimit) {
  MemoryConfig m = tiny();
  m.batch = 3;
  const double at3 = estimate_memory(m).total();
  EXPECT_EQ(predicted_max_batch(m, at3), 3);
  EXPECT_EQ(predicted_max_batch(m, at3 - 1), 2);
  EXPECT_EQ(predicted_max_batch(m, 1e6), 0);  // the workspaces alone are 128 MiB
  EXPECT_EQ(predicted_max_batch(m, 1e15, 100), 100);
}

// The study this answers: GPT-2 small, medium and large at T 512, batch 4, bf16, PyTorch's AdamW
// (gradients set to none) fit a 16 GB laptop GPU; xl does not (weights and AdamW state alone
// are 18.7 GB).
TEST(MemoryModel, TheLaptopStudy) {
  for (const char* size : {"small", "medium", "large", "xl", "2.7B"}) {
    MemoryConfig m;
    m.model = model_config(size);
    m.batch = 4;
    m.seq = 512;
    m.optimizer = "torch_fused";
    const bool fits = estimate_memory(m).total() < 16e9;
    EXPECT_EQ(fits, std::string(size) == "small" || std::string(size) == "medium" ||
                        std::string(size) == "large")
        << size << ": " << estimate_memory(m).total() / 1e9 << " GB";
  }
}

}  // namespace
}  // namespace gptbench

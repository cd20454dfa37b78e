// Training-step family: one whole GPT-2 training step on a model of its own — a synthetic batch
// drawn on the CPU, host-to-device copy, forward, fp32 cross-entropy, backward, optimizer step,
// gradients cleared, synchronisation — with CUDA events between the phases
// (train/step.h), so the phase counters add up to the step.
//   precisions: fp32 (TF32 off), tf32, bf16 (autocast over fp32 weights, as PyTorch's AMP),
//               fp8 (bf16 with every block's four GEMMs in FP8: model/fp8_linear.h)
//   optimizers: torch (torch::optim::AdamW), torch_fused (at::_fused_adamw_), and ours from
//               ops/optim/ (adamw, adam8bit, lion) where present (train/optim.h)
//   modes:      eager, graph (forward+backward+optimizer captured once in a CUDA graph, then
//               replayed: the C++ counterpart of torch.compile(mode="reduce-overhead"))
//   cost:       model FLOPs per step = (6·N + 6·n_layer·T·d_model) · B·T·accum; %peak and
//               mfu_pct divide by the measured bf16 GEMM rate whatever the precision (MFU).
//   counters:   tokens/s, step_ms, <phase>_ms, step_cv, step_p99_over_p50, mfu_pct,
//               peak_mem_bytes, step1_ms … step6_ms (warm-up study), warmup_first_over_steady,
//               graph mode: eager_step_ms, graph_warmup_ms, capture_ms, first_replay_ms,
//               graph_overhead_ms, graph_speedup, break_even_steps.
//   heads:      torch (vocabulary 50,257, fp32 cross-entropy: the PyTorch peer's), fused (the
//               vocabulary padded to 50,304 for aligned LM-head GEMMs, our fused
//               cross-entropy on the bf16 logits; train/step.h LmHead), fp8 (fused with the
//               LM-head GEMMs in FP8)
//   blocks:     torch (LibTorch's LayerNorm, residual adds and autocast casts), fused (our fused
//               residual-add + LayerNorm kernels, ops/layernorm.h; model/gpt2.h BlockKernels)
//   names:      model/train_step/<size>/<precision>/B:<b>/T:<t>/opt:<opt>/attn:<impl>/
//               head:<torch|fused|fp8>/blocks:<torch|fused>/accum:<k>/mode:<eager|graph>
//               [/scaling:delayed]
// Default: each --gptbench_models size at B×T of the options; bf16 with torch_fused, torch and
// ours, eager and graph; the other selected precisions with torch_fused; 2·B in bf16; the
// fused head eager with torch_fused (LibTorch's blocks) and with our adamw and fused blocks (the
// phases of the best configuration), and in a graph with our adamw and fused blocks at B and
// 2·B (and LibTorch's blocks at 2·B, for the blocks' gain).
// --gptbench_full=true adds the batch sweep 1…64 (eager and graph; out of memory is a skipped
// point) with either head, every optimizer in both modes, naive attention, our flash attention
// and SDPA's cuDNN backend (attn:cudnn) with the fused head, and gradient accumulation 2, 4, 8.
// On the CPU: fp32 only, eager, a few optimizers and accum:2 on the tiny model.
// --gptbench_fp8=true (with bf16 among --gptbench_dtypes) adds fp8 steps in the best bf16
// configuration (our adamw, fused blocks, a graph) at B and 2·B, with the LM head in bf16
// (head:fused) and in FP8 (head:fp8), the latter also with delayed scaling (scaling:delayed,
// model/fp8_linear.h), and one eager at B (its phases), each beside the same bf16 row; and at
// B, graph and eager, in the compiled peers' configuration (torch_fused, LibTorch's blocks and
// head), the names torchao's FP8 step pairs with (docs/peers.md). On a GPU without FP8 tensor
// cores, and on the CPU (listed there), they are skipped with the reason; before timing, the first loss with FP8 GEMMs is checked against bf16's
// (train/case.h check_fp8_first_loss).
#include <algorithm>
#include <set>

#include "fixtures/family.h"
#include "fixtures/case_runner.h"
#include "train/case.h"

namespace gptbench {
namespace {

std::vector<std::string> selected_precisions(const SuiteInputs& in) {
  if (!in.on_cuda()) return {"fp32"};  // CPU: fp32 only (TF32 does not exist there; bf16 autocast is slow)
  std::vector<std::string> out;
  for (const DtypeSpec& d : in.dtypes_among(precision_names())) out.push_back(d.name);
  return out;
}

bool has_optimizer(const std::string& name) {
  const auto names = train_optimizer_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

GPTBENCH_FAMILY(train_step, const SuiteInputs& in) {
  const auto precisions = selected_precisions(in);
  if (precisions.empty()) return;
  const std::string main_prec =
      std::find(precisions.begin(), precisions.end(), "bf16") != precisions.end() ? "bf16"
                                                                                   : precisions[0];
  std::set<std::string> seen;
  auto add = [&](const GPT2Config& model, const std::string& prec, int64_t batch,
                 const std::string& opt, AttnImpl attn, int64_t accum, bool graph,
                 LmHead head = LmHead::kTorch, BlockKernels kernels = BlockKernels::kTorch,
                 Fp8Scaling scaling = Fp8Scaling::kCurrent) {
    TrainCaseOptions tc;
    tc.cfg.model = model;
    tc.cfg.precision = parse_precision(prec);
    tc.cfg.batch = batch;
    tc.cfg.seq = in.seq;
    tc.cfg.optimizer = opt;
    tc.cfg.attn = attn;
    tc.cfg.accum = accum;
    tc.cfg.head = head;
    tc.cfg.kernels = kernels;
    tc.cfg.fp8_scaling = scaling;
    tc.graph = graph;
    if (!in.on_cuda()) tc.warmup_steps = 3;
    CaseSpec spec;
    spec.name = train_step_name(tc);
    if (!seen.insert(spec.name).second) return;
    spec.unit = benchmark::kMillisecond;
    spec.make = [tc, device = in.device] { return make_train_case(tc, device); };
    register_case(std::move(spec));
  };

  const std::string best_opt = has_optimizer("adamw") ? "adamw" : "torch_fused";
  const auto kFusedBlocks = BlockKernels::kFused;
  // FP8 beside the best bf16 configuration, one comparison per pair of rows (the bf16 rows on a
  // GPU only: the CPU lists the fp8 rows to skip them).
  auto add_fp8 = [&](const GPT2Config& model) {
    if (!in.fp8 || !in.has_dtype("bf16")) return;  // opt-in: --gptbench_fp8=true
    auto pair = [&](int64_t b, bool graph, LmHead fp8_head) {
      if (in.on_cuda()) add(model, "bf16", b, best_opt, AttnImpl::kSdpa, 1, graph, LmHead::kFused, kFusedBlocks);
      add(model, "fp8", b, best_opt, AttnImpl::kSdpa, 1, graph, fp8_head, kFusedBlocks);
    };
    for (int64_t b : {in.batch, 2 * in.batch}) {
      for (LmHead head : {LmHead::kFused, LmHead::kFp8}) pair(b, /*graph=*/true, head);
      add(model, "fp8", b, best_opt, AttnImpl::kSdpa, 1, /*graph=*/true, LmHead::kFp8, kFusedBlocks,
          Fp8Scaling::kDelayed);
    }
    pair(in.batch, /*graph=*/false, LmHead::kFused);
    // The configuration of the compiled peers' steps (LibTorch's optimizer, blocks and head), the
    // names torchao's FP8 step pairs with (peers/families/train_step_fp8.py: mode:graph with
    // mode:torchao_cg, mode:eager with mode:torchao).
    for (bool graph : {true, false})
      add(model, "fp8", in.batch, "torch_fused", AttnImpl::kSdpa, 1, graph, LmHead::kTorch);
  };

  for (const GPT2Config& model : in.models) {
    if (!in.on_cuda()) {
      for (const char* opt : {"torch_fused", "torch", "adamw"})
        if (has_optimizer(opt)) add(model, "fp32", in.batch, opt, AttnImpl::kSdpa, 1, false);
      add(model, "fp32", in.batch, "torch_fused", AttnImpl::kSdpa, 2, false);
      add(model, "fp32", in.batch, "torch_fused", AttnImpl::kSdpa, 1, true);  // skipped: no GPU
      add(model, "fp32", in.batch, "torch_fused", AttnImpl::kSdpa, 1, false, LmHead::kFused);
      add(model, "fp32", in.batch, "torch_fused", AttnImpl::kSdpa, 1, false, LmHead::kFused,
          BlockKernels::kFused);
      add_fp8(model);  // listed, skipped: FP8 GEMMs need a GPU
      continue;
    }
    // Default suite.
    std::vector<std::string> main_opts = {"torch_fused", "torch"};
    if (has_optimizer("adamw")) main_opts.push_back("adamw");
    for (const auto& opt : main_opts) add(model, main_prec, in.batch, opt, AttnImpl::kSdpa, 1, false);
    add(model, main_prec, in.batch, "torch_fused", AttnImpl::kSdpa, 1, true);
    if (has_optimizer("adamw")) add(model, main_prec, in.batch, "adamw", AttnImpl::kSdpa, 1, true);
    for (const auto& prec : precisions)
      add(model, prec, in.batch, "torch_fused", AttnImpl::kSdpa, 1, false);
    add(model, main_prec, 2 * in.batch, "torch_fused", AttnImpl::kSdpa, 1, false);
    // The fastest configuration: padded vocabulary + fused cross-entropy, fused blocks, our
    // AdamW, a graph.
    add(model, main_prec, in.batch, "torch_fused", AttnImpl::kSdpa, 1, false, LmHead::kFused);
    add(model, main_prec, in.batch, best_opt, AttnImpl::kSdpa, 1, false, LmHead::kFused, kFusedBlocks);
    for (int64_t b : {in.batch, 2 * in.batch})
      add(model, main_prec, b, best_opt, AttnImpl::kSdpa, 1, true, LmHead::kFused, kFusedBlocks);
    add(model, main_prec, 2 * in.batch, best_opt, AttnImpl::kSdpa, 1, true, LmHead::kFused);
    add_fp8(model);
    if (!in.full) continue;

    // Full sweeps.
    for (int64_t b : {1, 2, 4, 8, 12, 16, 24, 32, 48, 64})
      for (bool graph : {false, true}) add(model, main_prec, b, "torch_fused", AttnImpl::kSdpa, 1, graph);
    for (const auto& opt : train_optimizer_names())
      for (bool graph : {false, true}) add(model, main_prec, in.batch, opt, AttnImpl::kSdpa, 1, graph);
    for (const auto& prec : precisions) add(model, prec, in.batch, "torch_fused", AttnImpl::kSdpa, 1, true);
    add(model, main_prec, in.batch, "torch_fused", AttnImpl::kNaive, 1, false);
    for (AttnImpl attn : {AttnImpl::kFlash, AttnImpl::kCudnn})
      add(model, main_prec, in.batch, best_opt, attn, 1, true, LmHead::kFused, kFusedBlocks);
    for (int64_t b : {1, 2, 4, 8, 12, 16, 24, 32, 48, 64})
      for (BlockKernels k : {BlockKernels::kTorch, kFusedBlocks})
        add(model, main_prec, b, best_opt, AttnImpl::kSdpa, 1, true, LmHead::kFused, k);
    for (int64_t accum : {2, 4, 8}) add(model, main_prec, in.batch, "torch_fused", AttnImpl::kSdpa, accum, false);
  }
}

}  // namespace gptbench

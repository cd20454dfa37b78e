// Activation-checkpointing family: the training step of bench/train_step.cpp with the blocks'
// activations recomputed in the backward pass (model/checkpoint.h) instead of kept.
//   modes:     none, all (every block), every2 (blocks 0, 2, 4, …), attn (selective: the
//              attention half of every block: ln_1, QKV, SDPA, projection)
//   counters:  peak_mem_bytes (the runner's window over the timed steps), step_ms, tokens/s,
//              ref_step_ms and ref_peak_mem_bytes (the same model and batch without
//              checkpointing, measured first in the same case), overhead_pct (step time over
//              the reference), mem_ratio_vs_none, max_batch (largest batch that fits: doubling
//              from B then bisecting to within 1/16, each probe one full step; GPU only), and
//              the train-step counters (phases, CV, MFU — recomputation is not counted in the
//              FLOPs, so MFU falls by the recomputed share).
//   names:     model/checkpointing/<size>/<precision>/B:<b>/T:<t>/opt:<opt>/ckpt:<mode>
// Default: each --gptbench_models size in bf16 (or the first selected precision) at B×T of the
// options, torch_fused. --gptbench_full=true adds every4. GPT-2 xl, the largest size it is meant for, runs
// with --gptbench_models=xl (see docs/train_step.md for the command).
// On the CPU: tiny model, fp32, no batch search (nothing runs out of memory there).
#include "fixtures/family.h"
#include "fixtures/case_runner.h"
#include "train/case.h"

namespace gptbench {

GPTBENCH_FAMILY(checkpointing, const SuiteInputs& in) {
  std::string prec = "fp32";
  if (in.on_cuda()) {
    const auto sel = in.dtypes_among(precision_names());
    if (sel.empty()) return;
    prec = in.has_dtype("bf16") ? "bf16" : sel[0].name;
  }
  std::vector<std::string> modes = {"none", "all", "every2", "attn"};
  if (in.full) modes.push_back("every4");
  for (const GPT2Config& model : in.models)
    for (const auto& mode : modes) {
      TrainCaseOptions tc;
      tc.cfg = train_config(model, prec, in.batch, in.seq, "torch_fused", mode);
      tc.warmup_steps = 2;
      tc.checkpoint_reference = mode != "none";
      tc.max_batch_search = in.on_cuda();
      CaseSpec spec;
      spec.name = checkpointing_name(tc);
      spec.unit = benchmark::kMillisecond;
      spec.make = [tc, device = in.device] { return make_train_case(tc, device); };
      register_case(std::move(spec));
    }
}

}  // namespace gptbench

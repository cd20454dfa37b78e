// Data-parallel training-step family: the GPT-2 step on every rank of the run with its
// gradients averaged over the ranks (train/dp_step.h, train/dp_case.h):
//   ddp    bucketed (25 MiB) gradient all-reduce overlapped with the backward
//   zero1  the same buckets reduce-scattered, the optimizer on this rank's shard, the updated
//          parameters all-gathered (optimizer state 1/R per rank)
//   fsdp   the blocks' parameters sharded too, each block all-gathered for its forward and
//          again for its recomputation (every block recomputed: ckpt:all), its gradients
//          reduce-scattered (train/dp_fsdp.h)
//   names:    model/train_step_dp/<size>/<precision>/B:<b>/T:<t>/opt:<opt>/attn:sdpa/head:<h>/
//             blocks:<k>[/ckpt:all][/bucket:<size>][/grad_comm:<type>][/overlap:<what>][/buffers:<kind>]
//             [/param_gather:<where>][/param_comm:<type>][/update:<where>][/carveout:<sms>]/
//             ranks:<R>/mode:<ddp|zero1|fsdp>   (B is the per-GPU batch; bucket, grad_comm,
//             overlap, buffers, param_gather, param_comm, update and carveout when
//             --gptbench_dp_bucket, --gptbench_dp_grad_comm, --gptbench_dp_overlap (ddp and
//             zero1; forward: ddp), --gptbench_dp_buffers, --gptbench_dp_param_gather and
//             --gptbench_dp_param_comm (zero1), --gptbench_dp_update (ddp),
//             --gptbench_dp_sm_carveout ask)
//   counters: tokens/s (all ranks), tokens_per_s_per_gpu, scaling_efficiency (against the
//             one-GPU step of the same batch, ref_step_ms: the mean over the ranks of each
//             one's, ref_step_min_rank_ms … ref_step_max_rank_ms), exposed_comm_ms/_pct, phases,
//             step_ms (the slowest rank's mean; step_min_rank_ms … step_max_rank_ms),
//             slowest_rank_step_ms, between_steps_ms, the reference's phases (ref_forward_ms,
//             ref_backward_ms, ...) and clock (ref_sm_clock_mhz, ref_power_capped_pct) beside the row's,
//             state_bytes / ref_state_bytes / state_ratio, peak_mem_max_rank_bytes, mfu_pct
// Default: each --gptbench_models size at B×T of the options in bf16 with the one-GPU step's
// fastest configuration (our AdamW where built, the fused LM head, fused blocks), every mode.
// CPU (Gloo): fp32, LibTorch's head and blocks, 256 KiB buckets. Run with gptbench-run --ranks N; plain
// gptbench runs them with ranks:1. Every case runs a fixed number of steps on every rank.
#include <algorithm>

#include "train/dp_case.h"
#include "fixtures/family.h"
#include "fixtures/case_runner.h"
#include "model/config.h"

namespace gptbench {

// Seconds of untimed steps before the reference and the data-parallel step are timed
// (DpCaseOptions::settle_s): long enough for the board's power control, which acts within tens
// of milliseconds, and for the temperature a step's load brings (seconds).
constexpr double kDpSettleSeconds = 1.0;
// Steps timed on a GPU: the row's iterations, and as many for the one-GPU reference.
constexpr int kDpTimedSteps = 10;

GPTBENCH_FAMILY(train_step_dp, const SuiteInputs& in) {
  const auto opts = train_optimizer_names();
  const bool ours = std::find(opts.begin(), opts.end(), "adamw") != opts.end();
  for (const GPT2Config& model : in.models)
    for (DpMode mode : {DpMode::kDdp, DpMode::kZero1, DpMode::kFsdp}) {
      DpCaseOptions dc;
      dc.ranks = in.ranks;
      dc.dp.mode = mode;
      TrainConfig& tc = dc.dp.train;
      if (mode == DpMode::kFsdp) tc.checkpointing.mode = CheckpointMode::kEveryBlock;
      tc.model = model;
      tc.batch = in.batch;
      tc.seq = in.seq;
      tc.optimizer = ours ? "adamw" : "torch_fused";
      if (in.on_cuda()) {
        tc.precision = Precision::kBf16;
        tc.head = LmHead::kFused;
        tc.kernels = BlockKernels::kFused;
        dc.settle_s = kDpSettleSeconds;
        dc.ref_steps = kDpTimedSteps;
      } else {
        tc.precision = Precision::kFp32;
        dc.warmup_steps = 2;
        dc.ref_steps = 1;
        dc.dp.bucket_bytes = 256 << 10;  // several buckets for the tiny model
      }
      if (in.dp_bucket_bytes > 0) {
        dc.dp.bucket_bytes = in.dp_bucket_bytes;
        dc.bucket_named = true;
      }
      if (in.on_cuda()) dc.dp.sm_carveout = in.dp_sm_carveout;
      if (!in.dp_grad_comm.empty()) {
        dc.dp.grad_comm = parse_grad_comm(in.dp_grad_comm);
        dc.grad_comm_named = true;
      }
      // fsdp overlaps its backward; only ddp's all-reduces can wait for the next forward
      if (!in.dp_overlap.empty() && mode != DpMode::kFsdp) {
        const CommOverlap overlap = parse_comm_overlap(in.dp_overlap);
        if (mode == DpMode::kDdp || overlap != CommOverlap::kForward) {
          dc.dp.overlap = overlap;
          dc.overlap_named = true;
        }
      }
      if (!in.dp_buffers.empty()) {
        dc.dp.buffers = parse_dp_buffers(in.dp_buffers);
        dc.buffers_named = true;
      }
      if (!in.dp_param_gather.empty() && mode == DpMode::kZero1) {  // the only mode that gathers so
        dc.dp.param_gather = parse_param_gather(in.dp_param_gather);
        dc.param_gather_named = true;
      }
      if (!in.dp_param_comm.empty() && mode == DpMode::kZero1) {
        dc.dp.param_comm = parse_param_comm(in.dp_param_comm);
        dc.param_comm_named = true;
      }
      if (!in.dp_update.empty() && mode == DpMode::kDdp) {
        dc.dp.update = parse_ddp_update(in.dp_update);
        dc.update_named = true;
      }
      CaseSpec spec;
      spec.name = train_step_dp_name(dc);
      spec.unit = benchmark::kMillisecond;
      spec.iterations = in.on_cuda() ? kDpTimedSteps : 3;
      spec.make = [dc, device = in.device] { return make_dp_case(dc, device); };
      register_case(std::move(spec));
    }
}

}  // namespace gptbench

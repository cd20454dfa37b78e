// The counters the suite writes, each with its direction and unit, declared once: the suite's
// families name their counters from this vocabulary (docs/design.md §5) and gptbench-compare
// judges a change by the declared direction, not by guessing from the name. A counter not listed
// here (another tool's, or a new one) is judged from its name, and gptbench-compare says so.
// Plain C++ (no LibTorch): included by compare/ and by the suite's tests.
#pragma once

#include <string_view>

namespace gptbench::compare {

enum class Direction { kHigherIsBetter, kLowerIsBetter, kInformational };

struct CounterKind {
  std::string_view name;
  Direction direction;
  std::string_view unit;
};

inline constexpr Direction kHigher = Direction::kHigherIsBetter;
inline constexpr Direction kLower = Direction::kLowerIsBetter;
inline constexpr Direction kInfo = Direction::kInformational;

inline constexpr CounterKind kCounterKinds[] = {
    // Rates and fractions of a peak: more is better.
    {"FLOP/s", kHigher, "FLOP/s"},
    {"bytes/s", kHigher, "B/s"},
    {"%peak", kHigher, "%"},
    {"tokens/s", kHigher, "tokens/s"},
    {"tokens_per_s_per_gpu", kHigher, "tokens/s"},
    {"algbw_GBps", kHigher, "GB/s"},
    {"busbw_GBps", kHigher, "GB/s"},
    {"pct_p2p_peak", kHigher, "%"},
    {"mfu_pct", kHigher, "%"},
    {"mfu_datasheet_pct", kHigher, "%"},
    {"mfu_fp8_pct", kHigher, "%"},
    {"mfu_fp8_datasheet_pct", kHigher, "%"},
    {"scaling_efficiency", kHigher, "ratio"},
    {"graph_speedup", kHigher, "ratio"},
    {"speedup_vs_<peer>", kHigher, "ratio"},  // Case::peer_run: the peer's time ÷ the row's
    {"max_batch", kHigher, "sequences"},
    // Times, memory and overheads: less is better.
    {"time_us", kLower, "us"},
    {"peak_mem_bytes", kLower, "B"},
    {"peak_mem_max_rank_bytes", kLower, "B"},
    {"state_bytes", kLower, "B"},
    {"param_bytes", kLower, "B"},
    {"bytes/param", kLower, "B"},
    {"step_ms", kLower, "ms"},
    {"slowest_rank_step_ms", kLower, "ms"},
    {"step_min_rank_ms", kLower, "ms"},
    {"step_max_rank_ms", kLower, "ms"},
    {"between_steps_ms", kLower, "ms"},
    {"data_ms", kLower, "ms"},
    {"h2d_ms", kLower, "ms"},
    {"forward_ms", kLower, "ms"},
    {"loss_ms", kLower, "ms"},
    {"backward_ms", kLower, "ms"},
    {"optimizer_ms", kLower, "ms"},
    {"zero_grad_ms", kLower, "ms"},
    {"graph_ms", kLower, "ms"},
    {"sync_ms", kLower, "ms"},
    {"fwd_ms", kLower, "ms"},
    {"comm_ms", kLower, "ms"},
    {"exposed_comm_ms", kLower, "ms"},
    {"exposed_comm_pct", kLower, "%"},
    {"prep_ms", kLower, "ms"},
    {"stall_ms", kLower, "ms"},
    {"stall_pct", kLower, "%"},
    {"overhead_pct", kLower, "%"},
    {"us_per_kernel", kLower, "us"},
    {"no_loader_step_ms", kLower, "ms"},
    {"step<N>_ms", kLower, "ms"},  // the N-th warm-up step (step1_ms, step2_ms, ...)
    {"graph_overhead_ms", kLower, "ms"},
    {"break_even_steps", kLower, "steps"},
    {"mem_ratio_vs_none", kLower, "ratio"},
    {"step_cv", kLower, "ratio"},
    {"step_p99_over_p50", kLower, "ratio"},
    {"warmup_first_over_steady", kLower, "ratio"},
    {"capture_ms", kLower, "ms"},
    {"first_replay_ms", kLower, "ms"},
    {"graph_warmup_ms", kLower, "ms"},
    {"eager_step_ms", kLower, "ms"},
    {"compile_s", kLower, "s"},
    // What describes the case rather than its speed.
    {"params", kInfo, "parameters"},
    {"ranks", kInfo, "processes"},
    {"buckets", kInfo, "buckets"},
    {"buckets_after_backward", kInfo, "buckets"},
    {"collectives_per_call", kInfo, "calls"},
    {"kernels", kInfo, "launches"},
    {"steps_measured", kInfo, "steps"},
    {"steps_per_call", kInfo, "steps"},
    {"workers", kInfo, "threads"},
    {"pinned", kInfo, "flag"},
    {"bwd/fwd", kInfo, "ratio"},
    {"state_ratio", kInfo, "ratio"},
    {"ref_state_bytes", kInfo, "B"},
    {"param_ratio", kInfo, "ratio"},
    {"ref_param_bytes", kInfo, "B"},
    {"ref_step_ms", kInfo, "ms"},
    {"ref_step_min_rank_ms", kInfo, "ms"},
    {"ref_step_max_rank_ms", kInfo, "ms"},
    {"ref_peak_mem_bytes", kInfo, "B"},
    {"predicted_peak_bytes", kInfo, "B"},
    {"predicted_max_batch", kInfo, "sequences"},
    {"pred_error_pct", kInfo, "%"},
    {"probes", kInfo, "steps"},
    {"memory_limit_bytes", kInfo, "B"},
    // The host's time to enqueue one region of a row timed in pairs, and its peer's
    // (fixtures/case_slot.h): what sets the hold both sides get, not what the row measures.
    {"enqueue_us", kInfo, "us"},
    {"peer_enqueue_us", kInfo, "us"},
    // Accuracy of a lower-precision implementation against ours in bf16 (the FP8 attention
    // forward, bench/attention.cpp): the verification's tolerance judges it, not a comparison.
    {"err_vs_bf16_rel", kInfo, "ratio"},
    {"err_vs_bf16_max_abs", kInfo, "value"},
    // The GPU's state while the case was timed (fixtures/gpu_power.h).
    {"sm_clock_mhz", kInfo, "MHz"},
    {"power_capped_pct", kInfo, "%"},
    {"ref_sm_clock_mhz", kInfo, "MHz"},
    {"ref_data_ms", kInfo, "ms"},
    {"ref_forward_ms", kInfo, "ms"},
    {"ref_backward_ms", kInfo, "ms"},
    {"ref_comm_ms", kInfo, "ms"},
    {"ref_optimizer_ms", kInfo, "ms"},
    {"ref_sync_ms", kInfo, "ms"},
    {"ref_power_capped_pct", kInfo, "%"},
};

// The declared kind of `name`, or nullptr when the suite declares none. "step<N>_ms" stands for
// every warm-up step's counter, "speedup_vs_<peer>" for every paired peer's.
inline const CounterKind* declared_counter(std::string_view name) {
  constexpr std::string_view kStep = "step", kMs = "_ms", kVs = "speedup_vs_";
  if (name.size() > kStep.size() + kMs.size() && name.substr(0, kStep.size()) == kStep &&
      name.substr(name.size() - kMs.size()) == kMs &&
      name.find_first_not_of("0123456789", kStep.size()) == name.size() - kMs.size())
    name = "step<N>_ms";
  if (name.size() > kVs.size() && name.substr(0, kVs.size()) == kVs) name = "speedup_vs_<peer>";
  for (const CounterKind& kind : kCounterKinds)
    if (kind.name == name) return &kind;
  return nullptr;
}

}  // namespace gptbench::compare

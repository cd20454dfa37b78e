// When gptbench-premerge stops sampling a benchmark (adaptive stopping). The check runs in
// epochs, one fresh worker process per side each (--processes; premerge_run.h), and samples
// every benchmark in each. After every round the two sides' samples, pooled over the epochs so
// far, are compared as gptbench-compare does (compare_metric: medians, U test, the ±95%
// interval of the change, and the spread between the processes' medians) and the answer is
//  - decided-change: the verdict is regression or improvement (significant at `alpha` and
//    beyond the threshold, and no side's processes differ by more than the threshold);
//  - decided-same: the whole interval change ± uncertainty lies within ±threshold/2 (the
//    interval is at least as wide as what the processes' medians leave, process_interval);
//  - processes: neither can be said because the processes' medians alone leave the change
//    uncertain by more than the threshold, and they differ beyond their own sampling error, so
//    more samples of the same processes cannot help (fresh ones can: the extra epochs of
//    premerge_run.h);
// once the current epoch has min_samples per side. Only the last epoch stops there: an earlier
// one ends its part there instead ("epoch-done"), so that every process contributes. An
// epoch's part also ends at samples_per_process samples per side, or when its share of
// max_seconds is used (epoch e of K ends at (e + 1) / K of it); in the last epoch these stop
// the benchmark undecided ("max-samples", "max-time": gptbench-compare calls such a benchmark
// unreliable or same from its samples; the check never calls it same itself).
// `alpha` is the per-benchmark level: the caller divides the check's alpha by the number of
// benchmarks compared (Bonferroni, a conservative stand-in for the Holm correction that
// gptbench-compare applies to the final verdicts), so that stopping early at the first
// significant look does not turn noise into verdicts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "compare/verdict.h"

namespace gptbench::runner {

enum class StopReason {
  kContinue,       // not stopped (yet)
  kDecidedChange,  // regression or improvement beyond the threshold
  kDecidedSame,    // change ± uncertainty within ±threshold/2
  kMaxSamples,     // each side has max_samples: undecided
  kMaxTime,        // max_seconds passed: undecided
  kLost,           // a side errored: its worker crashed (or hung) twice, or refused the case
  kSkipped,        // a side's worker reported the case as skipped (no GPU, out of memory, ...)
  kOneSide,        // listed by one side only (added or removed): sampled there alone
  kEpochDone,      // this epoch's part is done, the next epoch goes on (never a final reason)
  kProcesses,      // undecided: the processes' medians leave the change wider than the threshold
};

// "continue", "decided-change", "decided-same", "max-samples", "max-time", "lost", "skipped",
// "one-side", "epoch-done", "processes".
const char* to_string(StopReason reason);

struct StopSettings {
  size_t min_samples = 5;   // per side and epoch, before any decision
  size_t max_samples = 30;  // per side over all epochs (split among them, see samples_per_process)
  double max_seconds = 10;  // sampling wall time of one benchmark over all epochs
  double alpha = 0.05;      // per benchmark (already corrected for the number of benchmarks)
  double threshold = 0.02;  // minimum relative change that counts
  size_t processes = 1;     // epochs, one worker process per side each
};

// Samples per side and epoch at most: max(min_samples, ceil(max_samples / processes)).
size_t samples_per_process(const StopSettings& settings);

// One side's samples so far, pooled over the epochs, and the epoch of each (same length; empty:
// every sample is from the current epoch's process).
struct SideSamples {
  std::vector<double> times;
  std::vector<int64_t> epochs;
};

struct StopCheck {
  StopReason reason = StopReason::kContinue;
  bool compared = false;  // comparison holds the current numbers (each side has >= 2 samples)
  compare::MetricComparison comparison;
};

// The decision after a round of epoch `epoch` (0-based, < settings.processes); `elapsed_s` is
// the benchmark's sampling time so far, all epochs. Times are lower-is-better samples of any one
// unit (nanoseconds per call in gptbench-premerge).
StopCheck check_stop(const SideSamples& base, const SideSamples& contender, const StopSettings& settings,
                     size_t epoch, double elapsed_s);

// One process per side (the first epoch of settings.processes = 1): samples alone.
StopCheck check_stop(const std::vector<double>& base, const std::vector<double>& contender,
                     const StopSettings& settings, double elapsed_s);

// Whether change ± uncertainty lies within ±threshold/2.
bool clearly_same(const compare::MetricComparison& comparison, double threshold);

// Whether either side's processes differ beyond their medians' sampling error
// (compare::processes_differ_beyond_sampling), that error being under half the threshold.
bool process_limited(const compare::MetricComparison& comparison);

// Whether a benchmark that stopped undecided (`reason`) would be helped by more processes: it
// stopped for its processes, or at a limit while what the processes leave keeps it from being
// called same and they differ beyond their sampling error.
bool wants_more_processes(StopReason reason, const compare::MetricComparison& comparison);

}  // namespace gptbench::runner

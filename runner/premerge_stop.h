// When gptbench-premerge stops sampling a benchmark (adaptive stopping). Once each side has
// min_samples, after every round the two sample vectors are compared as gptbench-compare does
// (compare_metric: medians, U test, the ±95% interval of the change) and sampling stops when
// the answer is clear:
//  - decided-change: the verdict is regression or improvement (significant at `alpha` and
//    beyond the threshold);
//  - decided-same: the whole interval change ± uncertainty lies within ±threshold/2;
// otherwise it goes on until each side has max_samples, or max_seconds have passed
// ("undecided": gptbench-compare calls such a benchmark unreliable or same from its samples;
// the check never calls it same itself).
// `alpha` is the per-benchmark level: the caller divides the check's alpha by the number of
// benchmarks compared (Bonferroni, a conservative stand-in for the Holm correction that
// gptbench-compare applies to the final verdicts), so that stopping early at the first
// significant look does not turn noise into verdicts.
#pragma once

#include <cstddef>
#include <vector>

#include "verdict.h"  // compare/

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
};

// "continue", "decided-change", "decided-same", "max-samples", "max-time", "lost", "skipped",
// "one-side".
const char* to_string(StopReason reason);

struct StopSettings {
  size_t min_samples = 5;   // per side, before any decision
  size_t max_samples = 30;  // per side
  double max_seconds = 10;  // sampling wall time of one benchmark
  double alpha = 0.05;      // per benchmark (already corrected for the number of benchmarks)
  double threshold = 0.02;  // minimum relative change that counts
};

struct StopCheck {
  StopReason reason = StopReason::kContinue;
  bool compared = false;  // comparison holds the current numbers (each side has >= 2 samples)
  compare::MetricComparison comparison;
};

// The decision after a round; `elapsed_s` is the benchmark's sampling time so far. Times are
// lower-is-better samples of any one unit (nanoseconds per call in gptbench-premerge).
StopCheck check_stop(const std::vector<double>& base, const std::vector<double>& contender,
                     const StopSettings& settings, double elapsed_s);

// Whether change ± uncertainty lies within ±threshold/2.
bool clearly_same(const compare::MetricComparison& comparison, double threshold);

}  // namespace gptbench::runner

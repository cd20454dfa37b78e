// The decision for one metric of one benchmark pair (its time, or a counter):
// medians, relative change, U test, noise, and the verdict with its reason.
#pragma once

#include <string>
#include <vector>

#include "counters.h"
#include "mde.h"
#include "side_stats.h"
#include "stats.h"

namespace gptbench::compare {

enum class Verdict {
  kRegression,   // significant and worse by more than the threshold
  kImprovement,  // significant and better by more than the threshold
  kSame,         // no change larger than the threshold that the test can see
  kUnreliable,   // too few repetitions, or noise above the threshold, to decide
  kBroken,       // errored in NEW but ran in BASE: fails the gate
  kNotCompared,  // skipped or errored in BASE, or skipped in NEW
  kInformational,  // counter without a better direction: numbers only
};

const char* to_string(Verdict verdict);

// Upstream's minimum; below it the U test cannot run.
constexpr size_t kMinRepetitions = 2;

struct MetricComparison {
  SideStats base;
  SideStats contender;
  Direction direction = Direction::kLowerIsBetter;
  double ratio = 0;      // contender median / base median
  double change = 0;     // ratio - 1
  double threshold = 0;  // minimum |change| that counts
  double cv = 0;         // max(cv base, cv contender)
  double process_spread = 0;  // max(process_spread base, process_spread contender)
  // process_interval(base, contender) (side_stats.h): what the processes' medians leave of the
  // change's uncertainty.
  double process_interval = 0;
  bool processes_paired = false;  // process_interval paired the sides' epochs
  // process_change(base, contender) (side_stats.h): the change the processes' medians show, the
  // centre of process_interval; NaN unless both sides have 2 or more processes. A regression or
  // improvement needs it beyond the threshold too: the U test pools the samples as if they were
  // independent, so a process's shared offset can make a pooled change "significant" that the
  // processes do not show.
  double process_change = 0;
  // Half-width of an approximate 95% interval of `change`: the larger of
  // 1.96 * sqrt(median_error_base^2 + median_error_contender^2) (from the samples' own
  // spread) and process_interval (where a side's samples come from 2 or more processes).
  // Any verdict but "unreliable" needs this and the samples' noise of both sides within the
  // threshold (see too_noisy; with several processes the spread within them).
  double uncertainty = 0;
  bool tested = false;   // the U test ran
  UTestResult u_test;
  Verdict verdict = Verdict::kSame;
  std::string reason;
  // The smallest change this metric could have been called a regression for: set by
  // build_report once the level of its multiple-testing family is known (mde.h).
  MinimumDetectableEffect mde;
};

// Decides from per-side stats (samples, when present, feed the U test).
// `paired_processes`: the sides' processes ran epoch by epoch together (process_interval).
MetricComparison compare_metric(SideStats base, SideStats contender, Direction direction, double alpha,
                                double threshold, bool paired_processes = false);

// Noise wider than the threshold: the change's uncertainty (which holds what the
// processes' medians leave unknown) or, unless the sides' epochs are paired
// (processes_paired), the robust CV of either side. Such a metric is "unreliable", whatever
// its p-value.
bool too_noisy(const MetricComparison& metric);

// Holm's step-down over `tests` tests of `what` ("pairs") left `cutoff` as the
// level a p-value must stay below: a regression or improvement that is not
// below it becomes "unreliable", one that is says so in its reason. Other
// verdicts are kept.
void apply_holm(MetricComparison& metric, double cutoff, size_t tests, const std::string& what);

// Fewest equal repetitions per side for which the U test can reach p < alpha.
size_t repetitions_needed(double alpha);

}  // namespace gptbench::compare

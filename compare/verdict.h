// The decision for one metric of one benchmark pair (its time, or a counter):
// medians, relative change, U test, noise, and the verdict with its reason.
#pragma once

#include <string>
#include <vector>

#include "counters.h"
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

// Summary of one side's samples.
struct SideStats {
  size_t n = 0;  // repetitions (from the "repetitions" field when aggregates only)
  double median = 0;
  double mean = 0;
  double stddev = 0;
  double cv = 0;  // stddev / mean
  // 1.4826 · MAD / median: the spread the noise rule judges. The verdict rests on medians and
  // ranks, which a few outlying samples (a clock dip, a preempted host thread) do not move;
  // the classical CV above is reported but one such sample can make it many times larger.
  double robust_cv = 0;
  double mad = 0; // median absolute deviation
  // Standard error of the median relative to it, from a robust spread:
  // 1.2533 * 1.4826 * MAD / (median * sqrt(n)) (normal approximation).
  double median_error = 0;
  double min = 0;
  double max = 0;
  bool aggregates_only = false;  // no iteration rows: median/mean from aggregate rows
  std::vector<double> samples;
  // Which process took the samples (the rows' process_index, written by gptbench-premerge):
  // the number of distinct processes (0 when no row names one; rows without one among rows
  // with one count as one more process), the median of each (in process_index order), and
  // the process spread: (max - min of those medians) / median, 0 with fewer than 2 processes.
  // Samples of one process are not independent replicates of the binary: a process-level
  // offset (CPU placement, allocator layout, ...) is shared by all of them.
  size_t processes = 0;
  std::vector<double> process_medians;
  double process_spread = 0;
};

SideStats describe(std::vector<double> samples);
// The same, with the process_index of each sample (-1: none; same length as samples).
SideStats describe(std::vector<double> samples, const std::vector<int64_t>& processes);

// Relative standard error of a median from a spread estimate and n.
double relative_median_error(double spread, double median, size_t n);

struct MetricComparison {
  SideStats base;
  SideStats contender;
  Direction direction = Direction::kLowerIsBetter;
  double ratio = 0;      // contender median / base median
  double change = 0;     // ratio - 1
  double threshold = 0;  // minimum |change| that counts
  double cv = 0;         // max(cv base, cv contender)
  double process_spread = 0;  // max(process_spread base, process_spread contender)
  // Half-width of an approximate 95% interval of `change`: the larger of
  // 1.96 * sqrt(median_error_base^2 + median_error_contender^2) (from the samples' own
  // spread) and process_spread (where a side's samples come from 2 or more processes).
  // Any verdict but "unreliable" needs this, the CV and the process spread of both
  // sides within the threshold (see too_noisy).
  double uncertainty = 0;
  bool tested = false;   // the U test ran
  UTestResult u_test;
  Verdict verdict = Verdict::kSame;
  std::string reason;
};

// Decides from per-side stats (samples, when present, feed the U test).
MetricComparison compare_metric(SideStats base, SideStats contender, Direction direction, double alpha,
                                double threshold);

// Noise wider than the threshold: the change's uncertainty, the CV of either
// side, or the process spread of either side. Such a metric is "unreliable",
// whatever its p-value.
bool too_noisy(const MetricComparison& metric);

// Holm's step-down over `tests` tests of `what` ("pairs") left `cutoff` as the
// level a p-value must stay below: a regression or improvement that is not
// below it becomes "unreliable", one that is says so in its reason. Other
// verdicts are kept.
void apply_holm(MetricComparison& metric, double cutoff, size_t tests, const std::string& what);

// Fewest equal repetitions per side for which the U test can reach p < alpha.
size_t repetitions_needed(double alpha);

}  // namespace gptbench::compare

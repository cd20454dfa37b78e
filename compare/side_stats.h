// One side of a comparison: the summary of one metric's samples (a benchmark's time or one of
// its counters) that the verdict is decided on. SideStats are built here only: from samples, or
// from a benchmark of a run, whose aggregate rows stand in when it has no repetitions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runjson/run.h"

namespace gptbench::compare {

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
  std::vector<int64_t> process_ids;  // the process_index of each of process_medians (-1: none)
  std::vector<double> process_medians;
  double process_spread = 0;
  // The sample standard deviation of the logarithms of process_medians (a relative spread; 0
  // with fewer than 2 processes, NaN when a median is not positive).
  double process_log_sd = 0;
  // 1.4826 · MAD of the samples' relative deviations from their own process's median: the
  // spread within a process (0 with fewer than 2 processes).
  double within_process_cv = 0;
};

// The spread the noise rule judges: within_process_cv where the samples come from 2 or more
// processes (what differs between processes is the process interval's to judge), else
// robust_cv.
double sample_noise_cv(const SideStats& side);

// The standard error (relative) that a process's median has from its own samples' noise:
// 1.2533 · within_process_cv · sqrt(k/n) (NaN with fewer than 2 processes).
double process_median_error(const SideStats& side);

// Whether the side's process medians scatter by more than their own sampling error explains:
// process_log_sd above twice process_median_error. Then the processes differ, and more samples
// of the same processes cannot narrow process_interval; fresh processes can.
bool processes_differ_beyond_sampling(const SideStats& side);

// Half-width (relative) of a 95% interval of the change of the medians, as far as the process
// medians know it: each process's median is one draw of the binary, so with k_b and k_n
// processes the change of the sides' mean log-medians has the standard error
// sqrt(sd_b^2/k_b + sd_n^2/k_n) (sd: process_log_sd), with Welch-Satterthwaite's degrees of
// freedom; the half-width is expm1(t_0.975 * error). Unlike the range of the medians, it
// narrows as processes are added. A side of a single process is taken to vary like the other
// (sd_b = sd_n). 0 when neither side has 2 or more processes (nothing is known of them),
// infinity when the interval has no finite width.
//
// `paired`: process e of one side ran at the same time as process e of the other, their
// samples interleaved (gptbench-premerge's epochs), so whatever the GPU's state did to that
// epoch (its clock and temperature under the power limit) it did to both. Then the interval
// is that of the mean of the per-epoch differences d_e = ln(new_e) - ln(base_e) over the k
// epochs both sides have: expm1(t_0.975(k - 1) * sd(d) / sqrt(k)), the epochs' shared part
// cancelling; without 2 such epochs, as unpaired.
double process_interval(const SideStats& base, const SideStats& contender, bool paired = false);

// The change as the processes see it, the estimate process_interval is the interval of:
// expm1 of the mean per-epoch difference d_e when `paired` and both sides have 2 such epochs,
// else expm1 of the difference of the sides' mean log-medians. NaN unless both sides have 2 or
// more processes (a single process's offset is then indistinguishable from the change).
double process_change(const SideStats& base, const SideStats& contender, bool paired = false);

SideStats describe(std::vector<double> samples);
// The same, with the process_index of each sample (-1: none; same length as samples).
SideStats describe(std::vector<double> samples, const std::vector<int64_t>& processes);

// Relative standard error of a median from a spread estimate and n.
double relative_median_error(double spread, double median, size_t n);

// A benchmark's time: from its repetitions, else from its aggregate rows
// (--benchmark_report_aggregates_only: median, else mean; marked aggregates_only). The median
// is NaN when there is no time at all (only complexity rows such as BigO/RMS).
SideStats time_stats(const runjson::Benchmark& bench, runjson::TimeKind kind);

// A counter of a benchmark: its values per repetition, else the value in its median or mean
// aggregate row. The median is NaN when the benchmark has no such counter.
SideStats counter_stats(const runjson::Benchmark& bench, const std::string& name);

}  // namespace gptbench::compare

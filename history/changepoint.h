// Change points in a benchmark's series of per-run medians: PELT (Killick, Fearnhead and
// Eckley 2012, "Optimal detection of changepoints with a linear computational cost") with a
// Gaussian change-in-mean cost on log(median), the noise level estimated robustly from the
// series itself, isolated outlying runs clipped first, then steps smaller than a minimum
// effect merged away (docs/history.md).
#pragma once

#include <cstddef>
#include <vector>

namespace gptbench::history {

struct ChangePointSettings {
  // Penalty per change point, in units of log(n) (times the estimated variance): 2 is the
  // Schwarz criterion; more is stricter. The default keeps stationary noise free of steps.
  double penalty_log_n = 4.0;
  size_t min_segment = 3;     // runs on each side of a step: one or two outlying runs are no step
  double min_effect = 0.02;   // |relative change of segment medians| below this is no step
  double min_noise = 0.001;   // floor of the noise estimate (log units, i.e. 0.1%)
};

struct Step {
  size_t index = 0;     // first run after the step (0-based position in the series)
  double before = 0;    // median of the segment before
  double after = 0;     // median of the segment after
  double change = 0;    // after / before - 1
};

// Steps in `values` (positive, e.g. times in ns), in order. Series shorter than
// 2 * min_segment have none.
std::vector<Step> detect_steps(const std::vector<double>& values, const ChangePointSettings& settings = {});

// The PELT segmentation alone: the start index of each segment after the first, for a series
// `y` and a cost of sum((y - mean)^2) / variance plus `penalty` per change.
std::vector<size_t> pelt_mean_changes(const std::vector<double>& y, double variance, double penalty,
                                      size_t min_segment);

// Each value clamped to within k * sigma of the median of its neighbourhood (half_window on
// each side): isolated outliers lose their pull, a step of more than half_window runs keeps it.
std::vector<double> clip_outliers(const std::vector<double>& y, double sigma, size_t half_window, double k);

// Robust standard deviation of a series' noise: 1.4826 * MAD of first differences / sqrt(2),
// which a few steps do not inflate.
double difference_noise(const std::vector<double>& y);

}  // namespace gptbench::history

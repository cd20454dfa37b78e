// The minimum detectable effect (MDE) of a metric: the smallest relative change of the new side's
// median that the comparison, as it ran, would have called a regression: beyond the threshold,
// significant at the corrected level with these sample counts at the noise measured, and not
// hidden by the noise rule (docs/compare.md, "Minimum detectable effect").
#pragma once

#include <cstdint>
#include <limits>

namespace gptbench::compare {

struct MetricComparison;

// What sets a metric's MDE.
enum class MdeLimit {
  kThreshold,    // the U test would see less: the threshold decides
  kTest,         // the U test at the level in force, at the noise measured, with these samples
  kRepetitions,  // too few samples: not even complete separation reaches the level (none)
  kNoise,        // noise wider than the threshold: any change is "unreliable" (none)
  kNotJudged,    // a counter with no better direction, or not computed
};

// "threshold", "test", "repetitions", "noise", "not_judged".
const char* to_string(MdeLimit limit);

struct MinimumDetectableEffect {
  // |relative change| of the median in the worse direction; +inf: none can be detected; NaN:
  // not judged.
  double value = std::numeric_limits<double>::quiet_NaN();
  // The U test's part alone, before the threshold and the noise rule (+inf: the level is out of
  // reach of these sample counts; NaN: not judged).
  double test = std::numeric_limits<double>::quiet_NaN();
  MdeLimit limited_by = MdeLimit::kNotJudged;
};

// The log-ratio shift L of the new side's samples (each multiplied by exp(L)) at which the two-sided
// U test's expected statistic reaches its critical value at `level`, for n1 and n2 samples whose
// log spreads are sigma1 and sigma2 (normal): U counts the pairs with the new value larger, so its
// expectation is n1*n2*Phi(L / sqrt(sigma1^2 + sigma2^2)), set to u* - 1/2 (u* from
// u_critical_value; the half is the continuity step of a discrete statistic). +inf when u* does
// not exist; 0 when the level is so loose that no shift is needed.
double u_test_detectable_shift(int64_t n1, int64_t n2, double level, double sigma1, double sigma2);

// The MDE of a metric decided at `level` (the cut-off its multiple-testing family applied: Holm's,
// or alpha without correction). Uses the robust CVs (1.4826 MAD / median) as the log spreads.
MinimumDetectableEffect minimum_detectable_effect(const MetricComparison& metric, double level);

}  // namespace gptbench::compare

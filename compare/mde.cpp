#include "mde.h"

#include <algorithm>
#include <cmath>

#include "stats.h"
#include "verdict.h"

namespace gptbench::compare {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

MinimumDetectableEffect none(MdeLimit limit, double test) { return {kInfinity, test, limit}; }

}  // namespace

const char* to_string(MdeLimit limit) {
  switch (limit) {
    case MdeLimit::kThreshold: return "threshold";
    case MdeLimit::kTest: return "test";
    case MdeLimit::kRepetitions: return "repetitions";
    case MdeLimit::kNoise: return "noise";
    case MdeLimit::kNotJudged: return "not_judged";
  }
  return "?";
}

double u_test_detectable_shift(int64_t n1, int64_t n2, double level, double sigma1, double sigma2) {
  const int64_t critical = u_critical_value(n1, n2, level);
  if (critical < 0) return kInfinity;
  const double pairs = static_cast<double>(n1) * static_cast<double>(n2);
  const double share = (static_cast<double>(critical) - 0.5) / pairs;  // P(new > base) needed
  return std::max(0.0, normal_quantile(share) * std::hypot(sigma1, sigma2));
}

MinimumDetectableEffect minimum_detectable_effect(const MetricComparison& metric, double level) {
  if (metric.direction == Direction::kInformational) return {};
  const SideStats& base = metric.base;
  const SideStats& contender = metric.contender;
  if (base.aggregates_only || contender.aggregates_only) return none(MdeLimit::kRepetitions, kInfinity);
  const auto n1 = static_cast<int64_t>(base.samples.size());
  const auto n2 = static_cast<int64_t>(contender.samples.size());
  const double shift = u_test_detectable_shift(n1, n2, level, base.robust_cv, contender.robust_cv);
  if (std::isinf(shift)) return none(MdeLimit::kRepetitions, kInfinity);
  // A slower time is exp(L) - 1 above the base; a lower rate (higher is better) 1 - exp(-L) below.
  const double test =
      metric.direction == Direction::kLowerIsBetter ? std::expm1(shift) : -std::expm1(-shift);
  if (std::isnan(test)) return {};
  // The noise rule judges spreads relative to the median, which a shift of the new side by a
  // factor does not change: no change of any size gets past it.
  if (too_noisy(metric)) return none(MdeLimit::kNoise, test);
  if (test > metric.threshold) return {test, test, MdeLimit::kTest};
  return {metric.threshold, test, MdeLimit::kThreshold};
}

}  // namespace gptbench::compare

#include "premerge_stop.h"

#include <algorithm>
#include <cmath>

namespace gptbench::runner {

const char* to_string(StopReason reason) {
  switch (reason) {
    case StopReason::kContinue: return "continue";
    case StopReason::kDecidedChange: return "decided-change";
    case StopReason::kDecidedSame: return "decided-same";
    case StopReason::kMaxSamples: return "max-samples";
    case StopReason::kMaxTime: return "max-time";
    case StopReason::kLost: return "lost";
    case StopReason::kSkipped: return "skipped";
    case StopReason::kOneSide: return "one-side";
  }
  return "?";
}

bool clearly_same(const compare::MetricComparison& comparison, double threshold) {
  const double reach = std::fabs(comparison.change) + comparison.uncertainty;
  return std::isfinite(reach) && reach <= threshold / 2;
}

StopCheck check_stop(const std::vector<double>& base, const std::vector<double>& contender,
                     const StopSettings& settings, double elapsed_s) {
  StopCheck check;
  if (base.size() >= compare::kMinRepetitions && contender.size() >= compare::kMinRepetitions) {
    check.comparison = compare::compare_metric(compare::describe(base), compare::describe(contender),
                                               compare::Direction::kLowerIsBetter, settings.alpha,
                                               settings.threshold);
    check.compared = true;
  }
  const size_t fewest = std::min(base.size(), contender.size());
  if (check.compared && fewest >= settings.min_samples) {
    const compare::Verdict verdict = check.comparison.verdict;
    if (verdict == compare::Verdict::kRegression || verdict == compare::Verdict::kImprovement) {
      check.reason = StopReason::kDecidedChange;
      return check;
    }
    if (clearly_same(check.comparison, settings.threshold)) {
      check.reason = StopReason::kDecidedSame;
      return check;
    }
  }
  if (fewest >= settings.max_samples)
    check.reason = StopReason::kMaxSamples;
  else if (elapsed_s >= settings.max_seconds)
    check.reason = StopReason::kMaxTime;
  return check;
}

}  // namespace gptbench::runner

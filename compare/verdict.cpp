#include "verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

namespace gptbench::compare {
namespace {

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", fraction * 100);
  return buf;
}

std::string number(double value, const char* format) {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

}  // namespace

const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::kRegression: return "regression";
    case Verdict::kImprovement: return "improvement";
    case Verdict::kSame: return "same";
    case Verdict::kUnreliable: return "unreliable";
    case Verdict::kBroken: return "broken";
    case Verdict::kNotCompared: return "not_compared";
    case Verdict::kInformational: return "info";
  }
  return "?";
}

constexpr double kMadToSigma = 1.4826;          // MAD of a normal sample -> sigma
constexpr double kMedianEfficiency = 1.2533;    // sqrt(pi/2): SE(median) / SE(mean)
constexpr double kInterval95 = 1.96;

double relative_median_error(double spread, double center, size_t n) {
  if (n == 0 || !(center > 0) || !std::isfinite(spread)) return std::numeric_limits<double>::infinity();
  return kMedianEfficiency * spread / (center * std::sqrt(static_cast<double>(n)));
}

SideStats describe(std::vector<double> samples) {
  SideStats stats;
  stats.n = samples.size();
  if (!samples.empty()) {
    stats.median = median(samples);
    stats.mean = mean(samples);
    stats.stddev = sample_stddev(samples);
    stats.cv = coefficient_of_variation(samples);
    const auto [lo, hi] = std::minmax_element(samples.begin(), samples.end());
    stats.min = *lo;
    stats.max = *hi;
    std::vector<double> deviations;
    deviations.reserve(samples.size());
    for (double v : samples) deviations.push_back(std::fabs(v - stats.median));
    stats.mad = median(std::move(deviations));
    stats.median_error = relative_median_error(kMadToSigma * stats.mad, stats.median, stats.n);
  }
  stats.samples = std::move(samples);
  return stats;
}

size_t repetitions_needed(double alpha) {
  for (size_t n = kMinRepetitions; n < 64; ++n) {
    if (smallest_p_value(static_cast<int64_t>(n), static_cast<int64_t>(n)) < alpha) return n;
  }
  return 64;
}

MetricComparison compare_metric(SideStats base, SideStats contender, Direction direction, double alpha,
                                double threshold) {
  MetricComparison out;
  out.direction = direction;
  out.threshold = threshold;
  if (base.median > 0) {
    out.ratio = contender.median / base.median;
  } else {
    out.ratio = contender.median == base.median ? 1.0 : std::numeric_limits<double>::infinity();
  }
  out.change = out.ratio - 1;
  out.cv = std::max(base.cv, contender.cv);
  out.uncertainty = kInterval95 * std::hypot(base.median_error, contender.median_error);
  if (std::isnan(out.uncertainty)) out.uncertainty = std::numeric_limits<double>::infinity();
  out.base = std::move(base);
  out.contender = std::move(contender);

  if (direction == Direction::kInformational) {
    out.verdict = Verdict::kInformational;
    out.reason = "no better direction for this counter";
    return out;
  }
  const size_t n1 = out.base.samples.size();
  const size_t n2 = out.contender.samples.size();
  if (out.base.aggregates_only || out.contender.aggregates_only) {
    out.verdict = Verdict::kUnreliable;
    out.reason = "only aggregate rows in the JSON, no repetitions to test";
    return out;
  }
  if (n1 < kMinRepetitions || n2 < kMinRepetitions) {
    out.verdict = Verdict::kUnreliable;
    out.reason = "needs at least " + std::to_string(kMinRepetitions) + " repetitions per side (has " +
                 std::to_string(n1) + " and " + std::to_string(n2) + ")";
    return out;
  }
  const double smallest = smallest_p_value(static_cast<int64_t>(n1), static_cast<int64_t>(n2));
  if (smallest >= alpha) {
    out.verdict = Verdict::kUnreliable;
    out.reason = std::to_string(n1) + " and " + std::to_string(n2) + " repetitions cannot reach p < " +
                 number(alpha, "%g") + " (smallest p " + number(smallest, "%.3f") + "); use at least " +
                 std::to_string(repetitions_needed(alpha)) + " per side";
    return out;
  }
  out.tested = true;
  out.u_test = mann_whitney_u(out.base.samples, out.contender.samples);
  const bool significant = out.u_test.p_value < alpha;
  const bool large = std::fabs(out.change) > threshold;
  const bool worse = direction == Direction::kLowerIsBetter ? out.change > 0 : out.change < 0;
  const std::string p_text = "p=" + number(out.u_test.p_value, "%.4f");
  if (significant && large) {
    out.verdict = worse ? Verdict::kRegression : Verdict::kImprovement;
    out.reason = p_text + " < " + number(alpha, "%g") + " and |change| " + percent(std::fabs(out.change)) + " > " +
                 percent(threshold);
  } else if (large) {
    out.verdict = Verdict::kUnreliable;
    out.reason = "|change| " + percent(std::fabs(out.change)) + " > " + percent(threshold) + " but not significant (" +
                 p_text + "); add repetitions";
  } else if (out.uncertainty > threshold) {
    out.verdict = Verdict::kUnreliable;
    out.reason = "too noisy: change known to +/-" + percent(out.uncertainty) + ", wider than the threshold " +
                 percent(threshold) + " (" + p_text + ", CV " + percent(out.cv) + ")";
  } else {
    out.verdict = Verdict::kSame;
    out.reason = "|change| " + percent(std::fabs(out.change)) + " <= " + percent(threshold) + ", " + p_text;
  }
  return out;
}

}  // namespace gptbench::compare

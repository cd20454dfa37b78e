#include "verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

namespace gptbench::compare {
namespace {

std::string number(double value, const char* format) {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

std::string percent(double fraction) { return number(fraction * 100, "%.1f%%"); }

std::string signed_percent(double fraction) { return number(fraction * 100, "%+.1f%%"); }

// The processes' medians alone leave the change more uncertain than the threshold.
bool processes_too_far_apart(const MetricComparison& metric) {
  return metric.process_interval > metric.threshold;
}

// "the base side's 3 processes differ by 11.2%, the new side's 3 by 0.4% (median to median)"
std::string process_text(const MetricComparison& metric) {
  const auto side = [](const SideStats& s, const char* name) {
    return std::string("the ") + name + " side's " + std::to_string(s.processes) + " processes by " +
           percent(s.process_spread);
  };
  return std::string("the processes' medians leave the change known to +/-") + percent(metric.process_interval) +
         (metric.processes_paired ? " epoch by epoch" : "") + " (" + side(metric.base, "base") + ", " +
         side(metric.contender, "new") + ", median to median)";
}

// Whether the samples' own spread is judged against the threshold: not when the sides' epochs
// are paired. There a slow phase of one side shows in its epoch's difference, which the process
// interval holds (and so the uncertainty), and the spread within processes enters through the
// medians' errors; a quiet-median benchmark with noisy samples (a GEMM at the power limit) is
// then judged by its interval, not set aside.
bool samples_judged(const MetricComparison& metric) { return !metric.processes_paired; }

// What makes a metric too noisy for its threshold, e.g. "robust CV 22.0% (new)".
std::string noise_text(const MetricComparison& metric) {
  std::string out;
  const auto add = [&](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
  const auto cv_text = [](const SideStats& s) {
    return std::string(s.processes >= 2 ? "robust CV within processes " : "robust CV ") + percent(sample_noise_cv(s));
  };
  if (samples_judged(metric)) {
    if (sample_noise_cv(metric.base) > metric.threshold) add(cv_text(metric.base) + " (base)");
    if (sample_noise_cv(metric.contender) > metric.threshold) add(cv_text(metric.contender) + " (new)");
  }
  if (processes_too_far_apart(metric)) add(process_text(metric));
  // An interval as wide as the processes' says nothing new: print it when the samples' own
  // spread makes it wider.
  if (metric.uncertainty > metric.threshold && metric.uncertainty > metric.process_interval) {
    add("change known to +/-" + percent(metric.uncertainty));
  }
  return out;
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

constexpr double kInterval95 = 1.96;

bool too_noisy(const MetricComparison& metric) {
  return metric.uncertainty > metric.threshold ||
         (samples_judged(metric) && (sample_noise_cv(metric.base) > metric.threshold ||
                                     sample_noise_cv(metric.contender) > metric.threshold));
}

size_t repetitions_needed(double alpha) {
  for (size_t n = kMinRepetitions; n < 64; ++n) {
    if (smallest_p_value(static_cast<int64_t>(n), static_cast<int64_t>(n)) < alpha) return n;
  }
  return 64;
}

MetricComparison compare_metric(SideStats base, SideStats contender, Direction direction, double alpha,
                                double threshold, bool paired_processes) {
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
  out.process_spread = std::max(base.process_spread, contender.process_spread);
  // From the samples' own spread: within their processes where there are several (what differs
  // between processes is the process interval's below).
  const auto sample_error = [](const SideStats& s) {
    return s.processes >= 2 ? relative_median_error(s.within_process_cv * s.median, s.median, s.n) : s.median_error;
  };
  out.uncertainty = kInterval95 * std::hypot(sample_error(base), sample_error(contender));
  if (std::isnan(out.uncertainty)) out.uncertainty = std::numeric_limits<double>::infinity();
  // Samples of one process share its offset, so the medians are known no better than the
  // processes agree: with 3 processes a side whose medians scatter by s (log scale), the
  // interval is t(4 dof) * s * sqrt(2/3) = 2.27 s wide each way; with 6, 1.29 s.
  out.process_interval = process_interval(base, contender, paired_processes);
  out.processes_paired = paired_processes && base.processes >= 2 && contender.processes >= 2;
  out.process_change = process_change(base, contender, paired_processes);
  out.uncertainty = std::max(out.uncertainty, out.process_interval);
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
  const bool processes_known = !std::isnan(out.process_change);
  const bool large = std::fabs(out.change) > threshold && (!processes_known || std::fabs(out.process_change) > threshold);
  // "" or ", +1.4% process by process" when the processes' estimate differs from the pooled one.
  const std::string by_process =
      processes_known ? ", " + signed_percent(out.process_change) + " process by process" : std::string();
  const bool worse = direction == Direction::kLowerIsBetter ? out.change > 0 : out.change < 0;
  const std::string p_text = "p=" + number(out.u_test.p_value, "%.4f");
  if (too_noisy(out)) {
    // Checked first: a significant change on samples this spread out is not
    // one to gate on (nor to call "same").
    out.verdict = Verdict::kUnreliable;
    const bool processes_differ = processes_too_far_apart(out);
    out.reason = "too noisy: " + noise_text(out) + ", wider than the threshold " + percent(threshold) + " (change " +
                 signed_percent(out.change) + ", " + p_text + "); " +
                 (processes_differ ? "run more processes, quiet the machine (pin the CPUs) or raise the threshold"
                                   : "add repetitions, quiet the machine or raise the threshold");
  } else if (significant && large) {
    out.verdict = worse ? Verdict::kRegression : Verdict::kImprovement;
    out.reason = p_text + " < " + number(alpha, "%g") + " and |change| " + percent(std::fabs(out.change)) +
                 by_process + " > " + percent(threshold);
  } else if (std::fabs(out.change) > threshold && processes_known && !large) {
    // The pooled samples cross the threshold, the processes do not (and process_interval, being
    // within the threshold, leaves no room for a change beyond it that they hide).
    out.verdict = Verdict::kSame;
    out.reason = "|change| " + percent(std::fabs(out.change)) + by_process + " <= " + percent(threshold) + " (the processes' estimate), " + p_text;
  } else if (large) {
    out.verdict = Verdict::kUnreliable;
    out.reason = "|change| " + percent(std::fabs(out.change)) + " > " + percent(threshold) + " but not significant (" +
                 p_text + "); add repetitions";
  } else {
    out.verdict = Verdict::kSame;
    out.reason = "|change| " + percent(std::fabs(out.change)) + " <= " + percent(threshold) + ", " + p_text;
  }
  return out;
}

void apply_holm(MetricComparison& metric, double cutoff, size_t tests, const std::string& what) {
  if (metric.verdict != Verdict::kRegression && metric.verdict != Verdict::kImprovement) return;
  const std::string family = "Holm correction over " + std::to_string(tests) + " " + what + " (needed < " +
                             number(cutoff, "%.3g") + ")";
  if (metric.u_test.p_value < cutoff) {
    metric.reason += ", significant after " + family;
    return;
  }
  metric.verdict = Verdict::kUnreliable;
  metric.reason = "|change| " + percent(std::fabs(metric.change)) + " > " + percent(metric.threshold) + " but p = " +
                  number(metric.u_test.p_value, "%.2g") + " not significant after " + family;
  const size_t n1 = metric.base.samples.size();
  const size_t n2 = metric.contender.samples.size();
  const double smallest = smallest_p_value(static_cast<int64_t>(n1), static_cast<int64_t>(n2));
  if (smallest >= cutoff) {
    metric.reason += "; " + std::to_string(n1) + " and " + std::to_string(n2) + " repetitions cannot get below " +
                     number(smallest, "%.2g") + ", use at least " + std::to_string(repetitions_needed(cutoff)) +
                     " per side";
  }
}

}  // namespace gptbench::compare

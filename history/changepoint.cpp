#include "changepoint.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "runjson/median.h"

namespace gptbench::history {

double difference_noise(const std::vector<double>& y) {
  if (y.size() < 3) return 0;
  std::vector<double> diffs;
  diffs.reserve(y.size() - 1);
  for (size_t i = 1; i < y.size(); ++i) diffs.push_back(y[i] - y[i - 1]);
  const double center = runjson::median(diffs);
  for (double& d : diffs) d = std::abs(d - center);
  return 1.4826 * runjson::median(diffs) / std::sqrt(2.0);
}

std::vector<size_t> pelt_mean_changes(const std::vector<double>& y, double variance, double penalty,
                                      size_t min_segment) {
  const size_t n = y.size();
  min_segment = std::max<size_t>(min_segment, 1);
  if (n < 2 * min_segment) return {};
  std::vector<double> s1(n + 1, 0), s2(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    s1[i + 1] = s1[i] + y[i];
    s2[i + 1] = s2[i] + y[i] * y[i];
  }
  // Cost of y[a, b): its squared deviations from its mean, in units of the variance.
  auto cost = [&](size_t a, size_t b) {
    const double sum = s1[b] - s1[a], len = static_cast<double>(b - a);
    return std::max(0.0, s2[b] - s2[a] - sum * sum / len) / variance;
  };
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> best(n + 1, inf);  // best[t]: optimal penalised cost of y[0, t)
  std::vector<size_t> last(n + 1, 0);    // start of the last segment of that optimum
  best[0] = -penalty;
  std::vector<size_t> candidates;  // possible starts of the last segment, pruned as PELT does
  for (size_t t = min_segment; t <= n; ++t) {
    const size_t newest = t - min_segment;  // a segment start becomes possible once min_segment fits
    if (newest == 0 || newest >= min_segment) candidates.push_back(newest);
    for (size_t tau : candidates) {
      const double value = best[tau] + cost(tau, t) + penalty;
      if (value < best[t]) {
        best[t] = value;
        last[t] = tau;
      }
    }
    // Pruning: a start that is already worse than the optimum by more than the penalty can
    // never become optimal later (the cost is additive, splitting never costs more).
    std::erase_if(candidates, [&](size_t tau) { return best[tau] + cost(tau, t) > best[t]; });
  }
  std::vector<size_t> changes;
  for (size_t t = n; last[t] > 0; t = last[t]) changes.push_back(last[t]);
  std::reverse(changes.begin(), changes.end());
  return changes;
}

namespace {

double segment_median(const std::vector<double>& values, size_t begin, size_t end) {
  return runjson::median(std::vector<double>(values.begin() + static_cast<std::ptrdiff_t>(begin),
                                             values.begin() + static_cast<std::ptrdiff_t>(end)));
}

}  // namespace

std::vector<double> clip_outliers(const std::vector<double>& y, double sigma, size_t half_window, double k) {
  std::vector<double> clipped = y;
  for (size_t i = 0; i < y.size(); ++i) {
    const size_t begin = i > half_window ? i - half_window : 0;
    const size_t end = std::min(y.size(), i + half_window + 1);
    const double center = segment_median(y, begin, end);
    clipped[i] = std::clamp(y[i], center - k * sigma, center + k * sigma);
  }
  return clipped;
}

std::vector<Step> detect_steps(const std::vector<double>& values, const ChangePointSettings& settings) {
  std::vector<double> y;
  y.reserve(values.size());
  for (double v : values) y.push_back(std::log(std::max(v, 1e-300)));
  const double noise = std::max(difference_noise(y), settings.min_noise);
  const double penalty = settings.penalty_log_n * std::log(std::max<double>(static_cast<double>(y.size()), 2));
  // Heavy tails (a run on a busy host) would each buy a segment of their own under the Gaussian
  // cost: runs far from their neighbours' median are pulled back to 2 sigma of it first.
  y = clip_outliers(y, noise, settings.min_segment, 2.0);
  std::vector<size_t> changes = pelt_mean_changes(y, noise * noise, penalty, settings.min_segment);

  // Merge away the smallest step while it is below the minimum effect: its neighbours become
  // one segment, and the steps around it are judged again on the merged medians.
  std::vector<Step> steps;
  while (true) {
    steps.clear();
    for (size_t i = 0; i < changes.size(); ++i) {
      const size_t begin = i == 0 ? 0 : changes[i - 1];
      const size_t end = i + 1 == changes.size() ? values.size() : changes[i + 1];
      Step step;
      step.index = changes[i];
      step.before = segment_median(values, begin, changes[i]);
      step.after = segment_median(values, changes[i], end);
      step.change = step.after / step.before - 1;
      steps.push_back(step);
    }
    const auto smallest = std::min_element(steps.begin(), steps.end(), [](const Step& a, const Step& b) {
      return std::abs(a.change) < std::abs(b.change);
    });
    if (smallest == steps.end() || std::abs(smallest->change) >= settings.min_effect) return steps;
    changes.erase(changes.begin() + (smallest - steps.begin()));
  }
}

}  // namespace gptbench::history

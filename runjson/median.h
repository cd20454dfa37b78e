// The median and quantiles of a sample. Header-only: any target includes it by path
// (#include "runjson/median.h") without linking gptbench_runjson.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

namespace gptbench::runjson {

// The q-quantile of `values` (q in [0, 1]): linear interpolation between the two sorted values
// around position q * (n - 1), as numpy's default. NaN for an empty input.
inline double quantile(std::vector<double> values, double q) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const double position = q * static_cast<double>(values.size() - 1);
  const size_t lower = static_cast<size_t>(std::floor(position));
  const size_t upper = std::min(lower + 1, values.size() - 1);
  const double fraction = position - static_cast<double>(lower);
  return values[lower] + (values[upper] - values[lower]) * fraction;
}

// The middle value of `values`, or halfway between the two middle ones for an even count
// (lower + (upper - lower) / 2). NaN for an empty input.
inline double median(std::vector<double> values) { return quantile(std::move(values), 0.5); }

}  // namespace gptbench::runjson

#include "correction.h"

#include <algorithm>
#include <cmath>

namespace gptbench::compare {

const char* to_string(Correction correction) {
  switch (correction) {
    case Correction::kHolm: return "holm";
    case Correction::kNone: return "none";
  }
  return "?";
}

std::optional<Correction> parse_correction(const std::string& text) {
  if (text == "holm") return Correction::kHolm;
  if (text == "none") return Correction::kNone;
  return std::nullopt;
}

double bonferroni_alpha(double alpha, size_t m) {
  return m == 0 ? alpha : alpha / static_cast<double>(m);
}

double holm_cutoff(const std::vector<double>& p_values, double alpha) {
  std::vector<double> sorted;
  sorted.reserve(p_values.size());
  for (double p : p_values) sorted.push_back(std::isnan(p) ? 1.0 : p);
  std::sort(sorted.begin(), sorted.end());
  const size_t m = sorted.size();
  for (size_t k = 0; k < m; ++k) {
    const double level = bonferroni_alpha(alpha, m - k);
    if (!(sorted[k] < level)) return level;
  }
  return alpha;
}

std::vector<bool> holm_significant(const std::vector<double>& p_values, double alpha) {
  // Every p-value below the first failing level ranks before that failure
  // (levels only grow with the rank), so one cut-off decides them all.
  const double cutoff = holm_cutoff(p_values, alpha);
  std::vector<bool> out;
  out.reserve(p_values.size());
  for (double p : p_values) out.push_back(p < cutoff);
  return out;
}

}  // namespace gptbench::compare

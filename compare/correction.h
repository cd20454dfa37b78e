// Multiple-testing control over the U tests of one comparison: with many
// benchmarks, each tested at alpha on its own, some false "regressions" are
// expected by chance alone. Holm-Bonferroni's step-down keeps the chance of
// even one false call across the whole family at most alpha.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace gptbench::compare {

enum class Correction {
  kHolm,  // Holm-Bonferroni step-down over every tested pair (the default)
  kNone,  // each pair at alpha on its own
};

const char* to_string(Correction correction);

// "holm" or "none"; nullopt for anything else.
std::optional<Correction> parse_correction(const std::string& text);

// Bonferroni's per-test level for m tests: alpha / m (alpha when m is 0).
double bonferroni_alpha(double alpha, size_t m);

// The level a p-value of this family must stay below under Holm's step-down:
// alpha / (m - k + 1) at the first rank k (1-based, ascending p) whose p-value
// fails it, or alpha when none fails. A NaN p-value counts as 1.
double holm_cutoff(const std::vector<double>& p_values, double alpha);

// Holm-Bonferroni step-down at family-wise level alpha: element i is true when
// p_values[i] is significant (sorted ascending, the k-th smallest must be
// below alpha / (m - k + 1), and every smaller one must have been).
std::vector<bool> holm_significant(const std::vector<double>& p_values, double alpha);

}  // namespace gptbench::compare

// Descriptive statistics over repetitions (the median: runjson/median.h) and the two-sided Mann-Whitney U
// test, computed the way scipy.stats.mannwhitneyu(x, y, alternative='two-sided')
// does with its default method='auto' (see docs/compare.md, "Statistics").
#pragma once

#include <cstdint>
#include <vector>

namespace gptbench::compare {

double mean(const std::vector<double>& values);
double sample_stddev(const std::vector<double>& values);  // n-1 denominator; 0 for n < 2
double coefficient_of_variation(const std::vector<double>& values);  // stddev / mean
double geometric_mean(const std::vector<double>& ratios);  // of positive finite values; NaN if none

enum class UTestMethod { kExact, kAsymptotic };
const char* to_string(UTestMethod method);

struct UTestResult {
  double u1 = 0;  // U statistic of the first sample (scipy's .statistic)
  double p_value = 1;
  UTestMethod method = UTestMethod::kExact;
  bool ties = false;
};

// Two-sided Mann-Whitney U test. Both samples need at least one value.
// method 'auto': exact distribution of U when there are no ties and
// min(n1, n2) <= 8; otherwise the normal approximation with tie correction and
// continuity correction.
UTestResult mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y);

// Two-sided p-value of the exact U distribution: 2 * P(U >= u), clipped to 1.
double exact_u_p_value(int64_t n1, int64_t n2, int64_t u);

// The smallest p-value the test can reach with these sample sizes (no ties):
// when it exceeds alpha, no difference can ever be significant.
double smallest_p_value(int64_t n1, int64_t n2);

// The critical value of the two-sided test at `level` for n1 and n2 tie-free samples: the
// smallest U (the larger of U1 and n1*n2 - U1) whose p-value, exact or asymptotic as
// mann_whitney_u would choose, is below `level`; -1 when even complete separation
// (U = n1*n2, smallest_p_value) is not below it.
int64_t u_critical_value(int64_t n1, int64_t n2, double level);

// The standard normal quantile: the z with P(Z <= z) = p, for p in (0, 1) (-inf at 0, +inf at 1).
double normal_quantile(double p);

// Student's t distribution with `dof` > 0 degrees of freedom (not necessarily whole, as a
// Welch-Satterthwaite estimate is): P(T <= t), and its quantile for p in (0, 1) (NaN for a dof
// that is not positive).
double student_t_cdf(double t, double dof);
double student_t_quantile(double p, double dof);

}  // namespace gptbench::compare

#include "stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

namespace gptbench::compare {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// scipy switches to the normal approximation when both samples exceed this.
constexpr int64_t kExactMaxSmallerSample = 8;

// Number of arrangements giving each U in [0, n1*n2], as the coefficients of
// the Gaussian binomial [n1+n2 choose n1](q) = prod_{i=1..m} (1-q^(n+i))/(1-q^i),
// m = min(n1, n2). long double keeps the integer counts exact far enough.
std::vector<long double> u_frequencies(int64_t n1, int64_t n2) {
  const int64_t m = std::min(n1, n2);
  const int64_t n = std::max(n1, n2);
  const size_t size = static_cast<size_t>(m * n + 1);
  std::vector<long double> poly(size, 0.0L);
  poly[0] = 1.0L;
  for (int64_t i = 1; i <= m; ++i) {
    const size_t up = static_cast<size_t>(n + i);  // multiply by (1 - q^(n+i))
    for (size_t k = size; k-- > up;) poly[k] -= poly[k - up];
    const size_t down = static_cast<size_t>(i);  // divide by (1 - q^i)
    for (size_t k = down; k < size; ++k) poly[k] += poly[k - down];
  }
  return poly;
}

// Average ranks (1-based) of the concatenation of x and y; returns the rank sum
// of x and the tie term sum(t^3 - t) over groups of tied values.
std::pair<double, double> rank_sum_and_ties(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t total = x.size() + y.size();
  std::vector<std::pair<double, bool>> all;  // value, from x
  all.reserve(total);
  for (double v : x) all.emplace_back(v, true);
  for (double v : y) all.emplace_back(v, false);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  double rank_sum_x = 0;
  double tie_term = 0;
  for (size_t start = 0; start < total;) {
    size_t end = start + 1;
    while (end < total && all[end].first == all[start].first) ++end;
    const double group = static_cast<double>(end - start);
    const double average_rank = (static_cast<double>(start + 1) + static_cast<double>(end)) / 2.0;
    for (size_t k = start; k < end; ++k) {
      if (all[k].second) rank_sum_x += average_rank;
    }
    tie_term += group * group * group - group;
    start = end;
  }
  return {rank_sum_x, tie_term};
}

// The normal approximation's two-sided p-value for a tie-free U (continuity-corrected).
double asymptotic_p_value(int64_t n1, int64_t n2, double u) {
  const double product = static_cast<double>(n1 * n2);
  const double n = static_cast<double>(n1 + n2);
  const double sigma = std::sqrt(product / 12.0 * (n + 1));
  const double z = (u - product / 2 - 0.5) / sigma;
  return std::min(1.0, std::erfc(z / std::sqrt(2.0)));
}

// The exact test's critical value: p(u) = 2 P(U <= n1*n2 - u) grows as u falls, so the
// longest lower tail whose p stays below `level` gives it (the same sums as exact_u_p_value).
int64_t exact_critical_value(int64_t n1, int64_t n2, double level) {
  const std::vector<long double> freq = u_frequencies(n1, n2);
  const int64_t max_u = n1 * n2;
  long double total = 0;
  for (long double f : freq) total += f;
  long double tail = 0;
  int64_t critical = -1;
  for (int64_t low = 0; 2 * low <= max_u; ++low) {
    tail += freq[static_cast<size_t>(low)];
    if (!(std::min(1.0, static_cast<double>(2.0L * tail / total)) < level)) break;
    critical = max_u - low;
  }
  return critical;
}

// The normal approximation's critical value: from the quantile, then stepped so that it agrees
// with asymptotic_p_value to the last integer.
int64_t asymptotic_critical_value(int64_t n1, int64_t n2, double level) {
  const int64_t max_u = n1 * n2;
  if (!(asymptotic_p_value(n1, n2, static_cast<double>(max_u)) < level)) return -1;
  const double product = static_cast<double>(max_u);
  const double sigma = std::sqrt(product / 12.0 * static_cast<double>(n1 + n2 + 1));
  const int64_t lowest = (max_u + 1) / 2;  // U is the larger of U1 and n1*n2 - U1
  const double guess = std::floor(product / 2 + 0.5 + normal_quantile(1 - level / 2) * sigma);
  int64_t u = std::clamp<int64_t>(static_cast<int64_t>(std::min(guess, product)), lowest, max_u);
  while (u > lowest && asymptotic_p_value(n1, n2, static_cast<double>(u - 1)) < level) --u;
  while (!(asymptotic_p_value(n1, n2, static_cast<double>(u)) < level)) ++u;
  return u;
}

}  // namespace

double mean(const std::vector<double>& values) {
  if (values.empty()) return kNaN;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

double sample_stddev(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  const double m = mean(values);
  double sum = 0;
  for (double v : values) sum += (v - m) * (v - m);
  return std::sqrt(sum / static_cast<double>(values.size() - 1));
}

double coefficient_of_variation(const std::vector<double>& values) {
  const double m = mean(values);
  if (!(m > 0)) return values.size() < 2 ? 0 : kNaN;
  return sample_stddev(values) / m;
}

double geometric_mean(const std::vector<double>& ratios) {
  double log_sum = 0;
  size_t count = 0;
  for (double r : ratios) {
    if (r > 0 && std::isfinite(r)) {
      log_sum += std::log(r);
      ++count;
    }
  }
  return count == 0 ? kNaN : std::exp(log_sum / static_cast<double>(count));
}

const char* to_string(UTestMethod method) {
  return method == UTestMethod::kExact ? "exact" : "asymptotic";
}

double exact_u_p_value(int64_t n1, int64_t n2, int64_t u) {
  const std::vector<long double> freq = u_frequencies(n1, n2);
  const int64_t max_u = n1 * n2;
  u = std::clamp<int64_t>(u, 0, max_u);
  // P(U >= u) = P(U <= max_u - u) by symmetry; summing the short side is exact enough.
  const int64_t low = max_u - u;
  long double tail = 0;
  long double total = 0;
  for (int64_t k = 0; k <= max_u; ++k) {
    total += freq[static_cast<size_t>(k)];
    if (k <= low) tail += freq[static_cast<size_t>(k)];
  }
  const double p = static_cast<double>(2.0L * tail / total);
  return std::min(1.0, p);
}

double smallest_p_value(int64_t n1, int64_t n2) {
  if (n1 < 1 || n2 < 1) return 1;
  if (std::min(n1, n2) <= kExactMaxSmallerSample) return exact_u_p_value(n1, n2, n1 * n2);
  return asymptotic_p_value(n1, n2, static_cast<double>(n1 * n2));
}

int64_t u_critical_value(int64_t n1, int64_t n2, double level) {
  if (n1 < 1 || n2 < 1) return -1;
  if (std::min(n1, n2) <= kExactMaxSmallerSample) return exact_critical_value(n1, n2, level);
  return asymptotic_critical_value(n1, n2, level);
}

double normal_quantile(double p) {
  if (!(p > 0) || !(p < 1)) {
    if (p == 0) return -std::numeric_limits<double>::infinity();
    if (p == 1) return std::numeric_limits<double>::infinity();
    return kNaN;
  }
  // Acklam's rational approximation (relative error 1.15e-9), then one Halley step on
  // Phi(x) - p, Phi from erfc, which brings it to double precision.
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                 1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01,  -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                 3.754408661907416e+00};
  constexpr double kTail = 0.02425;
  const auto tail = [&](double q) {
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  };
  double x;
  if (p < kTail) {
    x = tail(std::sqrt(-2 * std::log(p)));
  } else if (p > 1 - kTail) {
    x = -tail(std::sqrt(-2 * std::log1p(-p)));
  } else {
    const double q = p - 0.5;
    const double r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  const double error = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  constexpr double kPi = 3.14159265358979323846;
  const double step = error * std::sqrt(2 * kPi) * std::exp(x * x / 2);
  return x - step / (1 + x * step / 2);
}

namespace {

// The regularized incomplete beta function I_x(a, b), by its continued fraction (modified Lentz
// evaluation), taken directly where it converges fast (x < (a + 1) / (a + b + 2)) and through
// I_x(a, b) = 1 - I_{1-x}(b, a) elsewhere.
double incomplete_beta(double x, double a, double b) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  if (x > (a + 1) / (a + b + 2)) return 1 - incomplete_beta(1 - x, b, a);
  constexpr double kTiny = 1e-300;
  constexpr double kEpsilon = 1e-15;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) +
                                b * std::log1p(-x)) / a;
  double c = 1;
  double d = 1 - (a + b) * x / (a + 1);
  d = 1 / (std::fabs(d) < kTiny ? kTiny : d);
  double f = d;
  for (int m = 1; m <= 500; ++m) {
    for (int half = 0; half < 2; ++half) {
      // The even term m(b - m)x / ((a + 2m - 1)(a + 2m)), then the odd one.
      const double numerator = half == 0 ? m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
                                         : -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
      d = 1 + numerator * d;
      d = 1 / (std::fabs(d) < kTiny ? kTiny : d);
      c = 1 + numerator / c;
      if (std::fabs(c) < kTiny) c = kTiny;
      const double step = c * d;
      f *= step;
      if (half == 1 && std::fabs(step - 1) < kEpsilon) return front * f;
    }
  }
  return front * f;
}

}  // namespace

double student_t_cdf(double t, double dof) {
  if (!(dof > 0) || std::isnan(t)) return kNaN;
  if (std::isinf(t)) return t > 0 ? 1 : 0;
  const double tail = 0.5 * incomplete_beta(dof / (dof + t * t), dof / 2, 0.5);  // P(T > |t|)
  return t >= 0 ? 1 - tail : tail;
}

double student_t_quantile(double p, double dof) {
  if (!(dof > 0) || !(p > 0) || !(p < 1)) {
    if (dof > 0 && p == 0) return -std::numeric_limits<double>::infinity();
    if (dof > 0 && p == 1) return std::numeric_limits<double>::infinity();
    return kNaN;
  }
  if (p < 0.5) return -student_t_quantile(1 - p, dof);
  double lo = 0;
  double hi = std::max(1.0, normal_quantile(p));
  while (student_t_cdf(hi, dof) < p && hi < 1e300) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (student_t_cdf(mid, dof) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

UTestResult mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y) {
  UTestResult result;
  const auto n1 = static_cast<int64_t>(x.size());
  const auto n2 = static_cast<int64_t>(y.size());
  if (n1 == 0 || n2 == 0) {
    result.p_value = kNaN;
    return result;
  }
  const auto [rank_sum_x, tie_term] = rank_sum_and_ties(x, y);
  const double d1 = static_cast<double>(n1);
  const double d2 = static_cast<double>(n2);
  result.u1 = rank_sum_x - d1 * (d1 + 1) / 2;
  const double u2 = d1 * d2 - result.u1;
  const double u = std::max(result.u1, u2);
  result.ties = tie_term > 0;

  if (std::min(n1, n2) <= kExactMaxSmallerSample && !result.ties) {
    result.method = UTestMethod::kExact;
    result.p_value = exact_u_p_value(n1, n2, static_cast<int64_t>(std::llround(u)));
    return result;
  }
  result.method = UTestMethod::kAsymptotic;
  const double n = d1 + d2;
  const double sigma = std::sqrt(d1 * d2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1))));
  const double numerator = u - d1 * d2 / 2 - 0.5;  // continuity correction
  if (sigma == 0) {
    result.p_value = 1;  // every value tied: no evidence of a difference
    return result;
  }
  const double z = numerator / sigma;
  // Two-sided: 2 * P(Z >= z) = erfc(z / sqrt(2)).
  result.p_value = std::min(1.0, std::erfc(z / std::sqrt(2.0)));
  return result;
}

}  // namespace gptbench::compare
